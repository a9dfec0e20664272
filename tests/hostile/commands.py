"""Running ``run_command`` through a real session for the sandbox tests: approve, resume, read.

``needs_bwrap`` skips a test loudly where bubblewrap cannot make a user namespace without
capabilities here (CI installs it and runs as root, so there it runs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.tools.sandbox import probe

from ..scenario import tool_results

Make = Callable[..., ags.Runtime]

needs_bwrap = pytest.mark.skipif(
    not probe().works,
    reason=f"!!! RUN_COMMAND'S SANDBOX WAS NOT TESTED !!! {probe().problem}"
    " (make system-deps installs bubblewrap)",
)


@dataclass(frozen=True)
class Ran:
    """What one approved command printed, and the approval questions asked on the way."""

    text: str
    questions: tuple[str, ...]


async def run_approved(
    make_runtime: Make,
    project: Path,
    command: str,
    preset: str = "workspace-write",
    sandbox: str = "auto",
    *,
    arguments: Mapping[str, Any] | None = None,
    presets: Mapping[str, Any] | None = None,
) -> Ran:
    """Run ``command`` through a session under ``preset``, approving every question."""
    call = ags.ToolCall("run_command", {"command": command, **(arguments or {})})
    model = ags.ScriptedModel([[call], "done"])
    runtime = make_runtime(
        model=model,
        project_dir=project,
        tools=ags.builtin_tools(),
        config=ags.Config(
            retry_base_delay=0,
            permission_preset=preset,
            sandbox=sandbox,
            permission_presets=dict(presets or {}),
        ),
    )
    session = await runtime.create_session()
    result = await session.prompt("run it")
    questions: list[str] = []
    while result.stop_reason == "approval_required":
        (request,) = result.approvals
        questions.append(request.reason)
        await session.approve(request.call_id)
        result = await session.retry()
    assert result.text == "done"
    (answer,) = tool_results(model.requests[-1])
    return Ran(str(answer.content), tuple(questions))
