"""A server that fails in the middle of a call is noticed while the call runs, and named truly.

The lab server stops itself (alive, silent: ``SIGSTOP``) or ends its process in the middle of
a call. Neither leaves the call waiting out the tool timeout, and the result says what
happened, not that the server "was told to cancel it". The timeout here is far longer than any
wait the test could need, so the outcome does not depend on how busy the machine is.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

import agentsession as ags

from .conftest import Lab

TOOL_TIMEOUT = 600.0


def last_result(model: ags.ScriptedModel) -> ags.ToolResultMessage:
    found = [m for m in model.requests[-1].messages if isinstance(m, ags.ToolResultMessage)]
    return found[-1]


async def test_a_server_that_stops_answering_during_a_call_is_noticed(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    model = ags.ScriptedModel([[ags.ToolCall("mcp__lab__freeze", {})], "noticed"])
    config = ags.Config(retry_base_delay=0, tool_timeout=TOOL_TIMEOUT, titles=False)
    runtime = make_runtime(model=model, mcp_servers=[lab.server], config=config)
    session = await runtime.create_session()
    try:
        assert (await session.prompt("freeze")).text == "noticed"
    finally:
        if "frozen" in lab.lines():
            with_pid = lab.pid()
            for sig in (signal.SIGKILL, signal.SIGCONT):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(with_pid, sig)
    answer = last_result(model)
    assert answer.is_error
    assert "stopped answering" in answer.content and "may or may not" in answer.content
    assert "told to cancel" not in answer.content


async def test_a_connection_that_closes_fails_the_call_at_once(
    make_runtime: Callable[..., ags.Runtime], lab: Lab
) -> None:
    model = ags.ScriptedModel([[ags.ToolCall("mcp__lab__vanish", {})], "noticed"])
    config = ags.Config(retry_base_delay=0, tool_timeout=TOOL_TIMEOUT, titles=False)
    runtime = make_runtime(model=model, mcp_servers=[lab.server], config=config)
    session = await runtime.create_session()
    assert (await session.prompt("vanish")).text == "noticed"
    answer = last_result(model)
    assert answer.is_error and "went away during mcp__lab__vanish" in answer.content
    assert "told to cancel" not in answer.content
