"""Lowering to the Anthropic Messages format (``anthropic-messages``).

The baseline becomes one top-level ``system`` text block per component key. Consecutive user
input and tool results merge into one user turn (tool results first, as the API demands). A
mid-conversation system message is a native ``role: "system"`` entry where the profile and the
position allow it (after a user turn, before an assistant turn or at the end) and otherwise an
escaped text block in the user turn at the same position. With ``native_tool_changes`` the
message also carries ``tool_addition`` / ``tool_removal`` blocks; a tool first added mid-epoch
is defined inline there, so the top-level ``tools`` list stays byte-stable. With
``native_tool_search`` a ``search_tools`` result ends with a ``tool_reference`` block per tool
that search loaded (Anthropic's custom tool search), each declared at the end of ``tools`` with
``defer_loading: true`` (not part of the cached prefix) and not added again by a block. Cache
breakpoints sit on the last tool that is not deferred, the last baseline block and the newest
user turn: content that the next request repeats unchanged.

A provider's compaction block (an assistant message whose replay data is the block alone) is
followed, when the server compacted in the middle of a reply (the threshold mode), by the rest
of that reply: the two go out as the one assistant message the server wrote, the block first.
"""

from __future__ import annotations

from typing import Any, assert_never

from ..request import (
    AssistantMessage,
    ContentPart,
    ImagePart,
    Request,
    SystemMessage,
    TextPart,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
    introduced_in_place,
)
from ._lowering import (
    SEARCH_TOOL_NAME,
    Lowered,
    SearchLoads,
    native_system_ok,
    provider_items,
    reject,
    require_image_support,
    text_parts,
    wrap_system,
)
from .base import ModelProfile

__all__ = [
    "COMPACT_EDIT",
    "FMT",
    "THRESHOLD_BETA",
    "THRESHOLD_MINIMUM",
    "TOOL_CHANGES_BETA",
    "lower_anthropic",
    "threshold_edit",
]

FMT = "anthropic-messages"
TOOL_CHANGES_BETA = "inline-tools-2026-09-15"
THRESHOLD_BETA = "compact-2026-01-12"
"""The beta that names the ``compact_20260112`` context-management edit (threshold mode)."""
COMPACT_EDIT = "compact_20260112"
THRESHOLD_MINIMUM = 50_000
"""The smallest trigger the API accepts (input tokens)."""


def threshold_edit(trigger: int) -> dict[str, Any]:
    """The ``context_management`` of a request the server compacts past ``trigger`` tokens.

    The shape of the SDK's ``BetaContextManagementConfigParam`` holding one
    ``BetaCompact20260112EditParam`` with a ``BetaInputTokensTriggerParam``; the trigger is
    raised to the API's minimum.
    """
    value = max(THRESHOLD_MINIMUM, trigger)
    edit = {"type": COMPACT_EDIT, "trigger": {"type": "input_tokens", "value": value}}
    return {"edits": [edit]}


def _compaction_only(content: list[dict[str, Any]]) -> bool:
    return len(content) == 1 and content[0].get("type") == "compaction"


_CACHE = {"type": "ephemeral"}


def _part(part: ContentPart, profile: ModelProfile, position: int) -> dict[str, Any]:
    match part:
        case TextPart():
            return {"type": "text", "text": part.text}
        case ImagePart():
            require_image_support(FMT, profile, part, position)
            if part.data is not None:
                source: dict[str, Any] = {
                    "type": "base64",
                    "media_type": part.media_type,
                    "data": part.data,
                }
            else:
                source = {"type": "url", "url": part.url}
            return {"type": "image", "source": source}
        case _:
            assert_never(part)


def _tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


class _Builder:
    """Accumulates wire messages, merging consecutive user-side content into one turn.

    Tool-change blocks that meet a position where no native system entry may stand wait in
    ``pending_changes`` and move forward to the next position that allows one.
    """

    def __init__(self, request: Request, profile: ModelProfile) -> None:
        self.request = request
        self.profile = profile
        self.messages: list[dict[str, Any]] = []
        self.origins: list[int] = []
        self.inline = introduced_in_place(request) if profile.native_tool_changes else set()
        self.specs = {spec.name: spec for spec in request.tools}
        self.defined: set[str] = set()
        self.pending_changes: list[dict[str, Any]] = []
        self.uses_tool_changes = False
        # With tool search, a search's result references the tools it loaded (defined in the
        # top-level list with ``defer_loading``), and its update message does not add them again.
        self.loads = SearchLoads.of(request) if profile.native_tool_search else SearchLoads()
        self.skip = {at: set(self.loads.by_result[r]) for at, r in self.loads.announced.items()}

    def user_turn(self, origin: int) -> list[dict[str, Any]]:
        if self.messages and self.messages[-1]["role"] == "user":
            content: list[dict[str, Any]] = self.messages[-1]["content"]
            return content
        self.messages.append({"role": "user", "content": []})
        self.origins.append(origin)
        fresh: list[dict[str, Any]] = self.messages[-1]["content"]
        return fresh

    def add(self, message: dict[str, Any], origin: int) -> None:
        self.messages.append(message)
        self.origins.append(origin)

    def user(self, message: UserMessage, i: int) -> None:
        parts = [_part(p, self.profile, i) for p in text_parts(message.content)]
        if not parts:
            reject(FMT, "a user message needs content", i)
        self.user_turn(i).extend(parts)

    def tool_result(self, message: ToolResultMessage, i: int) -> None:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.call_id}
        result_parts = text_parts(message.content)
        if result_parts:
            block["content"] = [_part(p, self.profile, i) for p in result_parts]
        if message.is_error:
            block["is_error"] = True
        if message.name == SEARCH_TOOL_NAME and self.loads.by_result.get(i):
            references = [
                {"type": "tool_reference", "tool_name": name} for name in self.loads.by_result[i]
            ]
            block["content"] = [*block.get("content", []), *references]
        self.user_turn(i).append(block)

    def assistant(self, message: AssistantMessage, i: int) -> None:
        self.flush_changes(i)
        replay = provider_items(message, FMT)
        if replay is not None and isinstance(replay.get("content"), list):
            content: list[dict[str, Any]] = list(replay["content"])
        else:
            content = [{"type": "text", "text": message.content}] if message.content else []
            content += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in message.tool_calls
            ]
        if not content:  # an empty reply carries nothing; the API rejects empty turns
            return
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and _compaction_only(last["content"]):
            last["content"].extend(content)  # the reply the server compacted in the middle of
            return
        self.add({"role": "assistant", "content": content}, i)

    def system(self, message: SystemMessage, i: int) -> None:
        changes = self.tool_blocks(message, i) if self.profile.native_tool_changes else []
        self.uses_tool_changes = self.uses_tool_changes or bool(changes)
        if native_system_ok(self.request.messages, i, self.profile):
            blocks = [{"type": "text", "text": message.content}] if message.content else []
            blocks = self.pending_changes + blocks + changes
            self.pending_changes = []
            if blocks:
                self.add({"role": "system", "content": blocks}, i)
            return
        if message.content:
            self.user_turn(i).append({"type": "text", "text": wrap_system(message.content)})
        # Tool changes exist only as native blocks: they move forward to the next spot where a
        # system message may stand (before the next assistant turn).
        self.pending_changes.extend(changes)

    def tool_blocks(self, message: SystemMessage, position: int) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        referenced = self.skip.get(position, set())
        for name in message.tools_added:
            if name in referenced:
                continue  # the search's result referenced it
            if name in self.inline and name not in self.defined:
                if name not in self.specs:
                    reject(FMT, f"tools_added names {name!r}, which request.tools lacks", position)
                self.defined.add(name)
                definition = _tool(self.specs[name])
                tool: dict[str, Any] = {"type": "tool_definition", "definition": definition}
            else:
                tool = {"type": "tool_reference", "name": name}
            blocks.append({"type": "tool_addition", "tool": tool})
        for name in message.tools_removed:
            blocks.append(
                {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}
            )
        return blocks

    def flush_changes(self, position: int) -> None:
        if self.pending_changes and self.messages and self.messages[-1]["role"] == "user":
            self.add({"role": "system", "content": list(self.pending_changes)}, position)
            self.pending_changes = []


def _mark_cache(
    tools: list[dict[str, Any]], system: list[dict[str, Any]], messages: list[dict[str, Any]]
) -> None:
    """Breakpoints on the last tool, the last baseline block and the newest user turn."""
    if tools:
        tools[-1]["cache_control"] = dict(_CACHE)
    if system:
        system[-1]["cache_control"] = dict(_CACHE)
    for wire in reversed(messages):
        if wire["role"] == "user":
            wire["content"][-1]["cache_control"] = dict(_CACHE)
            break


def lower_anthropic(request: Request, profile: ModelProfile, model: str | None) -> Lowered:
    """Lower ``request`` to a Messages API body (the keyword arguments of ``messages.create``)."""
    out = _Builder(request, profile)
    messages = request.messages
    for i, message in enumerate(messages):
        match message:
            case UserMessage():
                out.user(message, i)
            case ToolResultMessage():
                out.tool_result(message, i)
            case AssistantMessage():
                out.assistant(message, i)
            case SystemMessage():
                out.system(message, i)
            case _:
                assert_never(message)
    out.flush_changes(len(messages))
    if out.pending_changes:
        reject(FMT, "tool changes have no position where a system message may stand", None)

    tools = [_tool(spec) for spec in request.tools if spec.name not in out.inline]
    system: list[dict[str, Any]] = [{"type": "text", "text": t} for _, t in request.system if t]
    if profile.cache_markers:
        _mark_cache(tools, system, out.messages)
    searched = out.loads.searched()
    tools += [  # after the breakpoint: deferred tools are not part of the cached prefix
        _tool(spec) | {"defer_loading": True} for spec in request.tools if spec.name in searched
    ]

    body: dict[str, Any] = {}
    if model is not None:
        body["model"] = model
    body["max_tokens"] = profile.max_output_tokens
    if system:
        body["system"] = system
    body["messages"] = out.messages
    if tools:
        body["tools"] = tools
    if out.uses_tool_changes:
        body["betas"] = [TOOL_CHANGES_BETA]
    return Lowered(body, out.origins)
