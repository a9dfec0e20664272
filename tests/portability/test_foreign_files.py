"""Every real foreign session file imports, its counts match the source, and it continues.

The expected counts are read off each source file (its ``SOURCES.md`` entry describes it):
messages are the user prompts and the model's replies on the live branch (a reply written as
several lines, or as several items of one response, is one); tool calls and results are the
source's own, linked by its ids. The raw counts of call and result records in the file are
checked too, for the files without abandoned branches. Each import then continues one turn:
the next request lowers and validates in all four wire formats.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.providers.validate import validate

WIRE_FORMATS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")

# path: (format, messages, tool calls, tool results, summaries, linear)
EXPECTED: dict[str, tuple[str, int, int, int, int, bool]] = {
    # 4 typed user lines, 5 responses (by message.id) over 12 lines, 3 tool_use / 3 tool_result
    "claude-code/codemie-real-v2.1.4-tools-thinking-summaries.jsonl": (
        "claude-code",
        9,
        3,
        3,
        0,
        True,
    ),
    "claude-code/codemie-real-v2.0.64-warmup-sidechain-agent.jsonl": (
        "claude-code",
        2,
        0,
        0,
        0,
        True,
    ),
    # the abandoned "First attempt" pair is off the live branch; one compaction summary
    "claude-code/claude-code-log-synthetic-compact-after-rewind.jsonl": (
        "claude-code",
        8,
        0,
        0,
        1,
        False,
    ),
    # 4 user items, 6 replies (reasoning + message + call of one response are one), 2 calls
    "codex/agent-history-synthetic-compaction.jsonl": ("codex", 10, 2, 2, 1, True),
    "codex/claude-code-log-synthetic-legacy-format.jsonl": ("codex", 2, 0, 0, 0, True),
    # 1 prompt; 4 replies: 3 calls (function, custom, MCP) each its own step, then the answer
    "codex/claude-code-log-synthetic-tool-variants.jsonl": ("codex", 5, 3, 3, 0, True),
    # 1 typed prompt (the others are injected context), 6 replies, 5 MCP calls
    "codex/localpush-real-desktop-0.104-mcp-calls.jsonl": ("codex", 7, 5, 5, 0, True),
    "pi/agent-history-real-v3-redacted.jsonl": ("pi", 2, 0, 0, 0, True),
    # the live branch is e1 -> e2 -> e7 (-> e8): a prompt and an unanswered call
    "pi/pi-session-inspector-synthetic-branching-compaction.jsonl": ("pi", 2, 1, 0, 0, False),
    # no prompt; the failed reply is a note, not a message
    "pi/pi-session-inspector-synthetic-tool-error.jsonl": ("pi", 1, 1, 1, 0, True),
    # a prompt; the tool step, then the text after it
    "opencode/agent-sessions-small/storage": ("opencode", 3, 1, 1, 0, True),
    "opencode/codemie-synthetic/storage": ("opencode", 3, 2, 2, 0, True),
}

_CALLS = {"tool_use", "function_call", "custom_tool_call", "toolCall"}
_RESULTS = {"tool_result", "function_call_output", "custom_tool_call_output"}


def _walk(value: Any, found: dict[str, int]) -> None:
    if isinstance(value, dict):
        kind = value.get("type")
        if kind in _CALLS:
            found["calls"] += 1
        elif kind in _RESULTS or value.get("role") == "toolResult":
            found["results"] += 1
        elif kind == "tool" and isinstance(value.get("state"), dict):
            found["calls"] += 1
            found["results"] += value["state"].get("status") in ("completed", "error")
        for inner in value.values():
            _walk(inner, found)
    elif isinstance(value, list):
        for inner in value:
            _walk(inner, found)


def raw_counts(path: Path) -> dict[str, int]:
    """Call and result records in the source, counted without the importer's code."""
    found = {"calls": 0, "results": 0}
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                _walk(json.loads(line) if file.suffix == ".jsonl" else None, found)
        if file.suffix == ".json":
            _walk(json.loads(file.read_text(encoding="utf-8")), found)
    return found


def test_every_foreign_file_is_covered(foreign: Path) -> None:
    present = {str(p.relative_to(foreign)) for p in foreign.glob("*/*.jsonl")}
    present |= {str(p.relative_to(foreign)) for p in foreign.glob("opencode/*/storage")}
    assert present == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_import_counts_and_continue_on_every_wire_format(
    foreign: Path, tmp_path: Path, name: str
) -> None:
    fmt, messages, calls, results, summaries, linear = EXPECTED[name]
    path = foreign / name
    store = ags.SQLiteStore(tmp_path / "s.db")
    report = await ags.import_session(store, path)
    assert (report.format, report.messages, report.tool_calls, report.tool_results) == (
        fmt,
        messages,
        calls,
        results,
    )
    assert report.summaries == summaries
    if linear:
        raw = raw_counts(path)
        assert (report.tool_calls, report.tool_results) == (raw["calls"], raw["results"])
    async with ags.Runtime(
        store=store, model=ags.ScriptedModel(["continued"]), project_dir=tmp_path
    ) as runtime:
        session = await runtime.open_session(report.session_id)
        stored = list(session.messages)
        kinds = [m.role for m in stored]
        # every mapped message and result is in the transcript (notes are user text)
        assert kinds.count("tool") >= results
        assert len(kinds) >= messages + results
        request = await session.preview_request("please continue")
        for wire in WIRE_FORMATS:
            body = ags.lower(request, wire)
            validate(body, wire)
        result = await session.prompt("please continue")
        assert result.text == "continued"
        assert len(session.messages) == len(stored) + 2
