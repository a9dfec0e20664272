"""Our own format through ``ags.import_session``: export → import → export is byte-identical;
a long session's Markdown export reads as its transcript, turn by turn."""

from __future__ import annotations

from pathlib import Path

import agentsession as ags
from agentsession.log import AssistantEntry, LogEntry, ToolResultEntry, UserEntry
from agentsession.portability.readable import render_markdown
from agentsession.store.base import SessionInfo


async def test_export_import_export_is_byte_identical(tmp_path: Path) -> None:
    replies: list[str | list[ags.ToolCall]] = [[ags.ToolCall("shout", {"text": "hi"})], "done"]

    @ags.tool
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    first = tmp_path / "first.jsonl"
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "a.db"),
        model=ags.ScriptedModel(replies),
        project_dir=tmp_path,
        tools=[shout],
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("say hi")
        await session.export(first)
    target = ags.SQLiteStore(tmp_path / "b.db")
    report = await ags.import_session(target, first)
    assert (report.format, report.session_id) == ("agentsession", session.id)
    assert (report.messages, report.tool_calls, report.tool_results) == (3, 1, 1)
    async with ags.Runtime(store=target, project_dir=tmp_path) as runtime:
        again = tmp_path / "again.jsonl"
        await (await runtime.open_session(report.session_id)).export(again)
    assert again.read_bytes() == first.read_bytes()


def test_markdown_of_a_thousand_turns_reads_in_order() -> None:
    entries: list[LogEntry] = []
    for turn in range(1000):
        call = ags.ToolCall("count", {"n": turn}, id=f"c{turn}")
        entries += [
            UserEntry(f"question {turn}"),
            AssistantEntry("", (call,)),
            ToolResultEntry(call.id, "count", f"result {turn}"),
            AssistantEntry(f"answer {turn}"),
        ]
    info = SessionInfo("s", "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00", "Long")
    text = render_markdown(info, entries)
    assert text.startswith("# Long\n")
    questions = [line for line in text.splitlines() if line.startswith("question ")]
    assert questions == [f"question {turn}" for turn in range(1000)]
    assert text.count("### User") == 1000 and text.count("Tool call `count`:") == 1000
    assert text.index("answer 998") < text.index("question 999") < text.index("answer 999")
