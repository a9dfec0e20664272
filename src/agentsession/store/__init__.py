"""Stores: the protocol, the embedded SQLite default, an in-memory store, PostgreSQL."""

from __future__ import annotations

from .base import SessionInfo, Store
from .memory import MemoryStore
from .sqlite import SQLiteStore

__all__ = ["MemoryStore", "SQLiteStore", "SessionInfo", "Store"]
