"""A session's say over its tool calls: the permission preset and the answers to waiting calls.

``SessionApprovals`` is a part of ``Session`` (mixed in, like ``SessionCosts``) so the session
module stays about turns. The preset changes only while idle and the next admission tells the
model; an answer to a waiting call is held by the gate and stored right before the call runs, so
a restart before ``retry()`` asks again rather than guess whether the call started.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import UsageError
from ..events import ApprovalRequest
from ..log import ApprovalDecided, ApprovalRequested, now
from ..request import AssistantMessage, Message, ToolCall
from .guard import Guard
from .leases import LeaseKeeper
from .parts import SessionParts
from .turn import approval_of
from .writer import LogWriter

__all__ = ["SessionApprovals", "waiting_calls"]


class SessionApprovals:
    """The permission preset and the approvals of a ``Session``."""

    _guard: Guard
    _lease: LeaseKeeper
    _parts: SessionParts
    _writer: LogWriter

    if TYPE_CHECKING:

        @property
        def id(self) -> str:
            """The session id (``Session.id``)."""

    @property
    def permission_preset(self) -> str:
        """The name of the permission preset in effect."""
        return self._parts.gate.preset.name

    def set_permission_preset(self, name: str) -> None:
        """Switch the permission preset while idle; the next request tells the model.

        One ``permission_changed`` entry per effective change is committed with the next
        admission; setting the preset in effect changes nothing.

        Args:
            name: A preset: ``read-only``, ``workspace-write``, ``full-access`` or one of
                ``Config.permission_presets``.

        Raises:
            SessionBusyError: A turn runs, or an approval or a refused write waits.
            UsageError: There is no preset of that name.
        """
        self._guard.check_idle()
        self._parts.gate.set(name)

    def pending_approvals(self) -> list[ApprovalRequest]:
        """Tool calls waiting for the user's approval, oldest first."""
        waiting = self._parts.gate.waiting()
        return [approval_of(r, waiting_calls(self._writer.transcript, waiting)) for r in waiting]

    async def approve(self, call_id: str, *, always: bool = False) -> None:
        """Approve a waiting tool call (``always``: this tool for the rest of the session).

        ``retry()`` then runs it; the answer is stored right before the call runs, so a
        restart before ``retry()`` asks again rather than guess whether the call started.

        Args:
            call_id: The waiting call's id (``ApprovalRequest.call_id``).
            always: Approve every later call of this tool in this session, whatever its
                arguments.

        Raises:
            SessionBusyError: A turn is running.
            UsageError: No call with that id waits for approval.
        """
        await self._answer(call_id, approved=True, always=always, note="")

    async def deny(self, call_id: str, note: str = "") -> None:
        """Deny a waiting tool call; after ``retry()`` the model reads that the user denied it.

        Args:
            call_id: The waiting call's id (``ApprovalRequest.call_id``).
            note: Why, in words the model reads.

        Raises:
            SessionBusyError: A turn is running.
            UsageError: No call with that id waits for approval.
        """
        await self._answer(call_id, approved=False, always=False, note=note)

    async def _answer(self, call_id: str, *, approved: bool, always: bool, note: str) -> None:
        await self._guard.settled_not_running()
        await self._lease.hold()
        if call_id not in {w.call_id for w in self._parts.gate.waiting()}:
            raise UsageError(f"no tool call {call_id!r} is waiting for approval")
        self._parts.gate.answer(ApprovalDecided(call_id, approved, always, note, now()))


def waiting_calls(
    transcript: Sequence[Message], waiting: Sequence[ApprovalRequested]
) -> list[ToolCall]:
    """The tool calls of ``waiting`` approvals, found from the newest message backward.

    Waiting calls belong to the last steps, so a long transcript is not read from its start.
    """
    wanted = {w.call_id for w in waiting}
    calls: list[ToolCall] = []
    for message in reversed(transcript):
        if not wanted:
            break
        if isinstance(message, AssistantMessage):
            calls.extend(c for c in message.tool_calls if c.id in wanted)
            wanted -= {c.id for c in message.tool_calls}
    return calls
