"""Figure 4 on PostgreSQL — reopening a million-item session in a fresh process.

A session of ``--items`` transcript items (four per turn: the first turn's entries copied with
fresh call ids through ``PostgresStore.append`` in batches of 20,000 entries, then the epoch a
real session holds, its history starting at the last 15 turns; see ``_systems.grow_agentsession``)
is built in a fresh database. Then, ``--repeat`` times, a fresh process imports agentsession and
the driver, and times ``open_session`` + the next request (``preview_request``: everything a
prompt reads before the provider call), connecting included, and the resident memory it added.
The plans of the statements that read are printed (``EXPLAIN``): each must be an index scan.

Usage: ``.ci/with-postgres python benchmarks/pg_startup.py [--items 1000000]``; writes
``benchmarks/results/pg_startup.json``. ``--keep NAME`` builds into database ``NAME`` and leaves
it there; a later run on the same server with the same name reuses the session built there
(the build takes minutes; the timed reopens take seconds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _pg import PgAgentSession, fresh_database, grow_agentsession, server_dsn
from _results import save

CHILD = r"""
import asyncio, json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
before_driver = rss()
import agentsession as ags
import psycopg, psycopg_pool  # the driver's import is the process's, not the open's
dsn, sid = sys.argv[1], sys.argv[2]
async def main():
    base = rss()
    cpu = time.process_time()
    started = time.perf_counter()
    store_class = ags.PostgresStore  # imports the store's modules (timed: part of the open)
    imported = time.perf_counter()
    runtime = ags.Runtime(store=store_class(dsn), model=ags.ScriptedModel(["ok"]))
    session = await runtime.open_session(sid)
    opened = time.perf_counter()
    request = await session.preview_request("next question")
    done = time.perf_counter()
    cpu = time.process_time() - cpu
    out = {
        "cpu_ms": cpu * 1000,
        "store_import_ms": (imported - started) * 1000,
        "open_ms": (opened - started) * 1000,
        "next_request_ms": (done - opened) * 1000,
        "total_ms": (done - started) * 1000,
        "added_rss_mib": (rss() - base) / 2**20,
        "import_rss_mib": (base - before_driver) / 2**20,
        "messages": len(session.messages),
        "request_messages": len(request.messages),
    }
    await runtime.close()
    print(json.dumps(out))
asyncio.run(main())
"""

#: The same, once more, with every store call timed: where the milliseconds go.
PROFILE = r"""
import asyncio, inspect, json, sys, time
import agentsession as ags, psycopg, psycopg_pool
from agentsession.store.postgres import PostgresStore
from agentsession.store._postgres_now import NowReader
calls = []
def timed(cls, name):
    f = getattr(cls, name)
    def note(t, args):
        kinds = [a for a in args[2:] if isinstance(a, (list, tuple))]
        what = ",".join(map(str, kinds[0]))[:40] if kinds else ""
        calls.append([f"{cls.__name__}.{name}({what})", (time.perf_counter() - t) * 1000])
    if inspect.iscoroutinefunction(f):
        async def g(*a, **k):
            t = time.perf_counter()
            try:
                return await f(*a, **k)
            finally:
                note(t, a)
    else:
        def g(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                note(t, a)
    setattr(cls, name, g)
for n in ["get_session", "read", "last", "lease_of", "_read_view"]:
    timed(PostgresStore, n)
for n in ["prepare", "session", "lease", "read", "last", "count", "view"]:
    timed(NowReader, n)
dsn, sid = sys.argv[1], sys.argv[2]
async def main():
    t = time.perf_counter()
    runtime = ags.Runtime(store=ags.PostgresStore(dsn), model=ags.ScriptedModel(["ok"]))
    session = await runtime.open_session(sid)
    await session.preview_request("next question")
    total = (time.perf_counter() - t) * 1000
    await runtime.close()
    t = time.perf_counter()
    psycopg.connect(dsn).close()
    connect = (time.perf_counter() - t) * 1000
    print(json.dumps({"total_ms": total, "calls": calls, "connect_ms": connect}))
asyncio.run(main())
"""

#: The statements a reopen runs: the snapshot its first call takes, in one round trip.
PLANS = {
    "schema version": "_VERSION",
    "lease (by the server's clock)": "_LEASE",
    "each kind's kept count and newest entry (kind index, one descent per kind)": "_NEWEST",
    "every entry of the rare kinds (kind index)": "_RARE",
    "the newest 256 entries (primary key, backwards)": "_TAIL",
    "the kept texts the newest epoch names": "_TEXTS",
}


async def build(dsn: str, items: int) -> tuple[str, float]:
    """A session of about ``items`` transcript items (four per turn); its id and build seconds."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        system = PgAgentSession(dsn)
        await system.setup(Path(tmp), 1)
        session_id: str = system.session.id
        await grow_agentsession(system.runtime.store, session_id, max(1, items // 4 - 1))
        await system.close()
    return session_id, time.perf_counter() - started


def kept(name: str, items: int) -> tuple[str, str | None]:
    """Database ``name``'s DSN (created when missing) and the session built there, if any."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    server = server_dsn()
    with psycopg.connect(server, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(server)
    params["dbname"] = name
    dsn = make_conninfo("", **params)
    with psycopg.connect(dsn, autocommit=True) as conn:
        if conn.execute("SELECT to_regclass('sessions') IS NOT NULL").fetchone() != (True,):
            return dsn, None
        # A session of this size: its transcript items are about 2/3 of its entries.
        row = conn.execute(
            "SELECT session_id FROM sessions WHERE next_seq >= %s ORDER BY next_seq LIMIT 1",
            (items,),
        ).fetchone()
    return dsn, None if row is None else str(row[0])


def explain(dsn: str, session_id: str) -> dict[str, str]:
    """The plan of each statement a reopen runs (``EXPLAIN ANALYZE``, costs and timing off)."""
    import psycopg

    from agentsession.store import _postgres_snapshot as snapshot

    plans: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        # What autovacuum does soon after a bulk load anyway (the visibility map lets a count
        # read the kind index alone); a session that grew over months is long vacuumed.
        conn.execute("VACUUM ANALYZE")
        for title, name in PLANS.items():
            query: str = getattr(snapshot, name)
            params = (session_id,) * query.count("%s")
            rows = conn.execute(
                "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) " + query, params
            ).fetchall()
            plans[title] = "\n".join(str(r[0]) for r in rows)
    return plans


def bytecode_env(cache: str, *, compiling: bool) -> dict[str, str]:
    """The children's environment: this package's bytecode cached in folder ``cache``, or not.

    An installed package has its bytecode (the installer compiles it, or the first import writes
    it). Without it (``compiling``, as round two measured on a machine that writes none) every
    module of this package the open imports lazily, the store's own among them, is compiled
    from its source within the timed span; the standard library and the driver keep the
    bytecode their installation left. The figure is measured both ways.
    """
    env = dict(os.environ)
    env.pop("PYTHONPYCACHEPREFIX", None)
    if compiling:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(Path(cache, "bytecode"))
    return env


def package_bytecode() -> bool:
    """Whether this package's source folder holds bytecode (then "compiling" finds it)."""
    import agentsession

    return any(Path(agentsession.__file__).parent.rglob("__pycache__"))


def child(env: dict[str, str], dsn: str, session_id: str) -> dict[str, Any]:
    """One fresh process's timed reopen."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, dsn, session_id],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keep", metavar="NAME", help="build into database NAME, or reuse it")
    args = parser.parse_args()
    found: str | None = None
    build_s: float | None = None  # None: the session was reused, not built
    if args.keep:
        dsn, found = kept(args.keep, args.items)
    else:
        dsn = fresh_database("pg_startup")
    if found is None:
        session_id, build_s = asyncio.run(build(dsn, args.items))
        print(f"built {args.items:,} items in {build_s:.1f} s")
    else:
        session_id = found
        print(f"reusing session {session_id} in database {args.keep}")
    plans = explain(dsn, session_id)
    for title, plan in plans.items():
        print(f"-- {title}\n{plan}")
    runs: dict[str, list[dict[str, Any]]] = {"cached": [], "compiling": []}
    with tempfile.TemporaryDirectory() as cache:
        conditions = {
            "cached": bytecode_env(cache, compiling=False),
            "compiling": bytecode_env(cache, compiling=True),
        }
        child(conditions["cached"], dsn, session_id)  # writes the bytecode cache, untimed
        for _ in range(args.repeat):  # alternated: both see the same moments of load
            for condition, env in conditions.items():
                runs[condition].append(child(env, dsn, session_id))
                print(condition, runs[condition][-1])
        profiled = subprocess.run(
            [sys.executable, "-c", PROFILE, dsn, session_id],
            capture_output=True,
            text=True,
            check=True,
            env=conditions["cached"],
        )
    profile = json.loads(profiled.stdout)
    for name, ms in profile["calls"]:
        print(f"  {ms:7.2f} ms  {name}")
    print(f"  total {profile['total_ms']:.1f} ms; a new connection {profile['connect_ms']:.1f} ms")
    keys = (
        "open_ms",
        "next_request_ms",
        "total_ms",
        "cpu_ms",
        "store_import_ms",
        "added_rss_mib",
        "import_rss_mib",
    )
    figures: dict[str, Any] = {}
    for condition, key in (("cached", "reopen"), ("compiling", "reopen_compiling")):
        done = runs[condition]
        figures[key] = {k: statistics.median(r[k] for r in done) for k in keys}
        figures[key]["items"] = done[0]["messages"]
        figures[key]["request_messages"] = done[0]["request_messages"]
        # The machine's other load swings the wall time: the fastest run beside the median.
        figures[key]["fastest_total_ms"] = min(r["total_ms"] for r in done)
    figures["fastest_total_ms"] = figures["reopen"]["fastest_total_ms"]
    figures.update(build_s=build_s, plans=plans, profile=profile)
    figures["reopen_compiling"]["package_bytecode_in_tree"] = package_bytecode()
    print(json.dumps(figures["reopen_compiling"], indent=1))
    print(json.dumps(figures["reopen"], indent=1))
    save(
        "pg_startup",
        figures,
        command=" ".join([".ci/with-postgres python benchmarks/pg_startup.py", *sys.argv[1:]]),
    )


if __name__ == "__main__":
    main()
