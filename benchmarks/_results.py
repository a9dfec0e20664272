"""Where each figure script leaves its numbers: ``benchmarks/results/<name>.json``.

Each file holds the figures, the command that made them, the date and the machine, so
``report.py`` can rebuild the README table and the plots from them alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "system": f"{platform.system()} {platform.release()}",
    }


def save(name: str, figures: dict[str, Any], *, command: str) -> Path:
    """Write ``figures`` for ``name`` with the command, the date and the machine."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    data = {
        "name": name,
        "command": command,
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "figures": figures,
    }
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return path


def load(name: str) -> dict[str, Any] | None:
    """The saved figures of ``name``, or ``None`` when the script has not run yet."""
    path = RESULTS / f"{name}.json"
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def turn_cost_arguments(description: str) -> argparse.Namespace:
    """The options of the turn-cost figures (SQLite and PostgreSQL measure the same way)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--sizes", default="10,100,1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds per system and size")
    parser.add_argument(
        "--whole-history-max",
        type=int,
        default=10_000,
        help="largest N for the systems that read every stored item at each turn",
    )
    return parser.parse_args()
