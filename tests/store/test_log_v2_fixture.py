"""Rows of the kinds whose stored form changed after version 1 keep loading, forever.

``tests/fixtures/log_v2.jsonl`` is frozen: ``dispatch`` rows as version 2 wrote them (named
fields, hex digests, ISO timestamps) and ``epoch`` rows as version 3 wrote them (the baseline
inline), each ``{"kind", "version", "data"}``. It is never regenerated; when a kind's stored
form changes again, its version goes up, an upgrade is added in ``log/stored.py``, a new fixture
file is added beside this one, and this test keeps passing unchanged.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agentsession.log import VERSIONS, ContextEpoch, Dispatch, LogEntry, dump_entry, load_entry
from agentsession.store import MemoryStore, SessionInfo, SQLiteStore

FIXTURE = Path(__file__).parent.parent / "fixtures" / "log_v2.jsonl"
T = "2026-11-30T18:02:21.967707+00:00"
H = [
    "504f1e065f522c2bf7801d227c55ada8",
    "bb0aba02b5d3ee0c98365eabe72d2086",
    "b6f9247a7e77b69e59463a1db658a3c7",
    "334b695253ee9831aa0c5f72bbb11753",
]
BASELINE = (
    ("core.date", "Today's date: Monday, 2026-11-30."),
    (
        "core.environment",
        "<environment>\nWorking directory: /p\nPlatform: linux\n"
        "Is the directory a git repository: no\n</environment>",
    ),
    ("core.permissions", "<permissions>\nPermission preset: workspace-write.\n</permissions>"),
)
CHECKPOINT = (
    ("core.date", "1abe78da7695195953f112c89dfb6dfd"),
    ("core.environment", "d573c70f4a27410fe7fdc9f703f5d0d8"),
    ("core.permissions", "cc8ce68d4fca0f3b4113bf1a9e5ed395"),
)

EXPECTED: list[LogEntry] = [
    Dispatch("anthropic:claude-x", 2, H[0], "hit", T, H[1], H[2], H[3], 7),
    Dispatch("m", 1, "sha256:abc123"),
    Dispatch("openai:gpt-4.1", 3, H[0].upper(), "first", "yesterday ✓", "", "x", H[3][:31], 0),
    ContextEpoch(
        3,
        BASELINE,
        CHECKPOINT,
        40,
        "window",
        "anthropic:claude-x",
        (),
        None,
        T,
        ("read_file", "write_file"),
    ),
    ContextEpoch(
        4,
        (*BASELINE[:2], ("plugin.x", "<x>\u2028</x>")),
        (*CHECKPOINT[:2], ("plugin.x", "h-x")),
        52,
        "compaction",
        "m",
        ("core.permissions",),
        51,
        T,
        None,
    ),
    ContextEpoch(0, (), (), 0),
]


def fixture_rows() -> list[dict[str, Any]]:
    # Lines end at line feeds only: a text may hold U+2028, which splitlines() would split at.
    lines = FIXTURE.read_bytes().decode("utf-8").split("\n")
    return [json.loads(line) for line in lines if line]


def test_the_fixture_holds_the_versions_it_stands_for() -> None:
    versions = {(row["kind"], row["version"]) for row in fixture_rows()}
    assert versions == {("dispatch", 2), ("epoch", 3)}
    assert all(VERSIONS[kind] > version for kind, version in versions)


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_each_row_loads_with_its_values(index: int) -> None:
    row = fixture_rows()[index]
    data = json.dumps(row["data"], ensure_ascii=False)
    entry = load_entry(row["kind"], row["version"], data, seq=index)
    assert entry == EXPECTED[index]
    assert type(entry) is type(EXPECTED[index])
    # Written again today, the value comes back the same from its current stored form.
    assert load_entry(*dump_entry(entry)) == entry


async def test_old_rows_beside_new_ones_read_back_from_a_store(tmp_path: Path) -> None:
    """A log holding rows of both versions (written before and after an upgrade) reads."""
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    await store.create_session(SessionInfo("s", T, T), [*EXPECTED, *EXPECTED])
    await store.close()
    # The first half as the old version wrote it, put in place by hand.
    conn = sqlite3.connect(path)
    with conn:
        for seq, row in enumerate(fixture_rows()):
            conn.execute(
                "UPDATE entries SET version = ?, data = ? WHERE seq = ?",  # the only session
                (row["version"], json.dumps(row["data"], ensure_ascii=False), seq),
            )
    versions = [v for (v,) in conn.execute("SELECT version FROM entries ORDER BY seq")]
    conn.close()
    assert versions[: len(EXPECTED)] != versions[len(EXPECTED) :]
    store = SQLiteStore(path)
    try:
        assert [r.entry for r in await store.read("s")] == [*EXPECTED, *EXPECTED]
        assert (await store.last("s", ["dispatch"])) is not None
    finally:
        await store.close()

    memory = MemoryStore()
    await memory.create_session(SessionInfo("s", T, T), EXPECTED)
    assert [r.entry for r in await memory.read("s")] == EXPECTED
