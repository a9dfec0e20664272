"""What the command line shows around turns: epochs opened, turn outcomes, the chat's banner.

``EpochWatch`` tells the first request of a new epoch — also one a compaction opened, which it
announces unless ``/compact`` already did. ``outcome_marks`` places a line after each turn that
did not end with an answer (failed, cancelled, waiting for approval), so ``show`` and ``chat
-c`` never present a failed turn as two user messages in a row. ``recap`` is the last turns a
resumed chat prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..inspection.toolview import call_line
from ..log import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantEntry,
    ContextEpoch,
    InputDelivered,
    Interrupted,
    ProviderFailed,
    Record,
    ToolResultEntry,
    UserEntry,
)
from ..request import Message, UserMessage, text_of
from ..session import Session
from ..store.base import Store
from .output import Output, short

__all__ = [
    "COMMAND_NAMES",
    "HELP",
    "MARKS",
    "EpochWatch",
    "banner",
    "compaction_marks",
    "outcome_marks",
    "recap",
]

HELP = (
    "Type a prompt and press Enter (Esc Enter or a paste for several lines). Ctrl-C cancels a "
    "running reply; at an empty prompt Ctrl-C or Ctrl-D quits. Commands: /preset [NAME], "
    "/model NAME, /compact, /context, /new, /report [FILE], /export [FILE.md|.html|.jsonl], "
    "/approve [always], /deny [REASON], "
    "/usage, /retry, /id, /help, /quit."
)
COMMAND_NAMES = (
    "/help",
    "/id",
    "/retry",
    "/preset",
    "/model",
    "/compact",
    "/context",
    "/new",
    "/report",
    "/export",
    "/approve",
    "/deny",
    "/usage",
    "/quit",
)
"""What Tab completes at the start of a chat line."""

MARKS = {
    "failed": "✗ this turn failed: no answer was stored (agentsession retry re-sends it)",
    "cancelled": "✗ this turn was cancelled",
    "interrupted": "✗ this turn was interrupted (the process ended)",
    "waiting for approval": "? a tool call of this turn waits for approval",
    "running": "… this turn did not finish",
    "unfinished": "… this turn did not finish",
}
"""The line shown after a turn, by its outcome (an answered turn gets none)."""


def outcome_marks(messages: Sequence[Message], outcomes: Sequence[str]) -> dict[int, str]:
    """Which message index a turn's mark follows: the last one before the next user message.

    ``outcomes`` holds one outcome per user turn, in order (``session.inspect().turns``).
    """
    marks: dict[int, str] = {}
    turn = -1
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            turn += 1
        last_of_turn = index + 1 == len(messages) or isinstance(messages[index + 1], UserMessage)
        if last_of_turn and 0 <= turn < len(outcomes) and outcomes[turn] in MARKS:
            marks[index] = MARKS[outcomes[turn]]
    return marks


def compaction_marks(messages: Sequence[Message], compacted: dict[int, str]) -> dict[int, str]:
    """Where a compaction is shown: after the last message of the turn it followed.

    ``compacted`` maps a turn number (1 for the first user turn, as the inspection's timeline
    counts) to the compaction's line (``provider compaction · …`` or ``compaction summary · …``).
    """
    marks: dict[int, str] = {}
    turn = 0
    for index, message in enumerate(messages):
        if isinstance(message, UserMessage):
            turn += 1
        last_of_turn = index + 1 == len(messages) or isinstance(messages[index + 1], UserMessage)
        if last_of_turn and turn in compacted:
            marks[index] = f"⇢ {compacted[turn]}"
    return marks


@dataclass
class EpochWatch:
    """Which epoch the session's requests were last sent in, to tell a compaction's new one.

    ``announced`` holds the epochs the user was already told about (``/compact``).
    """

    session: Session
    store: Store
    output: Output
    seen: int | None = None
    announced: set[int] = field(default_factory=set)

    async def current(self) -> Record | None:
        """The session's newest epoch entry."""
        return await self.store.last(self.session.id, ["epoch"])

    async def start(self) -> None:
        """Remember the epoch in force before this run's first request (once)."""
        if self.seen is not None:
            return
        dispatched = await self.store.last(self.session.id, ["dispatch"])
        epochs = await self.store.read(self.session.id, kinds=["epoch"])
        sent = [r.seq for r in epochs if dispatched is not None and r.seq < dispatched.seq]
        self.seen = sent[-1] if sent else -1

    async def opened(self) -> bool:
        """Whether this request is the first of a new epoch; a compaction's is announced."""
        found = await self.current()
        if found is None or found.seq == self.seen:
            return False
        self.seen = found.seq
        entry = found.entry
        compaction = isinstance(entry, ContextEpoch) and entry.reason == "compaction"
        if compaction and isinstance(entry, ContextEpoch) and found.seq not in self.announced:
            self.output.note(
                f"compacted automatically: older turns are summarised in context epoch"
                f" {entry.epoch}"
            )
        return True


_RECAP_TURNS = 3


def _outcome(entry: object, outcome: str) -> str:
    """How a turn stands after ``entry`` (the same reading as the report's)."""
    if isinstance(entry, AssistantEntry):
        return "running" if entry.tool_calls else "answered"
    if isinstance(entry, ProviderFailed):
        return "failed"
    if isinstance(entry, Interrupted):
        return "cancelled" if "cancel" in entry.reason else "interrupted"
    if isinstance(entry, ApprovalRequested):
        return "waiting for approval"
    if isinstance(entry, InputDelivered) and entry.mode == "steer" and outcome == "running":
        return "steered"  # the turn goes on as the steer's, after its tool results
    return outcome


def _entry_lines(entry: object) -> list[str]:
    if isinstance(entry, UserEntry):
        return [f"you › {short(text_of(entry.content), 300)}"]
    if isinstance(entry, AssistantEntry):
        lines = entry.content.strip().splitlines()
        shown = [*lines[:6], "…"] if len(lines) > 6 else lines
        calls = [f"  → {short(call_line(c.name, c.arguments))}" for c in entry.tool_calls]
        return [*shown, *calls]
    if isinstance(entry, ToolResultEntry):
        mark = "✗" if entry.is_error else "←"
        return [f"  {mark} {entry.name}: {short(text_of(entry.content), 120)}"]
    return []


async def recap(store: Store, session_id: str, turns: int = _RECAP_TURNS) -> list[str]:
    """The last ``turns`` turns of a session as lines, each unanswered turn marked."""
    users = await store.read(session_id, kinds=["user"])
    if not users:
        return []
    start = users[-turns].seq if len(users) >= turns else 0
    lines: list[str] = []
    outcome = ""
    for record in await store.read(session_id, start):
        entry = record.entry
        if isinstance(entry, UserEntry) and outcome in MARKS:
            lines.append(f"  {MARKS[outcome]}")
        if isinstance(entry, UserEntry):
            outcome = "unfinished"
        if isinstance(entry, ApprovalDecided):
            outcome = "running"
        outcome = _outcome(entry, outcome)
        lines.extend(_entry_lines(entry))
    if outcome in MARKS:
        lines.append(f"  {MARKS[outcome]}")
    if len(users) > turns:
        lines.insert(
            0, f"… {len(users) - turns} earlier turns (agentsession show {session_id[:8]})"
        )
    return lines


def banner(session: Session, folder: Path) -> str:
    """The first lines of an interactive chat: model, preset, folder, session, how to use it."""
    return (
        f"agentsession · model {session.model.name} · preset {session.permission_preset}"
        f" · folder {folder}\n"
        f"session {session.id} · /help for commands · Ctrl-C cancels a reply · Ctrl-D quits"
    )
