"""The references durable steps pass: small, frozen, JSON-able values, never a prompt's context.

An engine stores what a step takes and returns in its own history. Here that is a session id,
seqs, call ids and a digest — a few hundred bytes whatever the session's length — so the
engine's history stays flat while the log holds the conversation. Each value has a ``kind`` and
round-trips through ``as_json()`` / ``reference_from_json()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

from .._frozen import frozen
from ..errors import ConflictError, UsageError

__all__ = [
    "Admitted",
    "ApprovalAnswer",
    "Paused",
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


@frozen
class Admitted:
    """A prompt admitted: its entries and the dispatch record end at ``seq``."""

    session_id: str
    seq: int  # the dispatch record's seq
    digest: str  # the dispatched request's digest
    kind: Literal["admitted"] = "admitted"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return dataclasses.asdict(self)


@frozen
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


@frozen
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


@frozen
class Settled:
    """A turn's result, read from the log: the reply, why it stopped, its last seq.

    ``waiting``: with ``stop_reason="approval_required"``, the ids of the calls that wait for
    the user's answer.
    """

    session_id: str
    text: str
    stop_reason: str
    last_seq: int
    waiting: tuple[str, ...] = ()
    kind: Literal["settled"] = "settled"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return {**dataclasses.asdict(self), "waiting": list(self.waiting)}


@frozen
class ApprovalAnswer:
    """The user's answer to a tool call waiting for approval, carried to the step that runs it.

    ``always`` approves the tool for the rest of the session; ``note`` tells the model why a
    call was denied.
    """

    call_id: str
    approved: bool
    always: bool = False
    note: str = ""
    kind: Literal["approval_answer"] = "approval_answer"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        return dataclasses.asdict(self)


@frozen
class Paused:
    """A turn paused for approvals, and where it continues.

    ``dispatch_seq`` is the paused step's dispatch record, ``response_seq`` the answer whose
    ``calls`` (in order) have no result yet; ``waiting`` are those asked about and unanswered.
    """

    session_id: str
    dispatch_seq: int
    response_seq: int
    step: int
    calls: tuple[str, ...]
    waiting: tuple[str, ...]
    kind: Literal["paused"] = "paused"

    def as_json(self) -> dict[str, Any]:
        """The stored form: plain JSON values."""
        data = dataclasses.asdict(self)
        return {**data, "calls": list(self.calls), "waiting": list(self.waiting)}


Reference: TypeAlias = Admitted | Responded | ToolRan | Settled | ApprovalAnswer | Paused
_KINDS: dict[str, type[Reference]] = {
    "admitted": Admitted,
    "responded": Responded,
    "tool_ran": ToolRan,
    "settled": Settled,
    "approval_answer": ApprovalAnswer,
    "paused": Paused,
}


def reference_from_json(data: Mapping[str, Any]) -> Reference:
    """A reference back from its stored form; ``UsageError`` for an unknown kind or field."""
    cls = _KINDS.get(str(data.get("kind", "")))
    if cls is None:
        raise UsageError(f"not a durable step reference: kind {data.get('kind')!r}")
    fields = dict(data)
    for name in ("calls", "waiting"):
        if isinstance(fields.get(name), list):
            fields[name] = tuple(fields[name])
    try:
        return cls(**fields)
    except TypeError as exc:
        raise UsageError(f"a {cls.__name__} reference with wrong fields: {exc}") from exc
