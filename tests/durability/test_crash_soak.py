"""The crash soak in CI: at least 200 SIGKILLs on SQLite, 50 on PostgreSQL, then every check.

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
from .soak import TURN_POINTS, SoakPlan, SoakReport, run_soak, table

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL and fork")


def assert_clean(report: SoakReport, plan: SoakPlan) -> None:
    """Only what must hold, whatever the machine's load: every must-be-0 count is 0, and the
    kills reached every kind of point a turn passes (the soak runs until they have)."""
    shown = table(report, "crash soak") + "\n" + "\n".join(report.details[:20])
    assert report.failures() == dict.fromkeys(report.failures(), 0), shown
    assert report.kills >= plan.kills, shown
    missing = sorted(set(TURN_POINTS) - set(report.landed))
    assert missing == [], f"no kill landed after {missing} in {plan.time_limit}s\n{shown}"
    # A kill in the middle of a turn leaves it unfinished: a later run must have finished it,
    # and the step cut in flight is recorded as interrupted.
    assert report.recoveries > 0 and report.interrupted > 0, shown


def test_crash_soak_on_sqlite(tmp_path: Path) -> None:
    plan = SoakPlan(
        db=str(tmp_path / "soak.db"), folder=tmp_path, kills=200, seed=1, must_land=TURN_POINTS
    )
    report = run_soak(plan)
    assert_clean(report, plan)
    with contextlib.closing(sqlite3.connect(tmp_path / "soak.db")) as db:
        assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] >= report.sessions


@pytest.mark.postgres
def test_crash_soak_on_postgres(tmp_path: Path, pg_dsn: str) -> None:
    plan = SoakPlan(
        db=pg_dsn, folder=tmp_path, kills=50, seed=2, postgres=True, must_land=TURN_POINTS
    )
    report = run_soak(plan)
    assert_clean(report, plan)
    assert pg.run(pg_dsn, "SELECT count(*) FROM sessions")[0][0] >= report.sessions
