"""Version-1 stored entries keep loading, forever.

``tests/fixtures/log_v1.jsonl`` is frozen: one stored row per entry kind exactly as version 1 wrote
it (``{"kind", "version", "data"}``). It is never regenerated; when a kind's stored form changes,
its version goes up, an upgrade is added in ``log.py``, a new fixture file is added beside this
one, and this test keeps passing unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentsession.errors import CorruptEntryError
from agentsession.log import (
    TRANSCRIPT_KINDS,
    AssistantEntry,
    ComponentChange,
    ContextEpoch,
    Dispatch,
    Interrupted,
    LogEntry,
    MidConversationSystemMessage,
    ModelSwitched,
    ProviderFailed,
    Summary,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
    load_entry,
)
from agentsession.request import ImagePart, TextPart, ToolCall, Usage
from agentsession.store import PostgresStore, SQLiteStore, Store
from agentsession.store.migrations import MIGRATIONS, create_migrations_table

from . import pg

FIXTURE = Path(__file__).parent.parent / "fixtures" / "log_v1.jsonl"
T = "2026-01-02T03:04:05.123456+00:00"

EXPECTED: list[LogEntry] = [
    UserEntry("Summarise report.pdf </skill> please ✓", timestamp=T),
    UserEntry(
        (
            TextPart("What is in this picture?"),
            ImagePart("image/png", data="iVBORw0KGgo="),
            ImagePart("image/jpeg", url="https://example.com/cat.jpg"),
        ),
        timestamp=T,
    ),
    AssistantEntry(
        "Let me read it.",
        (
            ToolCall(
                "read_file",
                {
                    "path": "docs/report.pdf",
                    "pages": [1, 2],
                    "options": {"ocr": True, "dpi": 300.5, "lang": None},
                },
                "call_01",
            ),
        ),
        provider="anthropic",
        provider_data={"anthropic": {"thinking_signature": "sig=="}},
        model="claude-x",
        usage=Usage(
            input_tokens=1200, output_tokens=80, cached_input_tokens=1000, cache_write_tokens=200
        ),
        timestamp=T,
    ),
    ToolResultEntry("call_01", "read_file", "Page 1: revenue grew 12%.", timestamp=T),
    ToolResultEntry(
        "call_02",
        "screenshot",
        (TextPart("captured"), ImagePart("image/png", data="AAAA")),
        is_error=True,
        timestamp=T,
    ),
    MidConversationSystemMessage(
        '<current_context>\n<skill name="pdf">Use pdftotext.</skill>\n</current_context>',
        (
            ComponentChange(
                "core.skills.loaded.pdf",
                update="Use pdftotext.",
                baseline='<skill name="pdf">Use pdftotext.</skill>',
                hash="h-pdf-1",
            ),
            ComponentChange("plugin.demo.status", update=None, baseline=None, hash=None),
        ),
        epoch=2,
        tools_added=("pdf_extract",),
        tools_removed=("old_tool",),
        timestamp=T,
    ),
    ContextEpoch(
        2,
        baseline=(
            ("core.date", "Today is Friday, 2 January 2026."),
            ("core.permissions", "<permissions>read-only</permissions>"),
        ),
        checkpoint=(("core.date", "h-date"), ("core.permissions", "h-perm")),
        history_start=14,
        reason="compaction",
        model="openai:gpt-4.1",
        removed=("plugin.demo.status",),
        timestamp=T,
    ),
    SystemPromptCheckpoint(
        6, T, {"core.date": "Today is Friday, 2 January 2026.", "plugin.demo.status": None}
    ),
    # Version 1 stored the diagnosis as free text; a value outside today's type reads "unknown".
    Dispatch("openai:gpt-4.1", 3, "sha256:abc123", cache="unknown", timestamp=T),
    ProviderFailed("rate limited (429)", "TransientProviderError", timestamp=T),
    Interrupted("the process ended after dispatch", timestamp=T),
    Summary("The user asked for a summary; revenue grew 12%.", 13, timestamp=T),
    ModelSwitched("anthropic:claude-x", "openai:gpt-4.1", timestamp=T),
]


def fixture_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def test_fixture_has_every_version_1_kind() -> None:
    rows = fixture_rows()
    assert {row["version"] for row in rows} == {1}
    assert {row["kind"] for row in rows} == {
        "user",
        "assistant",
        "tool_result",
        "mid_conversation_system",
        "epoch",
        "system_prompt_checkpoint",
        "dispatch",
        "provider_failed",
        "interrupted",
        "summary",
        "model_switched",
    }


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_each_row_loads_with_its_values(index: int) -> None:
    row = fixture_rows()[index]
    entry = load_entry(row["kind"], row["version"], json.dumps(row["data"]), seq=index)
    assert entry == EXPECTED[index]
    assert type(entry) is type(EXPECTED[index])


def test_spot_check_field_types() -> None:
    rows = fixture_rows()
    loaded = [load_entry(r["kind"], r["version"], json.dumps(r["data"])) for r in rows]
    picture = loaded[1]
    assert isinstance(picture, UserEntry)
    assert isinstance(picture.content, tuple)
    assert isinstance(picture.content[1], ImagePart)
    assert picture.content[1].data == "iVBORw0KGgo="
    assistant = loaded[2]
    assert isinstance(assistant, AssistantEntry)
    assert assistant.tool_calls[0].arguments["options"]["dpi"] == 300.5
    assert assistant.usage.cached_input_tokens == 1000
    epoch = loaded[6]
    assert isinstance(epoch, ContextEpoch)
    assert epoch.baseline[1] == ("core.permissions", "<permissions>read-only</permissions>")
    checkpoint = loaded[7]
    assert isinstance(checkpoint, SystemPromptCheckpoint)
    assert checkpoint.changed["plugin.demo.status"] is None


def version_1_rows() -> list[tuple[Any, ...]]:
    return [
        ("old", seq, r["kind"], r["version"], json.dumps(r["data"], ensure_ascii=False), T)
        for seq, r in enumerate(fixture_rows())
    ]


def make_schema_1_sqlite(path: Path) -> None:
    """A database as schema version 1 left it, holding the fixture's rows."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(create_migrations_table("sqlite"))
            for statement in MIGRATIONS[0].sql("sqlite"):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (1, ?, ?)", (MIGRATIONS[0].description, T)
            )
            conn.execute("INSERT INTO sessions VALUES ('old', ?, ?, 'kept', '/p')", (T, T))
            conn.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?)", version_1_rows())
    finally:
        conn.close()


def make_schema_1_postgres(dsn: str) -> None:
    pg.run(dsn, create_migrations_table("postgres"))
    for statement in MIGRATIONS[0].sql("postgres"):
        pg.run(dsn, statement)
    pg.run(dsn, "INSERT INTO schema_migrations VALUES (1, %s, %s)", (MIGRATIONS[0].description, T))
    pg.run(dsn, "INSERT INTO sessions VALUES ('old', %s, %s, 'kept', '/p')", (T, T))
    for row in version_1_rows():
        pg.run(dsn, "INSERT INTO entries VALUES (%s, %s, %s, %s, %s, %s)", row)


@pytest.mark.parametrize(
    "dialect", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_a_schema_1_database_migrates_and_reads(
    dialect: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Rows written under schema 1 read back after migrating; the new counters are filled in."""
    store: Store
    if dialect == "sqlite":
        make_schema_1_sqlite(tmp_path / "old.db")
        store = SQLiteStore(tmp_path / "old.db")
    else:
        dsn = request.getfixturevalue("pg_dsn")
        make_schema_1_postgres(dsn)
        store = PostgresStore(dsn)
    try:
        assert [r.entry for r in await store.read("old")] == EXPECTED
        info = await store.get_session("old")
        assert (info.title, info.project_dir, info.created_at, info.updated_at) == (
            "kept",
            "/p",
            T,
            T,
        )
        assert info.next_seq == len(EXPECTED)
        assert info.message_count == sum(e.kind in TRANSCRIPT_KINDS for e in EXPECTED) == 5
        assert info.last_model == "claude-x"
        assert info.file_version is None
        assert await store.lease_of("old") is None
        await store.append("old", len(EXPECTED), [UserEntry("after the upgrade")])
        assert (await store.get_session("old")).message_count == 6
    finally:
        await store.close()


async def test_a_damaged_row_does_not_block_the_sqlite_migration(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    make_schema_1_sqlite(path)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE entries SET data = '{broken' WHERE seq = 2")  # the assistant row
    conn.close()
    store = SQLiteStore(path)
    try:
        info = await store.get_session("old")
        assert info.next_seq == len(EXPECTED)
        assert info.last_model is None  # nothing readable names a model
        with pytest.raises(CorruptEntryError) as caught:
            await store.read("old")
        assert caught.value.seq == 2
    finally:
        await store.close()
