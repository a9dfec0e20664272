"""What the server says on the wire: log entries and turn events as JSON, SSE frames, errors.

A log entry travels as ``{"seq", "kind", "entry"}`` where ``entry`` is its public form: every
field of the entry's dataclass by name (``codec.encode``), not the stored form (which packs some
kinds and leaves defaults out), so an entry is the same JSON on every stream of every process
and its schema is its class's (``event_schemas``). Errors are
``{"error": {"type", "message", "retryable"}}``: ``type`` is the exception's class name, stable
across releases.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from typing import Any

from ..codec import encode
from ..errors import (
    AgentSessionError,
    BudgetExceededError,
    ConflictError,
    ContextOverflowError,
    CredentialsError,
    ProviderError,
    SessionBusyError,
    SessionFileError,
    SessionNotFoundError,
    StoreError,
    TransientProviderError,
    UsageError,
)
from ..events import Event
from ..hygiene import has_surrogates
from ..log import Record
from .event_schemas import SCHEMA_VERSION
from .health import store_problem

__all__ = [
    "entry_json",
    "error_body",
    "event_json",
    "is_retryable",
    "plain",
    "sse_frame",
    "status_of",
]

_log = logging.getLogger(__name__)


def entry_json(record: Record) -> dict[str, Any]:
    """A log record as the server sends it: its seq, its kind and the entry's public form."""
    entry: dict[str, Any] = encode(record.entry)
    return {"seq": record.seq, "kind": record.entry.kind, "entry": entry}


def plain(value: Any) -> Any:
    """A dataclass value (recursively) as plain JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def event_json(event: Event) -> dict[str, Any]:
    """A live turn event (``session.stream()``) as JSON; its ``kind`` names it."""
    found: dict[str, Any] = plain(event)
    return found


def sse_frame(event: str, data: dict[str, Any], event_id: int | None = None) -> bytes:
    """One Server-Sent Events frame; ``event_id`` (a log seq) only for entries from the log.

    The data is the event's public form: ``type`` (the event's name) and ``schema_version``
    first, then its own fields (``event_schemas``).
    """
    public = {"type": event, "schema_version": SCHEMA_VERSION, **data}
    text = json.dumps(public, ensure_ascii=False, separators=(",", ":"))
    if has_surrogates(text):  # a log written before replies were repaired: escaped, lossless
        text = json.dumps(public, ensure_ascii=True, separators=(",", ":"))
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n".encode()


def is_retryable(exc: BaseException) -> bool:
    """Whether the same request may succeed later without any change."""
    if isinstance(exc, SessionFileError):  # the file sent is wrong; sending it again fails again
        return False
    return isinstance(exc, TransientProviderError | StoreError | ConflictError | SessionBusyError)


def status_of(exc: BaseException) -> int:
    """The HTTP status of a failure."""
    match exc:
        case SessionNotFoundError():
            return 404
        case ConflictError() | SessionBusyError():
            return 409
        case BudgetExceededError() | ContextOverflowError():
            return 422
        case UsageError() | SessionFileError():
            return 400
        case TransientProviderError() | StoreError():
            return 503
        case ProviderError():
            return 502
        case _:
            return 500


def public_message(exc: BaseException) -> str:
    """What a client is told of a failure: never a connection detail, file path or process.

    A store's failure names its database (host, port, user) or file, and carries the driver's
    own words; a lease conflict names the holder's host and pid; a missing API key names the
    environment variable to set, which a client cannot. Clients get the cause in
    plain words instead; the server's own log keeps the rest.
    """
    if isinstance(exc, SessionFileError):
        return (
            f"line {exc.line}: {exc.args[0].split(': ', 1)[-1]}" if exc.line else str(exc.args[0])
        )
    if isinstance(exc, StoreError):
        return f"the session store failed: {store_problem(exc)}; try again later"
    if isinstance(exc, ConflictError) and "lease held" in str(exc):
        return "the session is being driven by another process; try again when it is done"
    if isinstance(exc, CredentialsError) and exc.status is None:
        # No key at hand: the message names the variable to set, which only the operator can.
        _log.warning("a model call found no API key: %s", exc)
        return "this server has no API key for the session's model; its operator must configure one"
    if isinstance(exc, AgentSessionError):
        return str(exc)
    return f"internal error ({type(exc).__name__})"


def error_body(exc: BaseException, **extra: object) -> dict[str, Any]:
    """The JSON body of a failure: its class name, message and whether a retry may help."""
    message = public_message(exc)
    error: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": message,
        "retryable": is_retryable(exc),
    }
    error.update(extra)
    return {"error": error}
