"""``agentsession info`` and ``agentsession models``: what this installation can do, offline.

``info`` names the version, the paths, the model a new session would talk to (and why), the
configuration file and the installed extras; ``models`` lists the models the configuration
file and the environment make usable, each with the reason it cannot be used here (a missing
key names its variable). Neither connects to anything.
"""

from __future__ import annotations

import platform
from pathlib import Path

from ..hygiene import visible_line
from ..store.sqlite import default_path
from .invocation import (
    Invocation,
    history_path,
    info_lines,
    installed_extras,
    is_postgres,
    shown_location,
    version,
)
from .modelchoice import DEMO_MODEL
from .output import JsonOutput

__all__ = ["info", "models"]


def _exists(location: str) -> bool:
    return Path(location).exists()


async def info(inv: Invocation) -> int:
    """``info``: version, paths, the configured model, installed extras."""
    config = inv.choice.config
    configured = inv.configured()
    if isinstance(inv.output, JsonOutput):
        location = inv.location
        spec, _ = (configured, None) if configured else inv.choice.default_model()
        inv.output.emit(
            "info",
            version=version(),
            python=platform.python_version(),
            database={
                "location": shown_location(location),
                "postgres": is_postgres(location),
                "exists": is_postgres(location) or _exists(location),
            },
            default_database=str(default_path()),
            chat_history=str(history_path()),
            model=spec,
            model_configured=configured is not None,
            config_file={"path": str(config.path), "exists": config.exists},
            extras=installed_extras(),
        )
        return 0
    if configured is None:
        spec, why = inv.choice.default_model()
        if spec != DEMO_MODEL and why:
            configured = f"{spec} (not configured: {why.partition(':')[0]})"
    lines = info_lines(inv.location, configured)
    state = "exists" if config.exists else "none"
    lines.append(("config file", f"{config.path} ({state})"))
    width = max(len(label) for label, _ in lines)
    for label, value in lines:
        print(visible_line(f"{label:<{width}}  {value}"))
    return 0


async def models(inv: Invocation) -> int:
    """``models``: each usable model name, what it is, and why it cannot be used."""
    rows = inv.choice.models()
    if isinstance(inv.output, JsonOutput):
        for row in rows:
            inv.output.emit(
                "model", name=row.name, what=row.what, usable=row.usable, problem=row.problem
            )
        return 0
    default, _ = inv.choice.default_model()
    configured = inv.configured() or default
    width = max(len(row.name) for row in rows)
    for row in rows:
        mark = "*" if row.name == configured else " "
        state = "ok" if row.usable else f"not usable: {row.problem}"
        print(visible_line(f"{mark} {row.name:<{width}}  {row.what} · {state}"))
    config = inv.choice.config
    where = f"{config.path}" + ("" if config.exists else " (not created yet)")
    inv.output.note(f"config file: {where}; * marks the model a new session talks to")
    return 0
