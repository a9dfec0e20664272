"""Stores: the protocol, the embedded SQLite default, an in-memory store, PostgreSQL.

``session_file`` moves sessions between stores as JSON Lines files.
"""

from __future__ import annotations

from .base import DEFAULT_LEASE_TTL, Lease, SessionInfo, Store
from .memory import MemoryStore
from .postgres import PostgresStore
from .sqlite import SQLiteStore

__all__ = [
    "DEFAULT_LEASE_TTL",
    "Lease",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "SessionInfo",
    "Store",
]
