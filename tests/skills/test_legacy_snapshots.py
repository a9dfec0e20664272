"""Version-2 runtime-context snapshots (no placement) replay as separate user messages.

``tests/fixtures/session_v2_log.jsonl`` is frozen: the stored rows (``{"kind", "version",
"data"}``) of a session whose snapshots were written by the version-2 format, before selections
were prepended to their user message. Each replays as its own user message right after the user
message it is anchored to (``user_turn``: the zero-based ordinal among real user messages) —
the first one sits after that turn's reply in the log, and still replays right after its user
message — and is never rewritten.
"""

from __future__ import annotations

import json
from pathlib import Path

import agentsession as ags
from agentsession.log import LogEntry, RuntimeContextSnapshot, dump_entry, load_entry
from agentsession.store import SessionInfo

from .conftest import skill_md, write_skill
from .sessions import Make, make_skills

FIXTURE = Path(__file__).parent.parent / "fixtures" / "session_v2_log.jsonl"
T = "2025-06-01T09:00:00.000000+00:00"
PDF = (
    '<skill name="pdf" location="skills/pdf/SKILL.md">\n'
    "Use pdftotext before you summarise.\n</skill>"
)
PERMISSIONS = "<permissions>\nWorkspace write; ask before running commands.\n</permissions>"


def _rows() -> list[tuple[str, int, str]]:
    rows = []
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        rows.append((row["kind"], row["version"], json.dumps(row["data"], ensure_ascii=False)))
    return rows


async def _stored_session(store: ags.Store) -> str:
    entries: list[LogEntry] = [load_entry(*row) for row in _rows()]
    await store.create_session(SessionInfo("legacy", T, T))
    await store.append("legacy", 0, entries)
    return "legacy"


def test_the_fixture_holds_version_two_snapshots() -> None:
    snapshots = [load_entry(*row) for row in _rows() if row[0] == "runtime_context"]
    assert snapshots == [
        RuntimeContextSnapshot(0, PDF, T, (), None),
        RuntimeContextSnapshot(1, PERMISSIONS, T, (), None),
    ]


async def test_legacy_snapshots_replay_as_separate_user_messages_at_their_anchors(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(["Noted."])
    session_id = await _stored_session(runtime.store)
    session = await runtime.open_session(session_id)
    assert [s.placement for s in session.runtime_contexts()] == [None, None]
    await session.prompt("Shorter, please.")
    [request] = runtime.scripted.requests
    view = [(m.role, m.content) for m in request.messages]
    assert view == [
        ("user", "Summarise report.pdf for me."),
        ("user", PDF),
        ("assistant", "Revenue grew 12% in the second quarter."),
        ("user", "Now draft a reply </skill> to the board."),
        ("user", PERMISSIONS),
        ("assistant", "Here is a draft for the board."),
        ("user", "Shorter, please."),
    ]
    # The wire format merges the consecutive user messages into one turn.
    body = ags.lower(request, "anthropic-messages")
    assert [m["role"] for m in body["messages"]] == ["user", "assistant"] * 2 + ["user"]
    # Never in the transcript, never rewritten in the log.
    assert [m.content for m in session.messages][:4] == [
        "Summarise report.pdf for me.",
        "Revenue grew 12% in the second quarter.",
        "Now draft a reply </skill> to the board.",
        "Here is a draft for the board.",
    ]
    # Nothing was rewritten: the stored entries are the fixture's, field for field (their
    # stored form leaves out fields that hold their defaults, which reading fills in again).
    stored = [r.entry for r in await session.log(0, 6)]
    assert stored == [load_entry(*row) for row in _rows()]
    assert [load_entry(*dump_entry(e)) for e in stored] == stored


async def test_new_selections_join_legacy_ones_and_survive_a_reopen(
    make_runtime: Make, tmp_path: Path
) -> None:
    make_skills(tmp_path / "skills", "pdf")
    runtime = make_runtime(["One.", "Two."], skills_dirs=[tmp_path / "skills"])
    session_id = await _stored_session(runtime.store)
    session = await runtime.open_session(session_id)
    await session.prompt("Again with $pdf")
    write_skill(tmp_path / "skills", "pdf", skill_md("pdf", body="Changed since."))
    await runtime.close()

    again = make_runtime(["Three."], skills_dirs=[tmp_path / "skills"])
    reopened = await again.open_session(session_id)
    contexts = reopened.runtime_contexts()
    assert [(c.user_turn, c.placement) for c in contexts] == [(0, None), (1, None), (2, "user")]
    await reopened.prompt("And?")
    [request] = again.scripted.requests
    users = [m.content for m in request.messages if isinstance(m, ags.UserMessage)]
    assert users[:4] == [
        "Summarise report.pdf for me.",
        PDF,
        "Now draft a reply </skill> to the board.",
        PERMISSIONS,
    ]
    assert isinstance(users[4], str)
    assert "Follow the pdf procedure." in users[4] and users[4].endswith("\n\nAgain with $pdf")
    assert "Changed since." not in users[4]  # the saved text, not the file


async def test_a_replayed_legacy_snapshot_is_no_turn_for_the_window_or_compaction(
    make_runtime: Make,
) -> None:
    # Spec 000: legacy snapshots replay "at their original anchors". A window start or a
    # compaction cut at one would show it without the user message it belongs to.
    from agentsession.boundary import window_of
    from agentsession.compaction import plan_compaction
    from agentsession.projection import project

    runtime = make_runtime([])
    session_id = await _stored_session(runtime.store)
    records = await runtime.store.read(session_id, 0)
    view = project(records, None)
    replayed = [i for i, v in enumerate(view) if v.replayed]
    assert [view[i].message.content for i in replayed] == [PDF, PERMISSIONS]
    for cap in range(1, len(view) + 1):
        for step in (1, 2):
            config = ags.Config(max_transcript_messages=cap, window_step=step)
            window = window_of(view, config)
            assert window.indices, cap
            assert window.indices[0] not in replayed, (cap, step, window)
    for keep in (1, 2, 3):
        plan = plan_compaction(view, keep)
        if plan is not None:
            kept = [v for v in view if v.seqs[0] >= plan.cut_seq]
            assert not kept[0].replayed, keep
            assert kept[0].message.content != PERMISSIONS
