"""Stores: the protocol, the embedded SQLite default, an in-memory store, PostgreSQL.

``session_file`` moves sessions between stores as JSON Lines files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .memory import MemoryStore
from .protocol import DEFAULT_LEASE_TTL, Lease, SessionInfo, Store
from .sqlite import SQLiteStore

if TYPE_CHECKING:
    from .postgres import PostgresStore

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SessionInfo",
    "Store",
]


def __getattr__(name: str) -> Any:
    # The PostgreSQL driver is imported when ``PostgresStore`` is first named (it is slow to
    # import, and most applications never use it).
    if name == "PostgresStore":
        from .postgres import PostgresStore

        return PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
