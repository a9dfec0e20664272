"""How long the HTML report of a long session takes, and whether a browser opens it easily.

A scripted session is built on SQLite until its log holds ``--entries`` entries (tool calls in
most turns, a context change every 25 turns, the default window of 60 messages); ``--db`` keeps
that database to measure again without building it. Then, each measured on its own:
``session.inspect()`` (every dispatched request rebuilt from the log and measured),
``render_report`` (the HTML), the whole ``agentsession report`` command in a new process (run
twice: first compiling every module it imports, the standard library's too, then with that
bytecode cached, as an installed package has it; the second is the figure), and headless
Chromium, when installed, opening the file ``--repeat`` times beside a blank page with the same
flags (``--dump-dom`` wall time; the difference is what the report adds to starting a
browser), with the page's own figure: milliseconds from navigation start until its script has
drawn and laid out the first screen (``data-ready-ms``; a report written before that mark
existed gets the same mark appended after its own script). Medians; wall-clock seconds on the
machine it runs on, with the CPU seconds beside them (on a busy machine wall time is mostly
waiting). The figures go to ``results/report_size.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _lookup import lookup, lookup_replies
from _results import save

import agentsession as ags
from agentsession.inspection.report import render_report

MARK = (
    "<script>void document.body.offsetHeight; document.documentElement.dataset.readyMs ="
    " String(Math.round(performance.now()));</script>"
)
BLANK = (
    "<!doctype html><html><body><script>document.documentElement.dataset.readyMs ="
    " String(Math.round(performance.now())); document.documentElement.dataset.ready = 'yes';"
    "</script></body></html>"
)


def _key_of(text: str) -> str | None:
    """Three turns in four call the tool (``turn N: …``)."""
    n = int(text.split()[1].rstrip(":"))
    return f"k{n}" if n % 4 else None


replies = lookup_replies(
    _key_of, "Here is what I found, in a few sentences of ordinary length for an answer."
)


async def build(db: Path, entries: int) -> tuple[str, int]:
    fact = {"value": 0}
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=ags.ScriptedModel(replies),
        tools=[lookup],
        components=[ags.ContextComponent("plugin.bench.n", lambda: f"build {fact['value']}")],
        config=ags.Config(retry_base_delay=0),
    )
    async with runtime:
        session = await runtime.create_session()
        turn = 0
        while (await runtime.store.get_session(session.id)).next_seq < entries:
            if turn % 25 == 24:
                fact["value"] += 1
            await session.prompt(f"turn {turn}: what is next?")
            turn += 1
        return session.id, turn


async def inspect(db: Path, session_id: str) -> tuple[ags.Session, Any, tuple[float, float]]:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db), model=ags.ScriptedModel(replies), tools=[lookup]
    )
    session = await runtime.open_session(session_id)
    started, cpu = time.perf_counter(), time.process_time()
    inspection = await session.inspect()
    elapsed = time.perf_counter() - started
    await runtime.close()
    return session, inspection, (elapsed, time.process_time() - cpu)


def cli_report(db: Path, session_id: str, target: Path, cache: Path) -> tuple[float, float]:
    """Wall and CPU seconds of ``agentsession report`` in a new process.

    The bytecode goes to ``cache`` (not beside the sources): the first run compiles every module
    it imports and writes it there, the next reads it, as an installed package does.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    command = [sys.executable, "-m", "agentsession", "--db", str(db), "report", session_id]
    started, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([*command, "-o", str(target)], check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)


def chromium_open(page: Path) -> tuple[float, int | None]:
    """Wall seconds of one headless ``--dump-dom`` of ``page``, and the page's ready mark (ms)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    with tempfile.TemporaryDirectory() as profile:
        started = time.perf_counter()
        done = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        elapsed = time.perf_counter() - started
    assert 'data-ready="yes"' in done.stdout, "the page's script did not finish"
    ready = re.search(r'data-ready-ms="(\d+)"', done.stdout)
    return elapsed, int(ready.group(1)) if ready else None  # None: a page without the mark


def chromium_figures(page: Path, repeat: int) -> dict[str, float | None] | None:
    """Medians over ``repeat`` alternating opens of the report and of a blank page."""
    if shutil.which("chromium") is None and shutil.which("chromium-browser") is None:
        return None
    blank = page.with_name("blank.html")
    blank.write_text(BLANK, encoding="utf-8")
    html = page.read_text(encoding="utf-8")
    if "readyMs" not in html:  # an older report: mark the end of its own script the same way
        page = page.with_name("marked.html")
        page.write_text(html.replace("</body>", f"{MARK}</body>"), encoding="utf-8")
    walls, readies, blank_walls = [], [], []
    for _ in range(repeat):
        wall, ready = chromium_open(page)
        walls.append(wall)
        if ready is not None:
            readies.append(ready / 1000)
        blank_walls.append(chromium_open(blank)[0])
    wall, empty = statistics.median(walls), statistics.median(blank_walls)
    return {
        "wall_s": wall,
        "blank_wall_s": empty,
        "added_s": wall - empty,
        "ready_s": statistics.median(readies) if readies else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="Chromium opens of each page, and runs of the command (bytecode cached)",
    )
    parser.add_argument("--db", type=Path, help="keep the built session here (reused if present)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "bench.db"
        marker = db.with_suffix(".session")
        started = time.perf_counter()
        if args.db and marker.exists():
            session_id, turns = marker.read_text().split()
        else:
            session_id, made = asyncio.run(build(db, args.entries))
            turns = str(made)
            marker.write_text(f"{session_id} {turns}")
        built = time.perf_counter() - started
        _, inspection, (inspected, inspected_cpu) = asyncio.run(inspect(db, session_id))
        started, cpu = time.perf_counter(), time.process_time()
        html = render_report(inspection, generated=datetime.now(UTC).isoformat(), version="bench")
        rendered, rendered_cpu = time.perf_counter() - started, time.process_time() - cpu
        page = Path(tmp) / "report.html"
        page.write_text(html, encoding="utf-8")
        cache = Path(tmp) / "bytecode"
        cold, cold_cpu = cli_report(db, session_id, Path(tmp) / "cli.html", cache)
        # One run is at the mercy of the machine's other work: the median of --repeat runs.
        runs = [
            cli_report(db, session_id, Path(tmp) / "cli.html", cache) for _ in range(args.repeat)
        ]
        whole = statistics.median(wall for wall, _ in runs)
        whole_cpu = statistics.median(cpu for _, cpu in runs)
        browser = chromium_figures(page, args.repeat)
    size = len(html.encode())
    print(
        f"session: {inspection.entries:,} log entries, {int(turns):,} turns, "
        f"{len(inspection.requests):,} requests, {len(inspection.epochs):,} epochs "
        f"(built or found in {built:.1f} s)"
    )
    print(f"session.inspect():          {inspected:6.2f} s  ({inspected_cpu:.2f} s CPU)")
    print(f"render_report():            {rendered:6.2f} s  ({rendered_cpu:.2f} s CPU)")
    print(
        f"agentsession report (CLI):  {whole:6.2f} s  ({whole_cpu:.2f} s CPU; a new process,"
        f" everything included, its bytecode cached; median of {len(runs)} runs)"
    )
    print(
        f"  the same, first run:      {cold:6.2f} s  ({cold_cpu:.2f} s CPU; no bytecode cached:"
        " every module compiled)"
    )
    print(f"report size:                {size / 1e6:6.2f} MB")
    if browser is None:
        print("chromium:                   (chromium is not installed)")
    else:
        print(
            f"chromium --dump-dom wall:   {browser['wall_s']:6.2f} s  (a blank page: "
            f"{browser['blank_wall_s']:.2f} s; the report adds {browser['added_s']:.2f} s)"
        )
        ready = browser["ready_s"]
        print(
            "page ready (in the page):   "
            + ("  (no mark)" if ready is None else f"{ready:6.2f} s")
            + "  (navigation start to first screen drawn and laid out)"
        )
    figures = {
        "entries": inspection.entries,
        "turns": int(turns),
        "requests": len(inspection.requests),
        "epochs": len(inspection.epochs),
        "inspect_s": inspected,
        "inspect_cpu_s": inspected_cpu,
        "render_s": rendered,
        "render_cpu_s": rendered_cpu,
        "cli_s": whole,
        "cli_cpu_s": whole_cpu,
        "cli_runs_cpu_s": [cpu for _, cpu in runs],
        "cli_cold_s": cold,
        "cli_cold_cpu_s": cold_cpu,
        "bytes": size,
        "chromium": browser,
    }
    argv = " ".join(a for a in sys.argv[1:])
    print(f"wrote {save('report_size', figures, command=f'benchmarks/report_size.py {argv}')}")


if __name__ == "__main__":
    main()
