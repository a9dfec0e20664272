"""How long the HTML report of a long session takes, and whether a browser opens it easily.

A scripted session is built on SQLite until its log holds ``--entries`` entries (tool calls in
most turns, a context change every 25 turns, the default window of 60 messages). Then, each
measured on its own: ``session.inspect()`` (every dispatched request rebuilt from the log and
measured), ``render_report`` (the HTML), the whole ``agentsession report`` command in a new
process, and headless Chromium loading the file and running its script (``--dump-dom``), when
Chromium is installed. Wall-clock seconds on the machine it runs on; run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import agentsession as ags
from agentsession.inspection.report import render_report


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"the value of {key} is {len(key) * 7}"


def replies(request: ags.Request) -> Any:
    last = request.messages[-1]
    if isinstance(last, ags.UserMessage):
        n = int(str(last.content).split()[1].rstrip(":"))
        if n % 4:
            return [ags.ToolCall("lookup", {"key": f"k{n}"})]
    return "Here is what I found, in a few sentences of ordinary length for an answer."


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


async def inspect(db: Path, session_id: str) -> tuple[ags.Session, Any, float]:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db), model=ags.ScriptedModel(replies), tools=[lookup]
    )
    session = await runtime.open_session(session_id)
    started = time.perf_counter()
    inspection = await session.inspect()
    elapsed = time.perf_counter() - started
    await runtime.close()
    return session, inspection, elapsed


def chromium_load(page: Path) -> float | None:
    chromium = shutil.which("chromium")
    if chromium is None:
        return None
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
    assert 'data-ready="yes"' in done.stdout, "the report's script did not finish"
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--entries", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        started = time.perf_counter()
        session_id, turns = asyncio.run(build(db, args.entries))
        built = time.perf_counter() - started
        _, inspection, inspected = asyncio.run(inspect(db, session_id))
        started = time.perf_counter()
        html = render_report(inspection, generated=datetime.now(UTC).isoformat(), version="bench")
        rendered = time.perf_counter() - started
        page = Path(tmp) / "report.html"
        page.write_text(html, encoding="utf-8")
        started = time.perf_counter()
        command = [sys.executable, "-m", "agentsession", "--db", str(db), "report", session_id]
        subprocess.run([*command, "-o", str(Path(tmp) / "cli.html")], check=True)
        whole = time.perf_counter() - started
        loaded = chromium_load(page)
    print(
        f"session: {inspection.entries:,} log entries, {turns:,} turns, "
        f"{len(inspection.requests):,} requests, {len(inspection.epochs):,} epochs "
        f"(built in {built:.1f} s)"
    )
    print(f"session.inspect():          {inspected:6.2f} s")
    print(f"render_report():            {rendered:6.2f} s")
    print(f"agentsession report (CLI):  {whole:6.2f} s  (a new process, everything included)")
    print(f"report size:                {len(html.encode()) / 1e6:6.2f} MB")
    if loaded is None:
        print("chromium load:              (chromium is not installed)")
    else:
        print(f"chromium load + script:     {loaded:6.2f} s  (headless, --dump-dom)")


if __name__ == "__main__":
    main()
