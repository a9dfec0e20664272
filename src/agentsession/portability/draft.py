"""An imported conversation before it is stored: the shape every importer fills, and its report.

Each importer reads its tool's records in conversation order and tells a ``Draft`` what it met:
a user message, an assistant reply with its tool calls, a tool result naming its call, a
compaction summary, something kept as a visible note, something skipped. ``Draft.entries()``
turns that into a log the package itself could have written, so the first request after the
import passes every wire format's rules:

- the log opens with a user message (a note says so when the source opened with a reply);
- a tool call's results follow the assistant message that made it; text the source put between
  a call and its result waits until the calls are answered; a call that never got a result is
  answered by a visible error result saying so (counted as a note); a result naming no open
  call is kept as a note, not as a result;
- two replies with no turn between them are joined (a note stands between them when one
  carries replay data);
- call ids are the source's own (the lowering maps them per wire format); a missing or repeated
  one gets a fresh id, and later results of a repeated id answer its newest call;
- text is cleaned like tool output (lone surrogates replaced) and tool results are bounded
  by ``Config.max_tool_result_chars``;
- a compaction summary becomes a ``Summary`` and the epoch it opens (baseline empty, model
  ``imported:<format>``: the first request after the import starts a fresh epoch for the model
  that continues the session, keeping the summary at its front).

The report counts what was mapped, kept as notes and skipped (by reason); nothing is dropped
without a count.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import field, replace
from datetime import UTC, datetime
from typing import Any

from .._frozen import frozen
from ..hygiene import clean_text
from ..log import AssistantEntry, ContextEpoch, LogEntry, Summary, ToolResultEntry, UserEntry
from ..request import ContentPart, ImagePart, TextPart, ToolCall

__all__ = ["Draft", "ImportReport", "clean_stamp", "note_text"]


@frozen
class ImportReport:
    """What an import stored and what it could not map.

    ``messages``: user and assistant messages mapped from the source; ``tool_calls`` and
    ``tool_results`` the calls and the results linked to them; ``notes`` what was kept as visible
    text because the package has no equivalent (including the error results of calls the source
    never answered); ``skipped`` what was left out, by reason (records that are no turn of the
    conversation, abandoned branches, unreadable lines). ``summaries``: compaction summaries kept
    as summary epochs.
    """

    session_id: str
    format: str
    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    notes: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    summaries: int = 0
    reasoning: int = 0
    images: int = 0
    title: str | None = None
    source_id: str = ""


def clean_stamp(value: str) -> str:
    """A source's time as the log writes times (ISO 8601, UTC), or ``""`` when it is none."""
    if not value or len(value) > 64:
        return ""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC).isoformat()


def note_text(source: str, text: str) -> str:
    """The visible form of something an import kept without an equivalent."""
    return f"[imported from {source}: {text}]"


Content = str | tuple[ContentPart, ...]


def _clean(content: Content, limit: int | None = None) -> Content:
    if isinstance(content, str):
        return clean_text(content, limit)
    parts: list[ContentPart] = []
    for part in content:
        parts.append(TextPart(clean_text(part.text, limit)) if isinstance(part, TextPart) else part)
    return tuple(parts)


def _joined(first: Content, second: Content) -> Content:
    if isinstance(first, str) and isinstance(second, str):
        return f"{first}\n\n{second}" if first and second else first or second
    a = (TextPart(first),) if isinstance(first, str) else first
    b = (TextPart(second),) if isinstance(second, str) else second
    return (*a, *b)


class Draft:
    """The conversation an importer builds (see the module doc)."""

    def __init__(self, source: str, *, result_limit: int | None) -> None:
        self.source = source
        self.result_limit = result_limit
        self.title: str | None = None
        self.project_dir: str | None = None
        self.created_at = ""
        self.updated_at = ""
        self.source_id = ""
        self._out: list[LogEntry] = []
        self._open: dict[str, str] = {}  # call id -> tool name, of the last assistant message
        self._wire: dict[str, str] = {}  # source call id -> stored id of its newest call
        self._taken: set[str] = set()  # every stored call id
        self._waiting: list[UserEntry] = []
        self._epochs = 0
        self.counts: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()

    # -- what an importer tells the draft ------------------------------------------------------

    def stamp(self, timestamp: str) -> None:
        """A source time seen: the first and last become the session's times."""
        timestamp = clean_stamp(timestamp)
        if timestamp:
            self.created_at = self.created_at or timestamp
            self.updated_at = max(self.updated_at, timestamp)

    def user(self, content: Content, timestamp: str = "") -> None:
        """A user message (text, or text and image parts)."""
        if not content:
            self.skip("empty user message")
            return
        self.counts["messages"] += 1
        self.counts["images"] += _images(content)
        self._user(UserEntry(_clean(content), clean_stamp(timestamp)))

    def note(self, text: str, timestamp: str = "") -> None:
        """Something without an equivalent, kept as visible text in the transcript."""
        self.counts["notes"] += 1
        self._user(UserEntry(clean_text(note_text(self.source, text)), clean_stamp(timestamp)))

    def skip(self, reason: str, count: int = 1) -> None:
        """Something left out, counted under ``reason``."""
        if count:
            self.skipped[reason] += count

    def assistant(
        self,
        text: str,
        calls: list[ToolCall] | tuple[ToolCall, ...] = (),
        *,
        model: str = "",
        timestamp: str = "",
        replay: dict[str, Any] | None = None,
        note: str = "",
    ) -> None:
        """An assistant reply; ``replay``: provider data a wire format can send back verbatim.

        ``note``: what the source says about the reply that has no equivalent (an error), kept
        as a visible line of it. A reply without text or calls is a note alone.
        """
        self._close()
        self._opening()
        if text or calls:
            self.counts["messages"] += 1
        elif not note:
            note = "an empty reply"
        if note:
            self.counts["notes"] += 1
            text = (
                f"{text}\n\n{note_text(self.source, note)}"
                if text
                else note_text(self.source, note)
            )
        stored: list[ToolCall] = []
        for call in calls:
            fresh = call.id if call.id and call.id not in self._taken else ""
            wire = fresh or f"imported_{uuid.uuid4().hex[:16]}"
            self._taken.add(wire)
            if call.id:
                self._wire[call.id] = wire
            stored.append(ToolCall(call.name, call.arguments, id=wire))
            self._open[wire] = call.name
        self.counts["tool_calls"] += len(stored)
        if replay and stored != list(calls):
            self.skip("reasoning of a reply whose call ids were renamed")
            replay = None
        if replay:
            self.counts["reasoning"] += 1
        entry = AssistantEntry(
            clean_text(text),
            tuple(stored),
            provider=self.source,
            provider_data=replay or {},
            model=model,
            timestamp=clean_stamp(timestamp),
        )
        self._follow(entry)

    def result(
        self,
        call_id: str,
        name: str,
        content: Content,
        *,
        is_error: bool = False,
        timestamp: str = "",
    ) -> None:
        """The result of the call the source names ``call_id``."""
        wire = self._wire.get(call_id, "")
        if wire not in self._open:
            shown = content if isinstance(content, str) else _text_of(content)
            self.note(
                f"a result for a call it does not show ({name or call_id}): {shown}", timestamp
            )
            return
        self.counts["tool_results"] += 1
        self.counts["images"] += _images(content)
        self._out.append(
            ToolResultEntry(
                wire,
                name or self._open[wire],
                _clean(content, self.result_limit),
                is_error,
                clean_stamp(timestamp),
            )
        )
        del self._open[wire]
        if not self._open:
            self._flush()

    def summary(self, text: str, timestamp: str = "") -> None:
        """A compaction summary: it opens a new epoch, as the package's own compaction does."""
        self._close()
        timestamp = clean_stamp(timestamp)
        seq = len(self._out)
        self.counts["summaries"] += 1
        self._out.append(Summary(clean_text(text), seq, timestamp))
        self._out.append(
            ContextEpoch(
                epoch=self._epochs,
                baseline=(),
                checkpoint=(),
                history_start=seq + 2,
                reason="compaction",
                model=f"imported:{self.source}",
                summary_seq=seq,
                timestamp=timestamp,
            )
        )
        self._epochs += 1

    # -- the log -------------------------------------------------------------------------------

    def entries(self) -> list[LogEntry]:
        """The log to store (see the module doc); the draft is finished by it."""
        self._close()
        return list(self._out)

    def report(self, session_id: str) -> ImportReport:
        """The counts of this draft as the report of the import stored under ``session_id``."""
        counts = self.counts
        return ImportReport(
            session_id=session_id,
            format=self.source,
            messages=counts["messages"],
            tool_calls=counts["tool_calls"],
            tool_results=counts["tool_results"],
            notes=counts["notes"],
            skipped=dict(sorted(self.skipped.items())),
            summaries=counts["summaries"],
            reasoning=counts["reasoning"],
            images=counts["images"],
            title=self.title,
            source_id=self.source_id,
        )

    def _user(self, entry: UserEntry) -> None:
        if self._open:
            self._waiting.append(entry)  # after the results of the open calls
        else:
            self._out.append(entry)

    def _follow(self, entry: AssistantEntry) -> None:
        """Append a reply; one right after a reply (no turn between) joins it when it can.

        Wire formats refuse two assistant turns in a row. Plain replies merge into one; a
        reply carrying replay data is never merged (its data describes it alone), so a note
        stands between the two instead.
        """
        last = self._out[-1] if self._out else None
        if not isinstance(last, AssistantEntry):
            self._out.append(entry)
        elif not last.provider_data and not entry.provider_data:
            joined = f"{last.content}\n\n{entry.content}" if last.content else entry.content
            self._out[-1] = replace(last, content=joined, tool_calls=entry.tool_calls)
        else:
            self.counts["notes"] += 1
            self._out.append(UserEntry(note_text(self.source, "the reply continues")))
            self._out.append(entry)

    def _opening(self) -> None:
        """A log opens with a user message; a reply first gets a note in front of it."""
        if not any(isinstance(e, UserEntry) for e in self._out):
            self.counts["notes"] += 1
            text = note_text(self.source, "the session continues from here")
            self._out.append(UserEntry(text))

    def _close(self) -> None:
        """Answer every open call the source left unanswered, then let waiting text in."""
        for wire, name in self._open.items():
            self.counts["notes"] += 1
            text = note_text(self.source, "this call has no result in the imported session")
            self._out.append(ToolResultEntry(wire, name, text, is_error=True))
        self._open.clear()
        self._flush()

    def _flush(self) -> None:
        self._out.extend(self._waiting)
        self._waiting.clear()


def _images(content: Content) -> int:
    return 0 if isinstance(content, str) else sum(isinstance(p, ImagePart) for p in content)


def _text_of(content: tuple[ContentPart, ...]) -> str:
    return "\n".join(p.text if isinstance(p, TextPart) else "[image]" for p in content)
