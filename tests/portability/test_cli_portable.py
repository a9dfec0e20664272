"""``import`` of other tools' sessions, ``--latest``, ``-c``, and the readable exports (CLI)."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.log import AssistantEntry, ToolResultEntry, UserEntry

from ..cli_helpers import Outcome
from ..cli_inprocess import cli_here


def on(tmp_path: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> Outcome:
    result = cli_here(tmp_path, "--db", str(tmp_path / "s.db"), *args, stdin=stdin, env=env)
    assert "Traceback" not in result.err, result.err
    return result


def printed_id(result: Outcome) -> str:
    """The new id: alone on standard output."""
    assert result.code == 0, result.err
    (line,) = result.out.splitlines()
    return line.strip()


def pi_file(path: Path, cwd: str = "/somewhere") -> Path:
    records: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "pi-1", "cwd": cwd},
        {
            "type": "message",
            "id": "a",
            "parentId": None,
            "message": {"role": "user", "content": "q"},
        },
        {
            "type": "message",
            "id": "b",
            "parentId": "a",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "x"}},
                ],
            },
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "b",
            "message": {
                "role": "toolResult",
                "toolCallId": "c1",
                "content": "\n".join(f"line {i}" for i in range(100)),
            },
        },
        {
            "type": "message",
            "id": "d",
            "parentId": "c",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


async def entries(db: Path, session_id: str) -> list[Any]:
    store = ags.SQLiteStore(db)
    try:
        info = await store.get_session(session_id)
        return [r.entry for r in await store.read(session_id, 0, info.next_seq)]
    finally:
        await store.close()


async def test_import_prints_the_id_and_json_gives_it(tmp_path: Path) -> None:
    source = pi_file(tmp_path / "p.jsonl")
    plain = on(tmp_path, "import", str(source))
    assert plain.code == 0, plain.err
    session_id = printed_id(plain)
    assert "1 tool calls, 1 results" in plain.err
    found = await entries(tmp_path / "s.db", session_id)
    assert [type(e) for e in found] == [UserEntry, AssistantEntry, ToolResultEntry, AssistantEntry]
    as_json = on(tmp_path, "--json", "import", "--from", "pi", str(source))
    assert as_json.code == 0, as_json.err
    (line,) = as_json.out.splitlines()
    said = json.loads(line)
    assert said["id"] != session_id and said["tool_calls"] == 1 and said["format"] == "pi"


async def test_latest_takes_the_newest_session_of_this_folder(tmp_path: Path) -> None:
    home = tmp_path / "pi-home"
    slug = "--" + str(tmp_path).lstrip("/").replace("/", "-") + "--"
    pi_file(home / "sessions" / slug / "2026-01-01_a.jsonl", str(tmp_path))
    env = {"PI_CODING_AGENT_DIR": str(home)}
    result = on(tmp_path, "import", "--latest", "pi", env=env)
    assert result.code == 0, result.err
    assert len(await entries(tmp_path / "s.db", printed_id(result))) == 4
    missing = on(
        tmp_path, "import", "--latest", "claude-code", env={"CLAUDE_CONFIG_DIR": str(home)}
    )
    assert missing.code == 2 and "keeps no session" in missing.err


def test_import_c_continues_the_imported_session(tmp_path: Path) -> None:
    source = pi_file(tmp_path / "p.jsonl")
    result = on(tmp_path, "import", "-c", str(source), stdin="and now?\n")
    assert result.code == 0, result.err
    session_id = result.out.splitlines()[0].strip()
    shown = on(tmp_path, "--json", "show", session_id)
    roles = [json.loads(line).get("role") for line in shown.out.splitlines()]
    assert roles.count("user") == 2  # the imported prompt and the one typed after the import


def test_markdown_and_html_exports_read_as_the_transcript(tmp_path: Path) -> None:
    session_id = printed_id(on(tmp_path, "import", str(pi_file(tmp_path / "p.jsonl"))))
    wrote = on(tmp_path, "export", session_id, "--format", "markdown", "-o", str(tmp_path / "s.md"))
    assert wrote.code == 0, wrote.err
    text = (tmp_path / "s.md").read_text("utf-8")
    assert "### User" in text and "### Assistant" in text
    assert re.search(r"Tool call `read`:\n\n```json\n\{\n  \"path\": \"x\"\n\}\n```", text)
    assert "line 39" in text and "line 40" not in text  # trimmed, saying by how much
    assert "[… 60 more lines," in text
    page = on(tmp_path, "export", session_id, "--format", "html")
    assert page.code == 0 and page.out.startswith("<!doctype html>")
    assert "<code>read</code>" in page.out


async def test_the_opencode_database_layout(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE session (id TEXT, directory TEXT, title TEXT, time_updated INT);"
            "CREATE TABLE message (id TEXT, session_id TEXT, time_created INT, data TEXT);"
            "CREATE TABLE part (id TEXT, message_id TEXT, time_created INT, data TEXT);"
        )
        db.execute("INSERT INTO session VALUES ('ses_1', '/p', 'A title', 5)")
        rows: list[tuple[str, str, int, object]] = [
            ("msg_1", "ses_1", 1, {"role": "user", "time": {"created": 1}}),
            ("msg_2", "ses_1", 2, {"role": "assistant", "modelID": "m", "time": {"created": 2}}),
        ]
        for ident, session, created, data in rows:
            db.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?)",
                (ident, session, created, json.dumps(data)),
            )
        tool = {
            "type": "tool",
            "tool": "bash",
            "callID": "call_9",
            "state": {"status": "error", "input": {"command": "ls"}, "error": "denied"},
        }
        parts: list[tuple[str, str, int, object]] = [
            ("prt_1", "msg_1", 1, {"type": "text", "text": "list it"}),
            ("prt_2", "msg_2", 2, tool),
            ("prt_3", "msg_2", 3, {"type": "text", "text": "it was denied"}),
        ]
        for ident, message, created, data in parts:
            db.execute(
                "INSERT INTO part VALUES (?, ?, ?, ?)", (ident, message, created, json.dumps(data))
            )
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    assert (report.format, report.messages, report.tool_calls, report.tool_results) == (
        "opencode",
        3,
        1,
        1,
    )
    assert report.title == "A title"
    info = await store.get_session(report.session_id)
    found = [r.entry for r in await store.read(report.session_id, 0, info.next_seq)]
    (result,) = [e for e in found if isinstance(e, ToolResultEntry)]
    assert result.is_error and result.content == "denied" and result.call_id == "call_9"


def test_search_prints_one_hit_per_line_and_upgrade_indexes_an_old_database(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    for text in ("count the marmalade jars", "and the marmalade spoons"):
        assert on(tmp_path, "run", text).code == 0
    found = on(tmp_path, "--json", "search", "marmalade")
    hits = [json.loads(line) for line in found.out.splitlines()]
    assert {h["kind"] for h in hits} == {"search_hit"}
    users = [h for h in hits if h["role"] == "user"]
    assert len(users) == 2 and "[marmalade] spoons" in users[0]["snippet"]  # newest first
    assert hits[0]["session_id"] == users[0]["session_id"]
    assert len(on(tmp_path, "search", "marmalade", "-n", "1").out.splitlines()) == 1
    # a database from before the index: reading says how to upgrade, `upgrade` indexes it
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER entries_searched")
        conn.execute("DROP TRIGGER entries_unsearched")
        conn.execute("DROP TABLE entries_search")
        conn.execute("DROP TABLE search_queue")
        conn.execute("DELETE FROM schema_migrations WHERE version >= 6")
    conn.close()
    old = on(tmp_path, "search", "marmalade")
    assert old.code == 1 and "agentsession upgrade" in old.err
    assert on(tmp_path, "upgrade").code == 0
    assert len(on(tmp_path, "search", "marmalade").out.splitlines()) == len(hits)


def test_chat_export_writes_the_transcript(tmp_path: Path) -> None:
    result = on(tmp_path, "chat", stdin="hello there\n/export talk.md\n/export talk.html\n")
    assert result.code == 0, result.err
    text = (tmp_path / "talk.md").read_text("utf-8")
    assert "### User" in text and "hello there" in text and "### Assistant" in text
    assert (tmp_path / "talk.html").read_text("utf-8").startswith("<!doctype html>")
