"""Which module does each command's work: loaded when that command runs, not before.

The parser (``app``) knows every command's name, help and arguments without these modules, so
``agentsession --help`` loads none of them and ``report`` loads the inspection commands but not
the chat's terminal display, the session management or the server. Each entry names a module of
``agentsession.cli`` and the coroutine in it that takes the ``Invocation`` and returns the exit
code.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from .invocation import Invocation

__all__ = ["IMPLEMENTATIONS", "implementation", "preload"]

#: Command name → (module of this package, coroutine in it).
IMPLEMENTATIONS: dict[str, tuple[str, str]] = {
    "run": ("commands", "run"),
    "chat": ("commands", "chat_command"),
    "retry": ("commands", "retry"),
    "sessions": ("commands", "sessions"),
    "show": ("commands", "show"),
    "context": ("inspecting", "context"),
    "request": ("inspecting", "request"),
    "report": ("inspecting", "report"),
    "models": ("overview", "models"),
    "info": ("overview", "info"),
    "export": ("portable", "export"),
    "import": ("portable", "import_"),
    "search": ("portable", "search"),
    "delete": ("manage", "delete"),
    "rename": ("manage", "rename"),
    "fork": ("manage", "fork"),
    "skills": ("manage", "skills"),
    "trust": ("manage", "trust"),
    "upgrade": ("manage", "upgrade"),
    "cost": ("cost", "cost"),
    "serve": ("serve", "serve"),
}


def implementation(name: str) -> Callable[[Invocation], Awaitable[int]]:
    """The coroutine that runs command ``name``, its module imported now."""
    module, attribute = IMPLEMENTATIONS[name]
    found = getattr(importlib.import_module(f".{module}", __package__), attribute)
    return cast("Callable[[Invocation], Awaitable[int]]", found)


def preload(name: str) -> None:
    """Import command ``name``'s module now (``main`` does, with the collector paused).

    A module that fails to import is left alone: the command imports it again and its failure
    is told as any other.
    """
    with contextlib.suppress(Exception):
        implementation(name)
