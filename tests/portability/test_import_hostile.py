"""Foreign files written to break an importer: a clear error or a report; nothing half written.

The files are small synthetic ones written here: truncated lines, values of the wrong type, a
line over the size limit, ids with path separators, unknown record types, forged parent cycles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.log import AssistantEntry, ToolResultEntry, UserEntry
from agentsession.portability import detect_format
from agentsession.providers.validate import validate

WIRE_FORMATS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")


def jsonl(path: Path, *records: Any) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def claude(uid: str, parent: str | None, role: str, content: Any, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant":
        message["id"] = extra.pop("mid", f"msg_{uid}")
    return {
        "type": role,
        "uuid": uid,
        "parentUuid": parent,
        "sessionId": "s",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": message,
        **extra,
    }


async def entries_of(store: ags.Store, session_id: str) -> list[Any]:
    info = await store.get_session(session_id)
    return [r.entry for r in await store.read(session_id, 0, info.next_seq)]


async def continues(store: ags.Store, session_id: str, tmp_path: Path) -> None:
    async with ags.Runtime(
        store=store, model=ags.ScriptedModel(["ok"]), project_dir=tmp_path
    ) as runtime:
        session = await runtime.open_session(session_id)
        request = await session.preview_request("next")
        for wire in WIRE_FORMATS:
            validate(ags.lower(request, wire), wire)


async def test_truncated_last_line_and_unknown_records_are_reported(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "c.jsonl",
        claude("u1", None, "user", "hello"),
        claude("a1", "u1", "assistant", [{"type": "text", "text": "hi"}]),
        {"type": "queue-operation", "uuid": "q", "sessionId": "s"},
    )
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "user", "uuid": "u2", "parentUuid": "a1", "mess')  # cut mid-write
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    assert report.messages == 2
    assert report.skipped["unreadable line (not valid JSON (truncated?))"] == 1
    assert report.skipped["queue-operation record"] == 1
    kinds = [type(e) for e in await entries_of(store, report.session_id)]
    assert kinds == [UserEntry, AssistantEntry]


async def test_attachment_records_link_the_prompt_to_its_answer(tmp_path: Path) -> None:
    # Claude Code 2.1 writes the prompt, then attachment records (agent and skill listings)
    # whose parent is the prompt, then the answer whose parent is the last attachment: the
    # prompt must stay on the live branch through them.
    def attachment(uid: str, parent: str) -> dict[str, Any]:
        listing = {"type": "skill_listing", "content": "- a skill"}
        return {"type": "attachment", "uuid": uid, "parentUuid": parent, "attachment": listing}

    result = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hello"}]
    path = jsonl(
        tmp_path / "c.jsonl",
        {"type": "queue-operation", "operation": "enqueue", "sessionId": "s"},
        claude("u1", None, "user", "write hello into note.txt"),
        attachment("t1", "u1"),
        attachment("t2", "t1"),
        claude(
            "a1",
            "t2",
            "assistant",
            [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Bash",
                    "input": {"command": "echo hello"},
                }
            ],
        ),
        claude("u2", "a1", "user", result),
        claude("a2", "u2", "assistant", [{"type": "text", "text": "The note says hello."}]),
        {"type": "last-prompt", "lastPrompt": "write hello into note.txt", "sessionId": "s"},
    )
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    assert (report.messages, report.tool_calls, report.tool_results) == (3, 1, 1)
    assert report.skipped.get("record off the live branch", 0) == 0
    assert report.skipped["attachment record"] == 2
    found = await entries_of(store, report.session_id)
    assert isinstance(found[0], UserEntry) and found[0].content == "write hello into note.txt"


async def test_wrong_types_are_read_as_defaults_never_raised(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "c.jsonl",
        claude("u1", None, "user", 42),  # a number for content
        claude("u2", "u1", "user", "real question"),
        claude(
            "a1",
            "u2",
            "assistant",
            [
                {"type": "tool_use", "id": 7, "name": ["x"], "input": "not an object"},
                {"type": "text", "text": None},
                "not a block",
            ],
        ),
        {**claude("u3", "a1", "user", []), "message": "not an object"},
    )
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    entries = await entries_of(store, report.session_id)
    calls = [c for e in entries if isinstance(e, AssistantEntry) for c in e.tool_calls]
    assert [(c.name, c.arguments) for c in calls] == [("tool", {})]
    assert calls[0].id  # a fresh id for a call without a usable one
    # the call never got a result: a visible error result, counted as a note
    results = [e for e in entries if isinstance(e, ToolResultEntry)]
    assert [r.call_id for r in results] == [calls[0].id] and results[0].is_error
    assert report.notes >= 1
    await continues(store, report.session_id, tmp_path)


async def test_a_line_over_the_limit_is_skipped_without_being_held(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(claude("u1", None, "user", "before")) + "\n")
        handle.write(json.dumps(claude("u2", "u1", "user", "x" * 300_000)) + "\n")
        handle.write(json.dumps(claude("a1", "u1", "assistant", "after")) + "\n")
    store = ags.MemoryStore()
    config = ags.Config(max_import_line_bytes=100_000)
    report = await ags.import_session(store, path, config=config)
    assert report.skipped == {"unreadable line (longer than the limit of 100000 bytes)": 1}
    texts = [e.content for e in await entries_of(store, report.session_id)]
    assert texts == ["before", "after"]


async def test_call_ids_with_path_separators_stay_data_and_lower(tmp_path: Path) -> None:
    hostile = "../../etc/passwd"
    path = jsonl(
        tmp_path / "p.jsonl",
        {"type": "session", "version": 3, "id": "../../../tmp/evil", "cwd": "/x"},
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
                "content": [{"type": "toolCall", "id": hostile, "name": "read", "arguments": {}}],
            },
        },
        {
            "type": "message",
            "id": "c",
            "parentId": "b",
            "message": {"role": "toolResult", "toolCallId": hostile, "content": "r"},
        },
        {"type": "from_the_future", "id": "d", "parentId": "c"},
    )
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    assert report.session_id != "../../../tmp/evil" and "/" not in report.session_id
    assert report.source_id == "../../../tmp/evil"
    assert (report.tool_calls, report.tool_results) == (1, 1)
    assert report.skipped == {"unknown entry type 'from_the_future'": 1}
    entries = await entries_of(store, report.session_id)
    assert [e.call_id for e in entries if isinstance(e, ToolResultEntry)] == [hostile]
    await continues(store, report.session_id, tmp_path)


async def test_nothing_is_stored_when_a_file_holds_no_conversation(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "c.jsonl", {"type": "summary", "summary": "t", "leafUuid": "x"})
    store = ags.SQLiteStore(tmp_path / "s.db")
    with pytest.raises(ags.SessionFileError, match="no conversation"):
        await ags.import_session(store, path)
    assert await store.list_sessions() == []
    await store.close()


async def test_unknown_content_is_a_clear_error(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "x.jsonl", {"hello": "world"})
    with pytest.raises(ags.SessionFileError, match="not a session this package can import"):
        await ags.import_session(ags.MemoryStore(), path)
    with pytest.raises(ags.UsageError, match="unknown import format"):
        await ags.import_session(ags.MemoryStore(), path, format="cursor")
    with pytest.raises(ags.SessionFileError, match="no such file"):
        await ags.import_session(ags.MemoryStore(), tmp_path / "missing.jsonl")


async def test_a_parent_cycle_ends_the_walk(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "c.jsonl",
        claude("u1", "a1", "user", "q"),
        claude("a1", "u1", "assistant", [{"type": "text", "text": "a"}]),
    )
    report = await ags.import_session(ags.MemoryStore(), path)
    assert report.messages == 2


def test_detection_by_content(tmp_path: Path) -> None:
    cases = {
        "claude-code": claude("u", None, "user", "q"),
        "codex": {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
        "pi": {"type": "session", "version": 3, "id": "x"},
        "agentsession": {"kind": "session", "version": 3, "id": "x"},
    }
    for name, first in cases.items():
        assert detect_format(jsonl(tmp_path / f"{name}.jsonl", first)) == name
    storage = tmp_path / "storage"
    (storage / "session" / "p").mkdir(parents=True)
    assert detect_format(storage) == "opencode"


async def test_a_hundred_megabyte_line_is_skipped_at_the_default_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.write((json.dumps(claude("u1", None, "user", "before")) + "\n").encode())
        start = handle.tell()
        handle.truncate(start + 100 * 1024 * 1024)  # a sparse run of NUL bytes, no line feed
        handle.seek(0, 2)
        handle.write(b"\n" + (json.dumps(claude("a1", "u1", "assistant", "after")) + "\n").encode())
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    limit = ags.Config().max_import_line_bytes
    assert report.skipped == {f"unreadable line (longer than the limit of {limit} bytes)": 1}
    assert report.messages == 2


async def test_sidechain_and_meta_records_are_not_the_conversation(tmp_path: Path) -> None:
    path = jsonl(
        tmp_path / "c.jsonl",
        claude("u1", None, "user", "Caveat: local command output follows", isMeta=True),
        claude("u2", "u1", "user", "real prompt"),
        claude("a1", "u2", "assistant", [{"type": "text", "text": "main answer"}]),
        claude("s1", "a1", "user", "Warmup", isSidechain=True),
    )
    store = ags.MemoryStore()
    report = await ags.import_session(store, path)
    texts = [e.content for e in await entries_of(store, report.session_id)]
    assert texts == ["real prompt", "main answer"]
    assert report.skipped == {
        "meta user line (the tool's own context)": 1,
        "record off the live branch": 1,
    }


async def test_the_older_opencode_layout(tmp_path: Path) -> None:
    root = tmp_path / "storage" / "session"
    files = {
        "info/ses_1.json": {"id": "ses_1", "title": "Old", "directory": "/p"},
        "message/ses_1/msg_1.json": {"id": "msg_1", "role": "user", "time": {"created": 1}},
        "message/ses_1/msg_2.json": {"id": "msg_2", "role": "assistant", "time": {"created": 2}},
        "part/ses_1/msg_1/prt_1.json": {"id": "prt_1", "type": "text", "text": "hi"},
        "part/ses_1/msg_2/prt_2.json": {"id": "prt_2", "type": "text", "text": "hello"},
    }
    for name, value in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(json.dumps(value), encoding="utf-8")
    store = ags.MemoryStore()
    report = await ags.import_session(store, tmp_path / "storage")
    assert (report.format, report.messages, report.title) == ("opencode", 2, "Old")
    assert [e.content for e in await entries_of(store, report.session_id)] == ["hi", "hello"]
