"""An epoch's long baseline texts are kept once per session; every epoch still reads whole.

A window advance starts an epoch whose baseline is mostly the one before it: the store keeps
each long section text once (``texts``, by reference) and writes the epoch with references.
What reads back is exactly what was appended — after a fork, after the source is deleted, in
every store — and the database holds each text once, however many epochs name it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

from agentsession.errors import CorruptEntryError, SessionNotFoundError
from agentsession.log import ContextEpoch, Dispatch, LogEntry, UserEntry, dump_entry, dump_row
from agentsession.store import PostgresStore, SessionInfo, SQLiteStore, Store
from agentsession.store._sqlite_sql import KIND_CODES

from . import pg

T = "2026-11-30T18:02:21.967707+00:00"
INSTRUCTIONS = "<instructions>\n" + "Keep answers short and cite the files you read.\n" * 40
PERMISSIONS = "<permissions>\nPermission preset: workspace-write.\n</permissions>"


def epoch(number: int, day: int, start: int) -> ContextEpoch:
    baseline = (
        ("core.date", f"Today's date: Monday, 2026-11-{day:02d}."),
        ("core.instructions", INSTRUCTIONS),
        ("core.permissions", PERMISSIONS),
        ("core.tiny", "ok"),
    )
    checkpoint = tuple((key, f"h{number}-{key}") for key, _ in baseline)
    return ContextEpoch(number, baseline, checkpoint, start, "window", "m", timestamp=T)


def log(epochs: int) -> list[LogEntry]:
    entries: list[LogEntry] = []
    for number in range(epochs):
        entries += [UserEntry(f"q{number}"), epoch(number, 1 + number // 3, len(entries))]
        entries.append(Dispatch("m", 1, "d"))
    return entries


def info(session_id: str) -> SessionInfo:
    return SessionInfo(session_id, T, T)


def test_a_store_writes_long_texts_by_reference_and_a_session_file_inline() -> None:
    kind, version, data, texts = dump_row(epoch(0, 1, 0))
    assert (kind, version) == ("epoch", 4)
    assert INSTRUCTIONS not in data and PERMISSIONS not in data
    assert set(texts.values()) == {INSTRUCTIONS, PERMISSIONS, "Today's date: Monday, 2026-11-01."}
    assert '"ok"' in data  # a short text costs less than its reference
    assert INSTRUCTIONS in json.loads(dump_entry(epoch(0, 1, 0))[2])["baseline"][1]


async def test_every_epoch_reads_back_whole(store: Store) -> None:
    entries = log(7)
    await store.create_session(info("s"), entries[:6])
    for seq in range(6, len(entries)):
        await store.append("s", seq, [entries[seq]])
    assert [r.entry for r in await store.read("s")] == entries
    assert [r.entry for r in await store.read("s", kinds=["epoch"])] == entries[1::3]
    newest = await store.last("s", ["epoch"])
    assert newest is not None and newest.entry == entries[-2]


async def test_texts_no_column_can_hold_stay_inline_and_read_back(store: Store) -> None:
    # A listing of undecodable file names (lone surrogates) or a NUL in a long section: no UTF-8
    # column (SQLite) and no PostgreSQL text column takes it, the entry's JSON escapes it.
    odd = (
        ("plugin.files", "Files here: report-\udcff.txt, notes.md, and a few more"),
        ("plugin.raw", "A section that holds a NUL \x00 somewhere in its long text"),
    )
    _, _, data, texts = dump_row(ContextEpoch(0, odd, (), 0, timestamp=T))
    assert texts == {} and "\\udcff" in data
    entry = ContextEpoch(0, (*odd, ("core.instructions", INSTRUCTIONS)), (), 0, timestamp=T)
    await store.create_session(info("s"), [UserEntry("q"), entry])
    assert [r.entry for r in await store.read("s")] == [UserEntry("q"), entry]


async def test_a_fork_keeps_its_texts_when_the_source_is_deleted(store: Store) -> None:
    entries = log(4)
    await store.create_session(info("src"), entries)
    await store.fork_session("src", info("fork"), 4)
    await store.delete_session("src")
    with pytest.raises(SessionNotFoundError):
        await store.read("src")
    assert [r.entry for r in await store.read("fork")] == entries[:5]
    await store.append("fork", 5, [epoch(9, 2, 5)])
    assert (await store.read("fork"))[-1].entry == epoch(9, 2, 5)


def _rows(store: Store, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    if isinstance(store, SQLiteStore):
        conn = sqlite3.connect(store.path)
        try:
            with conn:
                return conn.execute(query, params).fetchall()
        finally:
            conn.close()
    assert isinstance(store, PostgresStore)
    return list(pg.run(store.dsn, query.replace("?", "%s"), params))


async def test_the_database_holds_each_text_once(db_store: Store) -> None:
    entries = log(9)  # nine epochs, three dates
    for number in range(0, len(entries), 3):
        if number == 0:
            await db_store.create_session(info("s"), entries[:3])
        else:
            await db_store.append("s", number, entries[number : number + 3])
    texts = _rows(db_store, "SELECT text FROM texts WHERE session_id = ?", ("s",))
    dates = {f"Today's date: Monday, 2026-11-{day:02d}." for day in (1, 2, 3)}
    assert sorted(t for (t,) in texts) == sorted({INSTRUCTIONS, PERMISSIONS, *dates})
    # SQLite stores a known kind as its code (KIND_CODES), PostgreSQL as its name.
    epoch = KIND_CODES["epoch"] if isinstance(db_store, SQLiteStore) else "epoch"
    epochs = _rows(db_store, "SELECT data FROM entries WHERE kind = ?", (epoch,))
    assert len(epochs) == 9
    assert all(INSTRUCTIONS not in data for (data,) in epochs)

    await db_store.delete_session("s")
    assert _rows(db_store, "SELECT text FROM texts WHERE session_id = ?", ("s",)) == []


async def test_a_missing_text_is_a_corrupt_entry_naming_its_seq(db_store: Store) -> None:
    await db_store.create_session(info("s"), log(2))
    _rows(db_store, "DELETE FROM texts WHERE session_id = ? AND text = ?", ("s", INSTRUCTIONS))
    with pytest.raises(CorruptEntryError, match=r"core\.instructions") as raised:
        await db_store.read("s")
    assert raised.value.seq == 1
    assert (await db_store.read("s", kinds=["user"]))[0].entry == UserEntry("q0")


@pytest.mark.parametrize("sections", [1, 3, 8, 9, 20])
async def test_an_epoch_reads_back_whole_however_many_texts_it_keeps(
    store: Store, sections: int
) -> None:
    # A few texts are looked up one by one, more in one statement: both read every one back.
    baseline = tuple((f"part.{i}", f"Section {i}: " + "words " * (10 + i)) for i in range(sections))
    checkpoint = tuple((key, f"h-{key}") for key, _ in baseline)
    entry = ContextEpoch(0, baseline, checkpoint, 0, "window", "m", timestamp=T)
    assert len(dump_row(entry)[3]) == sections
    await store.create_session(info("s"), [UserEntry("q"), entry])
    assert [r.entry for r in await store.read("s")] == [UserEntry("q"), entry]
    newest = await store.last("s", ["epoch"])
    assert newest is not None and newest.entry == entry
