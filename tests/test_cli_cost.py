"""``agentsession cost``, ``/usage`` in chat and the report: the totals of ``session.cost()``.

The session is made in this process with the scripted model under a priced model's name and a
profile that reports usage (its figures are then taken as the provider's); the commands run in
this process on the same SQLite file.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import agentsession as ags
from agentsession.ledger import cost_lines

from .cli_inprocess import cli_here

PRICED = "anthropic:claude-opus-4-8"


def answer(request: ags.Request) -> str:
    """The scripted model: a title, a summary, or an answer, by the request's instructions."""
    names = [name for name, _ in request.system]
    if names == ["title"]:
        return "Two questions"
    if names == ["compaction"]:
        return "## Goal\nanswer questions"
    return f"answer {len(request.messages)}"


async def priced_session(tmp_path: Path, db: Path) -> ags.CostSummary:
    """Three turns, the title the model makes and a compaction: five billed calls."""
    model = ags.ScriptedModel(
        answer,
        name=PRICED,
        profile=ags.ModelProfile(provider="anthropic", reports_usage=True),
    )
    async with ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        project_dir=tmp_path,
        instructions="Follow the house rules. " * 400,  # every request is over the miss slack
        config=ags.Config(titles=True, keep_user_turns=1),
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("one question")
        assert await session.named() == "Two questions"
        await session.prompt("another question")
        assert await session.compact()
        await session.prompt("a third question")
        (tmp_path / "id").write_text(session.id)
        compaction = [
            r.seq
            for r in await session.log()
            if isinstance(r.entry, ags.log.SideCall) and r.entry.purpose == "compaction"
        ]
        (tmp_path / "compaction").write_text(json.dumps(compaction))
        return session.cost()


def test_cost_usage_and_report_agree(tmp_path: Path) -> None:
    # Not async: the chat below sets a signal handler for Ctrl-C, which only the main thread may.
    db = tmp_path / "s.db"
    summary = asyncio.run(priced_session(tmp_path, db))
    session_id = (tmp_path / "id").read_text()
    assert summary.total_usd is not None and summary.total_usd > 0
    total = f"${summary.total_usd:,.4f}"

    as_json = cli_here(tmp_path, "--db", str(db), "cost", session_id, "--json")
    assert as_json.code == 0, as_json.err
    (row,) = [json.loads(line) for line in as_json.out.splitlines()]
    assert row["id"] == session_id
    assert row["total_usd"] == summary.total_usd
    assert row["uncached_usd"] == summary.uncached_usd
    assert row["requests"] == 5 and row["estimated"] == 0  # three turns, a title, a summary
    assert row["by_model"][PRICED]["input_tokens"] == summary.by_model[PRICED].input_tokens
    # Each cache miss with its cause and cost, as ``session.cost().misses`` has it.
    assert [(m["seq"], m["cause"], m["usd"]) for m in row["misses"]] == [
        (m.seq, m.cause, m.usd) for m in summary.misses
    ]
    # the summary request reads nothing of the cache here (the model reports no cached
    # tokens): its miss is listed like a turn's, under the compaction call's seq
    (compaction,) = json.loads((tmp_path / "compaction").read_text())
    assert compaction in [m["seq"] for m in row["misses"]]

    text = cli_here(tmp_path, "--db", str(db), "cost", session_id[:8])  # a prefix, as everywhere
    assert text.code == 0, text.err
    assert f"session {session_id}" in text.out
    for line in cost_lines(summary):
        assert line in text.out

    every = cli_here(tmp_path, "--db", str(db), "cost", "--all")
    assert every.code == 0, every.err
    assert f"\n1 session: {total}" in every.out  # one session is not "all 1 sessions"

    out = tmp_path / "report.html"
    report = cli_here(tmp_path, "--db", str(db), "report", session_id, "-o", str(out))
    assert report.code == 0, report.err
    html = out.read_text(encoding="utf-8")
    assert f"id='cost-total'>{total}<" in html
    assert f"id='cache-misses'>{len(summary.misses):,} · " in html

    chat = cli_here(
        tmp_path,
        "--db",
        str(db),
        "chat",
        "--session",
        session_id,
        "--model",
        "scripted:demo",
        stdin="/usage\n",
    )
    assert chat.code == 0, chat.err
    assert cost_lines(summary)[1] in chat.err


def test_cost_needs_an_id_or_all(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert cli_here(tmp_path, "--db", str(db), "run", "a b").code == 0
    both = cli_here(tmp_path, "--db", str(db), "cost")
    assert both.code == 2 and "needs a session ID or --all" in both.err  # a misuse: as argparse
    unpriced = cli_here(tmp_path, "--db", str(db), "cost", "--all")
    assert unpriced.code == 0, unpriced.err
    assert "no price" in unpriced.out
    # With no priced session the total is not a made-up $0.0000.
    assert "\n1 session: no price" in unpriced.out and "all 1 sessions" not in unpriced.out
    assert "$0.0000" not in unpriced.out
    assert cli_here(tmp_path, "--db", str(db), "run", "c d").code == 0
    two = cli_here(tmp_path, "--db", str(db), "cost", "--all")
    assert "all 2 sessions: no price" in two.out


def test_cost_of_an_id_without_a_database_is_an_error_as_show_says(tmp_path: Path) -> None:
    """No database: ``--all`` has nothing to price (exit 0); an ID names nothing there (exit 2)."""
    db = tmp_path / "none.db"
    everything = cli_here(tmp_path, "--db", str(db), "cost", "--all")
    assert everything.code == 0 and "no sessions yet" in everything.err
    one = cli_here(tmp_path, "--db", str(db), "cost", "3f2a9c1d")
    shown = cli_here(tmp_path, "--db", str(db), "show", "3f2a9c1d")
    assert one.code == shown.code == 2
    assert one.err == shown.err and "no session database" in one.err
    assert not db.exists()
