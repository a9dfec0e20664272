"""Helpers for the session-level skill tests: skill folders on disk and views of requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.request import SystemMessage

from ..conftest import MakeRuntime
from .conftest import skill_md, write_skill

Make = MakeRuntime

#: Anthropic Messages with native tool changes (tool_addition / tool_removal blocks).
NATIVE = ags.ModelProfile(
    provider="anthropic",
    wire_format="anthropic-messages",
    system_placement="after_user",
    native_tool_changes=True,
    writes_titles=False,
)

#: OpenAI Responses: no native tool changes, so a tool change starts a new epoch.
RESPONSES = ags.ModelProfile(provider="openai", wire_format="openai-responses", writes_titles=False)


def make_skills(root: Path, *names: str) -> Path:
    """``root/<name>/SKILL.md`` for each name, with two lines of instructions each."""
    for name in names:
        body = f"Follow the {name} procedure.\nAlways cite the {name} handbook."
        write_skill(root, name, skill_md(name, f"The {name} skill. Use it for {name} work.", body))
    return root


def load(name: str) -> list[ags.ToolCall]:
    """A reply that calls ``load_skill`` for ``name``."""
    return [ags.ToolCall("load_skill", {"name": name})]


def call(tool: str, /, **arguments: Any) -> list[ags.ToolCall]:
    """A reply that calls ``tool``."""
    return [ags.ToolCall(tool, arguments)]


def system_keys(request: ags.Request) -> list[str]:
    return [key for key, _ in request.system]


def system_text(request: ags.Request, key: str) -> str | None:
    return dict(request.system).get(key)


def tool_names(request: ags.Request) -> list[str]:
    return [t.name for t in request.tools]


def updates(request: ags.Request) -> list[SystemMessage]:
    """The request's mid-conversation system messages, in order."""
    return [m for m in request.messages if isinstance(m, SystemMessage)]


def last_update(request: ags.Request) -> SystemMessage:
    found = updates(request)
    assert found, "the request carries no update message"
    return found[-1]


def tool_results(request: ags.Request) -> list[ags.ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ags.ToolResultMessage)]


def user_texts(request: ags.Request) -> list[str | tuple[Any, ...]]:
    return [m.content for m in request.messages if isinstance(m, ags.UserMessage)]


def tool_skill(name: str, *, allowed: tuple[str, ...] | None = None) -> ags.Skill:
    """A Python skill ``name`` with one tool ``<name>_tool`` (echoes its text argument)."""

    def run(text: str = "") -> str:
        return f"{name} ran {text}".strip()

    echo = ags.tool(name=f"{name}_tool", description=f"The {name} skill's tool.")(run)
    return ags.Skill(
        name=name,
        description=f"The {name} skill. Use it for {name} work.",
        instructions=f"Use {name}_tool for {name} work.\nReport what it returned.",
        tools=[echo],
        allowed_tools=allowed,
    )
