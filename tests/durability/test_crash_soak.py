"""The crash soak in CI: 200 SIGKILLs on SQLite, 50 on PostgreSQL, then every check.

Worker processes run scripted sessions with tools and are killed at random moments; each next
run reopens, recovers and continues; a last run finishes every session begun (see ``soak``).
Nothing committed may be lost, no committed tool call may run twice, every dispatched request
must rebuild exactly from the log and pass all four wire formats' rules, and every
mid-conversation change must match its checkpoint hash. ``benchmarks/crash_soak.py`` runs the
same harness with more kills.
"""

from __future__ import annotations

import contextlib
import signal
import sqlite3
from pathlib import Path

import pytest

from ..store import pg
from .soak import SoakPlan, SoakReport, run_soak, table

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL and fork")


def assert_clean(report: SoakReport, kills: int) -> None:
    shown = table(report, "crash soak") + "\n" + "\n".join(report.details[:20])
    assert report.failures() == dict.fromkeys(report.failures(), 0), shown
    assert report.kills == kills, shown
    # The kills landed everywhere a turn can be: in a model call, around tools, between turns,
    # and the next runs found unfinished turns to recover.
    assert len(report.landed) >= 4, shown
    assert report.recoveries >= kills // 5 and report.interrupted > 0, shown
    assert report.sessions >= kills // 4 and report.requests > report.sessions, shown


def test_crash_soak_on_sqlite(tmp_path: Path) -> None:
    plan = SoakPlan(db=str(tmp_path / "soak.db"), folder=tmp_path, kills=200, seed=1)
    report = run_soak(plan)
    assert_clean(report, 200)
    with contextlib.closing(sqlite3.connect(tmp_path / "soak.db")) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] >= report.sessions


@pytest.mark.postgres
def test_crash_soak_on_postgres(tmp_path: Path, pg_dsn: str) -> None:
    plan = SoakPlan(db=pg_dsn, folder=tmp_path, kills=50, seed=2, postgres=True)
    report = run_soak(plan)
    assert_clean(report, 50)
    assert pg.run(pg_dsn, "SELECT count(*) FROM sessions")[0][0] >= report.sessions
