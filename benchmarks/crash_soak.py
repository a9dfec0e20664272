"""The crash soak with many kills: what survives 1,000 SIGKILLs at random moments.

The harness of ``tests/durability/test_crash_soak.py`` (``tests/durability/soak.py``): worker
processes run scripted sessions with tools and are SIGKILLed after a random delay; each next run
reopens, recovers and continues; a last run finishes every session begun. Then every log is
checked and the counts printed as a table — every count below the recoveries should be 0. The
SQLite run leaves its counts in ``benchmarks/results/crash_soak.json`` (the PostgreSQL run in
``crash_soak_postgres.json``) for the README table.

Usage, from the repository root::

    .venv/bin/python benchmarks/crash_soak.py --kills 1000
    .ci/with-postgres .venv/bin/python benchmarks/crash_soak.py --kills 1000 --postgres

``--postgres`` runs against the server in ``AGENTSESSION_TEST_PG_DSN`` (``.ci/with-postgres``
starts a throwaway one), in a schema of its own that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import save
from tests.durability.soak import SoakPlan, run_soak, table
from tests.store import pg


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--postgres", action="store_true", help="use AGENTSESSION_TEST_PG_DSN")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crash-soak-") as folder:
        started = time.monotonic()
        if args.postgres:
            dsn = os.environ.get(pg.ENV_DSN)
            if not dsn:
                parser.error(f"--postgres needs {pg.ENV_DSN} (run under .ci/with-postgres)")
            with pg.schema(dsn) as schema_dsn:
                plan = SoakPlan(schema_dsn, Path(folder), args.kills, seed=args.seed, postgres=True)
                report = run_soak(plan)
        else:
            plan = SoakPlan(str(Path(folder) / "soak.db"), Path(folder), args.kills, seed=args.seed)
            report = run_soak(plan)
        seconds = time.monotonic() - started
    label = f"{'PostgreSQL' if args.postgres else 'SQLite'}, seed {args.seed}"
    print(table(report, label))
    print(f"\n{seconds:.0f} s in all")
    for line in report.details[:20]:
        print(line)
    # Kills and recoveries, then every count that must be 0 (SoakReport.failures names them).
    figures: dict[str, object] = {
        "store": "PostgreSQL" if args.postgres else "SQLite",
        "kills": report.kills,
        "recoveries": report.recoveries,
        **report.failures(),
        "seconds": round(seconds),
    }
    command = " ".join(["benchmarks/crash_soak.py", *sys.argv[1:]])
    save("crash_soak_postgres" if args.postgres else "crash_soak", figures, command=command)
    return 0 if not any(report.failures().values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
