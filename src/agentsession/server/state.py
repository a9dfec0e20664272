"""One server's shared state: the runtime, its turns, owners, tokens and limits.

Every route reaches the same ``ServerState``; it also answers the questions every route asks
first: who is calling, may they see this session, and what does their request body hold.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request

from .._frozen import frozen
from ..errors import SessionNotFoundError, UsageError
from ..runtime import Runtime
from .auth import Tokens
from .inspect_pool import InspectPool
from .notify import Notifier
from .owners import Owners
from .preset_ceiling import PresetCeiling
from .turns import Turns
from .workspaces import Workspaces

__all__ = ["BodyTooLargeError", "Decision", "NoTurnError", "NotAuthorizedError", "ServerState"]


class NotAuthorizedError(UsageError):
    """The request carries no token the server accepts."""


class BodyTooLargeError(UsageError):
    """The request body is larger than the server accepts."""


class NoTurnError(UsageError):
    """There is no running turn to act on (409)."""


class LogMovedError(UsageError):
    """A prompt's ``after`` is not the log's last entry any more (409).

    ``entries``: the log's entries after ``after`` in the stream's form, when they are few, so
    the client can tell whether its prompt is among them without reading the log again.
    """

    def __init__(self, message: str, entries: list[dict[str, Any]] | None = None) -> None:
        super().__init__(message)
        self.entries = entries


@frozen
class Decision:
    """A user's answer to a tool call waiting for approval."""

    call_id: str
    approved: bool
    always: bool = False
    note: str = ""


@dataclass
class ServerState:
    """What the routes of one app share."""

    runtime: Runtime
    notifier: Notifier
    turns: Turns
    tokens: Tokens
    owners: Owners
    max_body: int
    workspaces: Workspaces
    #: Long inspections answered in child processes (``inspect_pool``).
    inspections: InspectPool
    #: The permission presets clients may choose (``preset_ceiling``).
    ceiling: PresetCeiling
    #: Approvals answered here and not yet used by a resume, per session.
    decisions: dict[str, dict[str, Decision]] = field(default_factory=dict)

    def caller(self, request: Request) -> str | None:
        """The calling owner (``None`` when the server needs no token or the token names none)."""
        if not self.tokens.required:
            return None
        if self.tokens.is_open(request.headers.get("authorization")):
            return None
        owner = self.tokens.owner(request.headers.get("authorization"))
        if owner is None:
            raise NotAuthorizedError("a bearer token is required (Authorization: Bearer TOKEN)")
        return owner

    async def allowed(self, request: Request, session_id: str) -> str | None:
        """The caller, after checking it may see ``session_id`` (unknown to others: 404)."""
        owner = self.caller(request)
        if owner is not None and await self.owners.get(session_id) != owner:
            raise SessionNotFoundError(session_id)
        return owner

    async def body(self, request: Request) -> bytes:
        """The request body, refused past ``max_body`` bytes (also while it is being read)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdecimal() and int(declared) > self.max_body:
            raise BodyTooLargeError(f"the request body is larger than {self.max_body} bytes")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body:
                raise BodyTooLargeError(f"the request body is larger than {self.max_body} bytes")
            chunks.append(chunk)
        return b"".join(chunks)

    async def json(self, request: Request, fields: Collection[str]) -> dict[str, Any]:
        """The JSON object of the request body (an empty body is ``{}``).

        A field not among ``fields`` is refused: a misspelt ``preest`` must not leave a session
        at a preset its client did not ask for.
        """
        value = await self._json(request)
        unknown = sorted(set(value) - set(fields))
        if unknown:
            names = ", ".join(repr(name) for name in unknown)
            known = ", ".join(repr(name) for name in sorted(fields)) or "none"
            raise UsageError(f"unknown field {names} in the request body; this route takes {known}")
        return value

    async def _json(self, request: Request) -> dict[str, Any]:
        raw = await self.body(request)
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(f"the request body is not JSON: {exc}") from None
        except RecursionError:
            raise UsageError("the request body nests too deeply to read") from None
        if not isinstance(value, dict):
            raise UsageError("the request body must be a JSON object")
        return value


def text_field(body: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    """A string field of a JSON body (``UsageError`` when missing or of another type)."""
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise UsageError(f"the request body needs a string field {name!r}")
    return value
