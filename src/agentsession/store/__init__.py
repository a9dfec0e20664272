"""Stores: the protocol, the embedded SQLite default, an in-memory store, PostgreSQL."""

from __future__ import annotations

from .base import SessionInfo, Store

__all__ = ["SessionInfo", "Store"]
