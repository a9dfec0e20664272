"""Figure 4 — start-up: importing the package, and reopening a long session in a new process.

1. ``python -X importtime -c "import agentsession"``: the package's cumulative import time (the
   median of ``--repeat`` runs), and which provider SDKs are in ``sys.modules`` after the import
   and after a ``Runtime`` is made with the scripted model: none may be, until a model that needs
   one is made (checked with ``ags.get_model("openai:…")`` last).
2. The command line's quick answers: CPU time (user + system) per run of
   ``agentsession --version`` and ``--help``, beside ``--version`` answered by the parser as it
   was before the console script answered it itself, and beside ``python -c pass``;
   ``--runs`` rounds, the commands interleaved (``--cli-only``: this alone).
3. Reopen + next request: a session of ``--items`` transcript items (a million by default,
   written straight into the store in transactions of 20,000 entries, see
   ``_systems.grow_agentsession``: about a minute and a half) is opened by a fresh process, which
   then builds the next request (``preview_request``: everything a prompt reads before the
   provider call). The child reports the time after its imports (wall, and CPU time of all its
   threads) and the resident memory it added.

Usage: ``python benchmarks/startup.py [--items 1000000]``; writes
``benchmarks/results/startup.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _results import save
from _systems import AgentSession, grow_agentsession

SDKS = ("openai", "anthropic", "google.genai", "mcp", "tiktoken", "httpx")

CHILD = r"""
import asyncio, json, sys, time
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
import agentsession as ags
path, sid = sys.argv[1], sys.argv[2]
async def main():
    base = rss()
    started, cpu = time.perf_counter(), time.process_time()
    runtime = ags.Runtime(store=ags.SQLiteStore(path), model=ags.ScriptedModel(["ok"]))
    session = await runtime.open_session(sid)
    opened = time.perf_counter()
    request = await session.preview_request("next question")
    done, cpu_done = time.perf_counter(), time.process_time()
    out = {
        "cpu_ms": (cpu_done - cpu) * 1000,
        "open_ms": (opened - started) * 1000,
        "next_request_ms": (done - opened) * 1000,
        "total_ms": (done - started) * 1000,
        "added_rss_mib": (rss() - base) / 2**20,
        "messages": len(session.messages),
        "request_messages": len(request.messages),
    }
    await runtime.close()
    print(json.dumps(out))
asyncio.run(main())
"""

SDK_CHECK = r"""
import sys, json
import agentsession as ags
sdks = %r
after_import = [m for m in sdks if m in sys.modules]
runtime = ags.Runtime(store=ags.MemoryStore(), model=ags.ScriptedModel(["ok"]))
after_runtime = [m for m in sdks if m in sys.modules]
try:
    ags.get_model("openai:gpt-4.1")
except Exception:
    pass
after_model = [m for m in sdks if m in sys.modules]
print(json.dumps({"after_import": after_import, "after_runtime": after_runtime,
                  "after_openai_model": after_model}))
"""


def import_time(repeat: int) -> dict[str, Any]:
    """The package's cumulative import time by ``-X importtime`` (median), and the top modules."""
    totals: list[float] = []
    wall: list[float] = []
    last = ""
    # A user's import reads the bytecode that Python wrote at the first one (pip writes it at
    # install, too); where the environment forbids writing it, every import would compile the
    # source instead, and the figure would measure the compiler. One import allowed to write
    # the cache comes first, for the package and each module it pulls in.
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", "import agentsession"], env=env, check=True)
    for _ in range(repeat):
        run = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import agentsession"],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        last = run.stderr
        for line in run.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*agentsession$", line)
            if match:
                totals.append(int(match.group(2)) / 1e6)
        timed = subprocess.run(
            [
                sys.executable,
                "-c",
                "import time; t = time.perf_counter(); import agentsession;"
                " print(time.perf_counter() - t)",
            ],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        wall.append(float(timed.stdout))
    heavy: list[tuple[str, float]] = []
    for line in last.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)$", line)
        if match and len(match.group(3)) <= 3:  # the package's direct imports
            heavy.append((match.group(4), int(match.group(2)) / 1e6))
    heavy.sort(key=lambda item: -item[1])
    return {
        "importtime_s": statistics.median(totals),
        "import_wall_s": statistics.median(wall),
        "largest": heavy[:8],
    }


def cli_cpu(runs: int) -> dict[str, float]:
    """CPU milliseconds per run (user + system of the child) of each quick answer, interleaved."""
    script = str(Path(sys.executable).with_name("agentsession"))
    parser = "import re, sys; from agentsession.cli.app import main; main()"
    commands = {
        "version": [script, "--version"],
        "version_through_parser": [sys.executable, "-c", parser, "--version"],
        "help": [script, "--help"],
        "python_alone": [sys.executable, "-c", "pass"],
    }
    spent = dict.fromkeys(commands, 0.0)
    for round_ in range(runs + 1):  # the first round warms the bytecode cache, uncounted
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run(command, stdout=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if round_:
                spent[name] += (after.ru_utime - before.ru_utime) + (
                    after.ru_stime - before.ru_stime
                )
    return {f"{name}_cpu_ms": round(total / runs * 1000, 1) for name, total in spent.items()}


async def build(path: Path, items: int) -> str:
    """A session of about ``items`` transcript items (four per turn) in ``path``."""
    system = AgentSession()
    await system.setup(path.parent, 1)
    session_id: str = system.session.id
    await system.close()
    import agentsession as ags

    store = ags.SQLiteStore(path.parent / "agentsession.db")
    await grow_agentsession(store, session_id, max(1, items // 4 - 1))
    await store.close()
    return session_id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--runs", type=int, default=20, help="rounds of the command line")
    parser.add_argument("--cli-only", action="store_true", help="the command line alone")
    args = parser.parse_args()
    if args.cli_only:
        print(json.dumps(cli_cpu(args.runs), indent=1))
        return
    figures: dict[str, Any] = {"import": import_time(args.repeat), "cli": cli_cpu(args.runs)}
    check = subprocess.run(
        [sys.executable, "-c", SDK_CHECK % (SDKS,)], capture_output=True, text=True, check=True
    )
    figures["sdks"] = json.loads(check.stdout)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agentsession.db"
        session_id = asyncio.run(build(path, args.items))
        runs = []
        for _ in range(args.repeat):
            child = subprocess.run(
                [sys.executable, "-c", CHILD, str(path), session_id],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(child.stdout))
    figures["reopen"] = {
        key: statistics.median(r[key] for r in runs)
        for key in ("open_ms", "next_request_ms", "total_ms", "cpu_ms", "added_rss_mib")
    }
    # The fastest run: what the work costs when the (shared, noisy) machine lets it run.
    figures["reopen"]["fastest_total_ms"] = min(r["total_ms"] for r in runs)
    figures["reopen"]["items"] = runs[0]["messages"]
    figures["reopen"]["request_messages"] = runs[0]["request_messages"]
    print(json.dumps(figures, indent=1))
    save("startup", figures, command=" ".join(["python benchmarks/startup.py", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
