"""Session files (JSON Lines): exact round trips between all stores, the frozen version-2
fixture, and files that are refused whole with the line that is wrong."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentsession.errors import ConflictError, SessionFileError, SessionNotFoundError, StoreError
from agentsession.log import (
    VERSIONS,
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    LogEntry,
    RuntimeContextSnapshot,
    UserEntry,
    now,
)
from agentsession.store import MemoryStore, PostgresStore, SessionInfo, SQLiteStore, Store
from agentsession.store.session_file import (
    CURRENT_VERSION,
    export_session,
    import_session,
    parse_session_file,
    render_session_file,
)

from .conftest import StoreFactory
from .strategies import ENTRY_STRATEGIES, entry

FIXTURES = Path(__file__).parent.parent / "fixtures"
V2_FIXTURE = FIXTURES / "session_v2.jsonl"

V2_ENTRIES: list[LogEntry] = [
    UserEntry("Summarise report.pdf for me, please.", "2025-03-04T09:15:00.000000+00:00"),
    RuntimeContextSnapshot(
        0,
        '<skill name="pdf" location="skills/pdf/SKILL.md">\n'
        "Extract text with pdftotext before summarising.\n</skill>",
        "2025-03-04T09:15:00.100000+00:00",
        skills=(),
        placement=None,
    ),
    AssistantEntry(
        "Revenue grew 12% over the quarter; costs stayed flat.",
        timestamp="2025-03-04T09:15:20.000000+00:00",
    ),
    UserEntry("Now compare it with last year's </skill> figures ✓"),
    RuntimeContextSnapshot(
        1,
        '<skill name="spreadsheet" location="skills/spreadsheet/SKILL.md">\n'
        "Read tables with the csv module.\n</skill>",
        "2025-03-04T09:21:00.000000+00:00",
        skills=(),
        placement=None,
    ),
    AssistantEntry("Last year revenue grew 8%, so growth sped up."),
]


def every_kind() -> list[LogEntry]:
    """One entry of every kind, drawn once from the shared strategies (fixed seed)."""
    drawn: list[LogEntry] = []

    @settings(max_examples=1, database=None, derandomize=True)
    @given(st.tuples(*(ENTRY_STRATEGIES[k] for k in sorted(ENTRY_STRATEGIES))))
    def draw(entries: tuple[LogEntry, ...]) -> None:
        drawn[:] = entries

    draw()
    assert {e.kind for e in drawn} == set(VERSIONS)
    return drawn


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def log_of(store: Store, session_id: str) -> list[LogEntry]:
    return [r.entry for r in await store.read(session_id)]


async def sessions(store: Store) -> list[SessionInfo]:
    return await store.list_sessions()


# -- the version-2 fixture -------------------------------------------------------------------


async def test_the_version_2_fixture_imports_as_specified(store: Store, tmp_path: Path) -> None:
    session_id = await import_session(store, V2_FIXTURE)
    assert session_id == "legacy-7f3a"
    assert await log_of(store, session_id) == V2_ENTRIES
    info = await store.get_session(session_id)
    assert info.title == "Summarise the quarterly report"
    assert (info.created_at, info.updated_at) == (
        "2025-03-04T09:15:00.000000+00:00",
        "2025-03-04T09:21:30.000000+00:00",
    )
    assert (info.file_version, info.message_count, info.next_seq) == (2, 4, 6)
    snapshots = [e for e in await log_of(store, session_id) if e.kind == "runtime_context"]
    assert [(s.user_turn, s.placement, s.skills) for s in snapshots] == [
        (0, None, ()),
        (1, None, ()),
    ]


async def test_the_version_2_fixture_exports_back_unchanged(store: Store, tmp_path: Path) -> None:
    session_id = await import_session(store, V2_FIXTURE)
    out = tmp_path / "again.jsonl"
    assert await export_session(store, session_id, out) == 6
    assert out.read_bytes() == V2_FIXTURE.read_bytes()


async def test_a_renamed_version_2_session_stays_version_2(store: Store, tmp_path: Path) -> None:
    session_id = await import_session(store, V2_FIXTURE)
    await store.set_title(session_id, "Quarterly report, compared")
    await export_session(store, session_id, tmp_path / "renamed.jsonl")
    header, *rest = (tmp_path / "renamed.jsonl").read_text(encoding="utf-8").splitlines(True)
    assert json.loads(header)["version"] == 2
    assert json.loads(header)["title"] == "Quarterly report, compared"
    assert rest == V2_FIXTURE.read_text(encoding="utf-8").splitlines(True)[1:]


async def test_a_continued_version_2_session_exports_as_current(
    store: Store, tmp_path: Path
) -> None:
    session_id = await import_session(store, V2_FIXTURE)
    more: list[LogEntry] = [
        UserEntry("one more"),
        Dispatch("m", 1, "d"),
        AssistantEntry("ok", model="m"),
    ]
    await store.append(session_id, 6, more)
    await export_session(store, session_id, tmp_path / "now.jsonl")
    parsed = parse_session_file((tmp_path / "now.jsonl").read_bytes())
    assert parsed.version == CURRENT_VERSION
    # The legacy snapshots are carried as they are: never rewritten, still without placement.
    assert list(parsed.entries) == [*V2_ENTRIES, *more]

    again = MemoryStore()
    await import_session(again, tmp_path / "now.jsonl", new_id="copy")
    await export_session(again, "copy", tmp_path / "copy.jsonl")
    assert parse_session_file((tmp_path / "copy.jsonl").read_bytes()).entries == parsed.entries


# -- exact round trips -----------------------------------------------------------------------


async def test_every_kind_round_trips_byte_for_byte_through_every_store(
    make_store: StoreFactory, tmp_path: Path
) -> None:
    """Export → import (here: SQLite, then the store under test, then memory) → same bytes."""
    log = every_kind()
    source = SQLiteStore(tmp_path / "source.db")
    target = make_store()
    last = MemoryStore()
    try:
        info = SessionInfo("all-kinds", now(), now(), title="every kind ✓", project_dir="/p")
        await source.create_session(info, log)
        await source.append("all-kinds", len(log), [UserEntry("appended later")])
        files = [tmp_path / f"{n}.jsonl" for n in range(3)]
        await export_session(source, "all-kinds", files[0])
        await import_session(target, files[0])
        await export_session(target, "all-kinds", files[1])
        await import_session(last, files[1])
        await export_session(last, "all-kinds", files[2])
        assert files[0].read_bytes() == files[1].read_bytes() == files[2].read_bytes()
        assert await log_of(last, "all-kinds") == [*log, UserEntry("appended later")]
        assert await last.get_session("all-kinds") == await target.get_session("all-kinds")
    finally:
        await source.close()
        await target.close()


def test_round_trip_property(make_store: StoreFactory) -> None:
    """Any log exports, imports into another store and exports again to the same bytes."""
    with asyncio.Runner() as runner:
        target = make_store()
        source = MemoryStore()
        try:

            @settings(
                max_examples=60,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            )
            @given(
                log=st.lists(entry, max_size=8),
                title=st.none()
                | st.text(st.characters(exclude_categories=("Cs", "Cc")), max_size=20),
            )
            def check(log: list[LogEntry], title: str | None) -> None:
                runner.run(_round_trip(source, target, log, title))

            check()
        finally:
            runner.run(target.close())


async def _round_trip(source: Store, target: Store, log: list[LogEntry], title: str | None) -> None:
    session_id = uuid.uuid4().hex
    await source.create_session(SessionInfo(session_id, now(), now(), title=title), log)
    first = await _export_text(source, session_id)
    parsed = parse_session_file(first.encode("utf-8"))
    assert list(parsed.entries) == log
    await target.create_session(parsed.info, parsed.entries)
    assert await _export_text(target, session_id) == first


async def _export_text(store: Store, session_id: str) -> str:
    info = await store.get_session(session_id)
    return render_session_file(info, await log_of(store, session_id))


# -- importing -------------------------------------------------------------------------------


async def test_import_under_a_new_id_and_conflicts(store: Store, tmp_path: Path) -> None:
    await import_session(store, V2_FIXTURE)
    with pytest.raises(ConflictError, match="already exists"):
        await import_session(store, V2_FIXTURE)
    assert await import_session(store, V2_FIXTURE, new_id="second") == "second"
    assert await log_of(store, "second") == V2_ENTRIES
    assert sorted(s.id for s in await sessions(store)) == ["legacy-7f3a", "second"]


async def test_old_entry_versions_in_a_current_file_are_upgraded(
    store: Store, tmp_path: Path
) -> None:
    header = {
        "kind": "session",
        "version": 3,
        "id": "old-epoch",
        "title": None,
        "created_at": "c",
        "updated_at": "u",
        "project_dir": None,
        "entry_versions": {"epoch": 1},
    }
    epoch_v1 = {"epoch": 0, "baseline": [], "checkpoint": [], "history_start": 0, "kind": "epoch"}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(epoch_v1) + "\n", encoding="utf-8")
    await import_session(store, path)
    assert await log_of(store, "old-epoch") == [ContextEpoch(0, (), (), 0, summary_seq=None)]


def _v3(*lines: Any, header: dict[str, Any] | None = None) -> bytes:
    head = {
        "kind": "session",
        "version": 3,
        "id": "x",
        "title": None,
        "created_at": "c",
        "updated_at": "u",
        "project_dir": None,
        "entry_versions": dict(VERSIONS),
    }
    head.update(header or {})
    rendered = [line if isinstance(line, str) else json.dumps(line) for line in (head, *lines)]
    return ("\n".join(rendered) + "\n").encode("utf-8")


_USER = {"content": "fine", "timestamp": "", "kind": "user"}

BAD_FILES: list[tuple[str, bytes, int, str]] = [
    ("empty", b"", 1, "empty"),
    ("no header", _v3()[_v3().index(b"\n") + 1 :] + json.dumps(_USER).encode(), 1, "header"),
    ("newer version", _v3(header={"version": 4}), 1, "version 4, newer than"),
    ("version 1", _v3(header={"version": 1}), 1, "unknown session file version 1"),
    ("header field", _v3(header={"colour": "red"}), 1, "unknown fields ['colour']"),
    ("no id", _v3(header={"id": ""}), 1, "id is empty"),
    ("broken json", _v3(_USER, _USER, "{not json", _USER), 4, "not valid JSON"),
    ("blank line", _v3(_USER, "", _USER), 3, "not valid JSON"),
    ("not an object", _v3(_USER, "[1, 2]"), 3, "not a JSON object"),
    ("unknown kind", _v3({"kind": "hologram"}), 2, "not listed in the header"),
    ("malformed", _v3(_USER, {"content": 5, "kind": "user"}), 3, "malformed 'user' entry"),
    (
        "list as a tag",
        _v3(_USER, {"content": [{"kind": []}], "kind": "user"}),
        3,
        "malformed 'user' entry",
    ),
    ("newer kind", _v3(_USER, header={"entry_versions": {"user": 9}}), 2, "version 9, newer"),
    (
        "not utf-8",
        _v3(_USER) + b'{"kind": "user", "content": "\xff", "timestamp": ""}\n',
        3,
        "UTF-8",
    ),
    (
        "v2 kind",
        b'{"kind": "session", "version": 2, "id": "x"}\n{"kind": "dispatch"}\n',
        2,
        "version 2 has no entry kind 'dispatch'",
    ),
    (
        "v2 field",
        b'{"kind": "session", "version": 2, "id": "x"}\n'
        b'{"kind": "user", "content": "a", "placement": "user"}\n',
        2,
        "unknown fields ['placement']",
    ),
    (
        "v2 turn",
        b'{"kind": "session", "version": 2, "id": "x"}\n'
        b'{"kind": "runtime_context", "user_turn": -1, "content": "a", "timestamp": "t"}\n',
        2,
        "user_turn",
    ),
]


@pytest.mark.parametrize(
    ("name", "data", "line", "message"), BAD_FILES, ids=[b[0] for b in BAD_FILES]
)
async def test_a_bad_file_is_refused_whole_with_its_line(
    store: Store, tmp_path: Path, name: str, data: bytes, line: int, message: str
) -> None:
    await store.create_session(SessionInfo("existing", "c", "u"))
    before = await sessions(store)
    path = tmp_path / f"{name}.jsonl"
    path.write_bytes(data)
    with pytest.raises(SessionFileError, match=re.escape(message)) as info:
        await import_session(store, path)
    assert info.value.line == line
    assert f"{path}:{line}: " in str(info.value)
    assert isinstance(info.value, StoreError)
    assert await sessions(store) == before


async def test_a_missing_file_is_a_session_file_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(SessionFileError, match="cannot read session file"):
        await import_session(store, tmp_path / "nope.jsonl")


def test_the_last_line_may_lack_its_newline() -> None:
    data = _v3(_USER).rstrip(b"\n")
    assert parse_session_file(data).entries == (UserEntry("fine"),)


# -- exporting -------------------------------------------------------------------------------


async def test_export_replaces_the_file_whole(store: Store, tmp_path: Path) -> None:
    await store.create_session(SessionInfo("s", "c", "u"), [UserEntry("a")])
    folder = tmp_path / "out"
    folder.mkdir()
    out = folder / "s.jsonl"
    out.write_text("old contents\n")
    await export_session(store, "s", out)
    assert parse_session_file(out.read_bytes()).entries == (UserEntry("a"),)
    assert names(folder) == ["s.jsonl"]  # no temp file left

    with pytest.raises(StoreError, match="cannot write session file"):
        await export_session(store, "s", folder / "missing-folder" / "s.jsonl")
    with pytest.raises(SessionNotFoundError):
        await export_session(store, "nope", folder / "nope.jsonl")
    assert names(folder) == ["s.jsonl"]


def test_export_pages_through_a_long_log(tmp_path: Path) -> None:
    async def run() -> None:
        store = SQLiteStore(tmp_path / "long.db")
        try:
            log = [UserEntry(f"u{i}") for i in range(2_500)]
            await store.create_session(SessionInfo("long", "c", "u"), log)
            assert await export_session(store, "long", tmp_path / "long.jsonl") == 2_500
            entries = parse_session_file((tmp_path / "long.jsonl").read_bytes()).entries
            assert list(entries) == log
        finally:
            await store.close()

    asyncio.run(run())


@pytest.mark.postgres
async def test_postgres_in_between(pg_dsn: str, tmp_path: Path) -> None:
    """SQLite → PostgreSQL → SQLite, as the acceptance asks, with every entry kind."""
    log = every_kind()
    first, middle, last = (
        SQLiteStore(tmp_path / "a.db"),
        PostgresStore(pg_dsn),
        SQLiteStore(tmp_path / "b.db"),
    )
    try:
        await first.create_session(SessionInfo("s", now(), now(), title="t"), log)
        await export_session(first, "s", tmp_path / "1.jsonl")
        await import_session(middle, tmp_path / "1.jsonl")
        await export_session(middle, "s", tmp_path / "2.jsonl")
        await import_session(last, tmp_path / "2.jsonl")
        await export_session(last, "s", tmp_path / "3.jsonl")
        texts = {(tmp_path / f"{n}.jsonl").read_bytes() for n in (1, 2, 3)}
        assert len(texts) == 1
    finally:
        for store in (first, middle, last):
            await store.close()
