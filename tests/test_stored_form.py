"""The stored form stays readable and gets smaller: defaults left out, checkpoints of window
epochs record what changed, new SQLite files use 8 KiB pages; decoding still names bad paths;
the package imports without the heavy optional modules; sync tools reuse daemon threads."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.codec import DecodeError, decode, encode
from agentsession.log import (
    AssistantEntry,
    Dispatch,
    ToolResultEntry,
    UserEntry,
    dump_entry,
    load_entry,
)
from agentsession.log.packed import pack_dispatch
from agentsession.request import ImagePart, TextPart, ToolCall, Usage
from agentsession.tools._daemon import run_on_daemon_thread

from .conftest import Clock, MakeRuntime

Make = MakeRuntime


def test_fields_at_their_defaults_are_left_out_and_read_back() -> None:
    entry = AssistantEntry("hello", model="m", timestamp="t")
    kind, version, data = dump_entry(entry)
    payload = json.loads(data)
    assert payload == {"content": "hello", "model": "m", "timestamp": "t", "kind": "assistant"}
    assert load_entry(kind, version, data) == entry

    busy = AssistantEntry(
        "", (ToolCall("x", {"a": 1}, id="c"),), provider="p", usage=Usage(3, 4), model="m"
    )
    payload = json.loads(dump_entry(busy)[2])
    assert {"tool_calls", "provider", "usage"} <= set(payload)
    assert load_entry(*dump_entry(busy)) == busy
    # A value equal to the default but of another JSON type is kept (False is not 0).
    flagged = ToolResultEntry("c", "x", "out", is_error=True)
    assert json.loads(dump_entry(flagged)[2])["is_error"] is True


def test_nested_fields_at_their_defaults_are_left_out_and_tags_kept() -> None:
    entry = AssistantEntry(
        "", (ToolCall("x", {"a": 0}),), usage=Usage(input_tokens=132), model="m", timestamp="t"
    )
    payload = json.loads(dump_entry(entry)[2])
    assert payload["usage"] == {"input_tokens": 132}
    assert payload["tool_calls"] == [{"name": "x", "arguments": {"a": 0}, "kind": "tool_call"}]
    assert load_entry(*dump_entry(entry)) == entry
    picture = UserEntry((TextPart("see"), ImagePart("image/png", data="AAAA")), timestamp="t")
    parts = json.loads(dump_entry(picture)[2])["content"]
    assert parts == [
        {"text": "see", "kind": "text"},
        {"media_type": "image/png", "data": "AAAA", "kind": "image"},
    ]
    assert load_entry(*dump_entry(picture)) == picture


def plain_encode(value: Any) -> Any:
    """The encoding walked field by field at every value, as it was first written."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_encode(v) for k, v in value.items()}
    return value


def plain_lean(value: Any) -> Any:
    """``plain_encode`` without the fields at their defaults (tags kept), at every depth."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        lean: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = plain_lean(getattr(value, f.name))
            if f.name not in ("kind", "role"):
                if f.default is not dataclasses.MISSING:
                    default = plain_lean(f.default)
                elif f.default_factory is not dataclasses.MISSING:
                    default = plain_lean(f.default_factory())
                else:
                    lean[f.name] = item
                    continue
                if item == default and type(item) is type(default):
                    continue
            lean[f.name] = item
        return lean
    if isinstance(value, tuple | list):
        return [plain_lean(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain_lean(v) for k, v in value.items()}
    return value


small = st.text(max_size=12)
counts = st.integers(0, 3) | st.integers(0, 10**7)
calls = st.builds(
    ToolCall,
    small,
    st.dictionaries(small, st.integers() | small | st.booleans() | st.none(), max_size=3),
    id=small,
)
stored_entries = st.one_of(
    st.builds(
        AssistantEntry,
        small,
        st.lists(calls, max_size=2).map(tuple),
        provider=small,
        provider_data=st.dictionaries(small, small, max_size=2),
        model=small,
        usage=st.builds(Usage, counts, counts, counts, counts),
        timestamp=small,
        usage_estimated=st.booleans(),
    ),
    st.builds(ToolResultEntry, small, small, small, st.booleans(), small),
    st.builds(UserEntry, small | st.lists(st.builds(TextPart, small)).map(tuple), small),
    st.builds(Dispatch, small, st.integers(0, 9), small, st.just("hit"), st.just("")),
)


@settings(max_examples=200, deadline=None)
@given(stored_entries)
def test_the_stored_form_is_the_field_by_field_walk(entry: Any) -> None:
    # Encoding keeps each class's fields once instead of asking at every value: the stored
    # bytes must be the ones the field-by-field walk gives.
    assert encode(entry) == plain_encode(entry)
    payload = pack_dispatch(plain_encode(entry)) if entry.kind == "dispatch" else plain_lean(entry)
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    assert dump_entry(entry)[2] == text
    assert load_entry(*dump_entry(entry)) == entry


def test_rows_written_with_every_field_still_load() -> None:
    full = {
        "content": "hi",
        "tool_calls": [],
        "provider": "",
        "provider_data": {},
        "model": "m",
        "usage": {
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_input_tokens": 0,
            "cache_write_tokens": 0,
        },
        "timestamp": "t",
        "kind": "assistant",
    }
    assert load_entry("assistant", 1, json.dumps(full)) == AssistantEntry(
        "hi", model="m", timestamp="t"
    )


def test_compiled_decoding_still_names_the_path_of_a_bad_value() -> None:
    with pytest.raises(DecodeError, match=r"\$\.tool_calls\[0\]"):
        decode(AssistantEntry, {"content": "x", "tool_calls": [{"name": 1}]})
    with pytest.raises(DecodeError, match="unknown fields"):
        decode(AssistantEntry, {"content": "x", "surprise": 1})
    call = decode(ToolCall, {"name": "n", "arguments": {"a": [1, {"b": None}]}, "id": "c"})
    assert call == ToolCall("n", {"a": [1, {"b": None}]}, id="c")


async def test_a_window_epoch_records_only_the_sections_that_changed(
    make_runtime: Make, clock: Clock
) -> None:
    config = ags.Config(max_transcript_messages=4, window_step=1, retry_base_delay=0)
    runtime = make_runtime([f"answer {i}" for i in range(8)], config=config)
    session = await runtime.create_session()
    for i in range(4):
        await session.prompt(f"question {i}")
    first, *later = session.system_prompt_checkpoints()
    assert {"core.date", "core.permissions"} <= set(first.changed)
    # The window moved at every turn after the second, but the system part stayed the same.
    assert later == []
    log = await session.log()
    assert sum(r.entry.kind == "epoch" for r in log) >= 3

    clock.moment = clock.moment.replace(day=2)
    await session.prompt("after midnight")  # the window moves and the date changed
    *_, last = session.system_prompt_checkpoints()
    assert list(last.changed) == ["core.date"]
    assert "2026-01-02" in str(last.changed["core.date"])


async def test_new_sqlite_files_use_8k_pages_and_old_ones_keep_theirs(tmp_path: Path) -> None:
    store = ags.SQLiteStore(tmp_path / "new.db")
    await store.close()
    conn = sqlite3.connect(tmp_path / "new.db")
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 8192
    conn.close()

    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("VACUUM")
    conn.close()
    runtime = ags.Runtime(store=ags.SQLiteStore(old), model=ags.ScriptedModel(["ok"]))
    session = await runtime.create_session()
    await session.prompt("hi")
    await runtime.close()
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA page_size").fetchone()[0] == 4096
    conn.close()


def test_import_loads_no_optional_heavy_module_until_named() -> None:
    code = (
        "import sys, agentsession as ags\n"
        "heavy = ['psycopg', 'yaml', 'agentsession.inspection.views', 'openai', 'anthropic',"
        " 'google.genai']\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "ags.Runtime(store=ags.MemoryStore(), model=ags.ScriptedModel(['x']))\n"
        "print([m for m in heavy if m in sys.modules])\n"
        "print(ags.Inspection.__module__, ags.TurnInfo.__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == "[]" and out[1] == "[]"
    assert out[2] == "agentsession.inspection.views TurnInfo"
    with pytest.raises(AttributeError):
        ags.NoSuchName  # noqa: B018


async def test_sync_calls_reuse_an_idle_thread_and_a_hanging_call_keeps_its_own() -> None:
    first = await run_on_daemon_thread(threading.get_ident, {})
    second = await run_on_daemon_thread(threading.get_ident, {})
    assert first == second  # the idle thread took the next call

    release = threading.Event()
    hanging = asyncio.ensure_future(run_on_daemon_thread(release.wait, {"timeout": 10}))
    await asyncio.sleep(0.05)
    other = await run_on_daemon_thread(threading.get_ident, {})
    assert other != first  # the hanging call holds the reused thread: a new one ran this
    assert threading.current_thread().ident not in (first, other)
    release.set()
    assert await hanging is True
