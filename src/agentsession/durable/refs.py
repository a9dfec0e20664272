"""The references durable steps pass: small, frozen, JSON-able values, never a prompt's context.

An engine stores what a step takes and returns in its own history. Here that is a session id,
seqs, call ids and a digest — a few hundred bytes whatever the session's length — so the
engine's history stays flat while the log holds the conversation. Each value has a ``kind`` and
round-trips through ``as_json()`` / ``reference_from_json()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from ..errors import ConflictError, UsageError

__all__ = [
    "Admitted",
    "Reference",
    "Responded",
    "Settled",
    "StaleStepError",
    "ToolRan",
    "reference_from_json",
]


class StaleStepError(ConflictError):
    """The log moved past what a step expected, or another worker holds the session's lease.

    Nothing of the step was stored: the engine retries it (here or on another worker), and the
    retry finds in the log what was committed meanwhile.
    """


@dataclass(frozen=True)
class Admitted:
    """A prompt admitted: its entries and the dispatch record end at ``seq``."""

    session_id: str
    seq: int  # the dispatch record's seq
    digest: str  # the dispatched request's digest
    kind: Literal["admitted"] = "admitted"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Responded:
    """The model's answer committed at ``seq``; ``calls`` are the ids of its calls still to run."""

    session_id: str
    seq: int
    step: int  # which model call of the turn this was (1 = the first)
    calls: tuple[str, ...] = ()
    kind: Literal["responded"] = "responded"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return {**dataclasses.asdict(self), "calls": list(self.calls)}


@dataclass(frozen=True)
class ToolRan:
    """A tool call's result committed at ``seq`` (``paused``: it waits for an approval instead)."""

    session_id: str
    call_id: str
    seq: int
    is_error: bool = False
    paused: bool = False
    kind: Literal["tool_ran"] = "tool_ran"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Settled:
    """A turn's result, read from the log: the reply, why it stopped, its last seq."""

    session_id: str
    text: str
    stop_reason: str
    last_seq: int
    kind: Literal["settled"] = "settled"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return dataclasses.asdict(self)


Reference: TypeAlias = Admitted | Responded | ToolRan | Settled
_KINDS: dict[str, type[Reference]] = {
    "admitted": Admitted,
    "responded": Responded,
    "tool_ran": ToolRan,
    "settled": Settled,
}


def reference_from_json(data: Mapping[str, Any]) -> Reference:
    """A reference back from its stored form; ``UsageError`` for an unknown kind or field."""
    cls = _KINDS.get(str(data.get("kind", "")))
    if cls is None:
        raise UsageError(f"not a durable step reference: kind {data.get('kind')!r}")
    fields = dict(data)
    if "calls" in fields:
        fields["calls"] = tuple(fields["calls"])
    try:
        return cls(**fields)
    except TypeError as exc:
        raise UsageError(f"a {cls.__name__} reference with wrong fields: {exc}") from exc
