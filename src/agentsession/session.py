"""Session: the public operations on one durable session.

``stream()`` runs one prompt as a ``Turn`` and yields its events; ``prompt()`` and ``retry()``
drain the same stream inside ``async with``. Every operation that writes goes through the session's
``Guard``: one at a time, the lease held, and settled however it ends — finished, failed or
cancelled — so the same object always takes the next prompt. ``retry()`` re-sends a failed
step only when the rebuilt request is the one that was dispatched; otherwise it says what changed.

No storage logic lives here: the ``LogWriter`` knows what is durable and pending, ``recovery``
how an unfinished step is closed, ``SessionParts`` the gate, tools and context sources. The
preset and the answers to waiting calls are mixed in from ``engine/approvals``, money from
``engine/costs``, the views, previews and ``inspect()`` from ``engine/views``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import NamedTuple, cast

from ._deprecated import DeprecatedSessionNames
from ._memo import conforms
from .engine.admission import Admitter
from .engine.approvals import SessionApprovals
from .engine.costs import SessionCosts
from .engine.deps import SessionDeps
from .engine.guard import Guard
from .engine.leases import LeaseKeeper
from .engine.parts import SessionParts
from .engine.recovery import Cause, closing_entries, resume_point
from .engine.steering import SessionInbox
from .engine.titles import Naming, checked_title
from .engine.turn import Start, Turn
from .engine.upkeep import SessionUpkeep
from .engine.views import SessionViews
from .engine.writer import LogWriter
from .errors import AgentSessionError, SessionBusyError, UsageError
from .events import (
    Event,
    PromptResult,
    StepCommitted,
    TurnFinished,
    TurnStream,
    drain,
)
from .hygiene import prompt_content
from .log import (
    LogEntry,
    ModelSwitched,
    UserEntry,
    now,
)
from .providers.base import Model, Preparable
from .request import ContentPart, ToolCall
from .store.base import SessionInfo
from .sync import run_sync

__all__ = ["Opened", "Session"]


class Opened(NamedTuple):
    """What a ``Session`` is made of, as one value: its internal types stay off its signature.

    Sessions come from ``Runtime.create_session``/``open_session``, which build it.
    """

    deps: SessionDeps
    info: SessionInfo
    model: Model | None
    writer: LogWriter
    parts: SessionParts
    switch: ModelSwitched | None = None
    opener: Callable[[str], Awaitable[Session]] | None = None


class Session(
    DeprecatedSessionNames,
    SessionViews,
    SessionCosts,
    SessionApprovals,
    SessionInbox,
    SessionUpkeep,
):
    """One durable conversation. Create with ``Runtime.create_session``/``open_session``."""

    def __init__(self, opened: Opened, /) -> None:
        deps, info, model, writer, parts, switch, opener = opened
        self._deps = deps
        self._info = info
        self._model = model
        self._writer = writer
        self._parts = parts
        self._admitter = Admitter(deps, writer, parts)
        writer.observe(parts.inbox.took)
        self._held = False
        # Taken anew, the lease says whether the log moved since the writer read its tail.
        taken = lambda end: writer.tail.lease_taken(end, writer.next_seq)  # noqa: E731
        self._lease = LeaseKeeper(deps.store, info.id, deps.config.lease_ttl, on_taken=taken)
        self._guard = Guard(
            info.id, writer, parts.gate, self._lease, lambda: self._recover("cancelled")
        )
        self._opener = opener
        self._switch = switch
        self._naming = Naming(deps.titler, deps.store, deps.config, info.id, self._title_now)
        if model is not None:
            self._naming.follow(model)
        if switch is not None:
            self._admitter.epoch_reason = "model_switch"

    # -- turns --------------------------------------------------------------------------------

    async def prompt(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """Run one prompt to the final text reply (or a pause for approval) and return it.

        Args:
            text: The user's message: a string, or content parts (text and images).
            skills: Skills to select for this turn, by name (as ``$name`` in the text does).

        Raises:
            SessionBusyError: A turn runs, an approval waits, or writes wait for ``flush()``.
            UsageError: The text is not valid Unicode or names an unknown skill.
            BudgetExceededError: The request cannot fit the context budget (nothing is stored).
            ContextLoadError: A context component's loader failed (nothing is stored).
            ProviderError: The provider failed; the admitted context stays stored for ``retry()``.
            MaxStepsExceededError: The turn made more model calls than ``Config.max_steps``.
            ConflictError: Another process holds the session's lease.
            StoreError: The store refused a write.
        """
        async with self.stream(text, skills=skills) as events:
            result = await drain(events)
        self._after_turn(result)  # inputs queued meanwhile run next, in the background
        return result

    def prompt_sync(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> PromptResult:
        """``prompt()`` for scripts and notebooks (runs on the package's event loop thread).

        Args:
            text: The user's message: a string, or content parts (text and images).
            skills: Skills to select for this turn, by name (as ``$name`` in the text does).
        """
        return run_sync(self.prompt(text, skills=skills))

    def stream(
        self, text: str | Sequence[ContentPart], *, skills: Sequence[str] = ()
    ) -> TurnStream:
        """Run one prompt, yielding events as they happen; the last is ``TurnFinished``.

        Use it as ``async with session.stream(text) as events: async for event in events:``.
        ``skills`` and ``$name`` in the text select skills: read now, saved with this turn.
        Leaving the block early (``break``, an exception) cancels the turn, recorded as
        interrupted by cancellation before the block is left; the session stays usable.
        It raises what ``prompt()`` raises, while the events are iterated.

        Args:
            text: The user's message: a string, or content parts (text and images).
            skills: Skills to select for this turn, by name (as ``$name`` in the text does).
        """
        return TurnStream(self._stream(text, skills), self._guard.watch)

    async def _stream(
        self, text: str | Sequence[ContentPart], skills: Sequence[str]
    ) -> AsyncGenerator[Event, None]:
        user = UserEntry(prompt_content(text), timestamp=now())
        async with self._guard.exclusive():
            await self._ready()
            selection = await self._parts.start_prompt(
                user, skills, await self._writer.user_turns()
            )
            await self._recover()
            async for event in self._run([user, *selection, *self._metadata()], "new"):
                yield event

    async def retry(self) -> PromptResult:
        """Finish a turn that did not finish.

        A step whose response never arrived (provider failure, process killed) is re-sent
        exactly as admitted — ``UsageError`` if the runtime changed so that the same request can
        no longer be sent (``prompt()`` continues instead); after ``switch_model()`` the step is
        admitted afresh for the new model, in a new epoch. A response whose tool calls did not
        run (a refused write, since flushed) runs them once; a turn that stopped after its tool
        results continues with the next model call. A turn paused for approval continues once
        every waiting call is approved or denied.
        """
        async with self.stream_retry() as events:
            result = await drain(events)
        self._after_turn(result)
        return result

    def stream_retry(self) -> TurnStream:
        """``retry()`` as a stream of events, used like ``stream()`` (``async with``)."""
        return TurnStream(self._resume(), self._guard.watch)

    async def _resume(self) -> AsyncGenerator[Event, None]:
        async with self._guard.exclusive(allow_waiting=True):
            await self._ready()
            waiting = self._parts.gate.waiting()
            if waiting:
                names = ", ".join(f"{w.name} ({w.call_id})" for w in waiting)
                raise UsageError(f"approve or deny the waiting tool calls first: {names}")
            if not self._held:
                await self._recover()
            tail = await self._writer.tail_since_dispatch()
            point = resume_point(tail)
            start: Start = point.kind if point.kind != "unanswered" else "replay"
            if tail is not None and point.kind == "unanswered":
                start = await self._admitter.retry_start(tail, self.model)
            async for event in self._run(self._metadata(), start, point.calls):
                yield event

    @property
    def unflushed_entries(self) -> int:
        """How many entries the store refused and ``flush()`` has yet to write."""
        return len(self._writer.pending)

    async def flush(self) -> int:
        """Write the entries a refused commit kept in memory; return how many were written.

        ``StoreError`` again (keeping them) while the store refuses; a write that failed yet
        committed is found in the log, never written twice. ``retry()`` then continues the turn.

        Raises:
            SessionBusyError: A turn is running.
            StoreError: The store still refuses the write (the entries are kept).
        """
        await self._guard.settled_not_running()
        await self._lease.hold()
        return await self._writer.flush()

    async def compact(self) -> bool:
        """Summarise the history before the last ``Config.keep_user_turns`` user turns.

        The summary opens a new epoch with a freshly rendered baseline; earlier history stays in
        the log. Returns ``False`` when there is nothing before the kept turns to summarise.
        """
        async with self._guard.exclusive():
            await self._recover()
            return await self._admitter.compact(await self._admitter.sample(), self.model)

    async def switch_model(self, model: Model) -> None:
        """Talk to ``model`` from the next request on; that request starts a new epoch.

        Args:
            model: The model to talk to.

        Raises:
            UsageError: ``model`` is not a ``Model``.
            SessionBusyError: A turn is running.
        """
        if not isinstance(model, Model):
            raise UsageError(f"expected a Model, got {type(model).__name__}")
        async with self._guard.exclusive(allow_waiting=True):
            current = self._model
            previous = current.name if current is not None else ""
            before = current.profile.provider if current is not None else ""
            if self._switch is not None:
                previous, before = self._switch.previous, self._switch.previous_provider
                self._switch = None
            provider = model.profile.provider
            # A model is its provider and its name: the same name elsewhere is a switch too.
            if model.name != previous or (before and provider != before):
                switch = ModelSwitched(model.name, previous, now(), provider, before)
                await self._writer.append([switch])
                self._admitter.epoch_reason = "model_switch"
            self._model = model
            self._naming.follow(model)

    # -- management ---------------------------------------------------------------------------

    async def rename(self, title: str) -> None:
        """Give the session a title of your own (replacing a generated one).

        Args:
            title: The new title (cleaned of control characters, zero-width characters and
                surrounding space).

        Raises:
            UsageError: The title has no text, more than 200 characters, or a character that
                reorders how text is shown (a bidirectional override, isolate or mark).
        """
        cleaned = checked_title(title)
        await self._deps.store.set_title(self.id, cleaned)
        self._info = replace(self._info, title=cleaned)

    async def fork(self, at_seq: int | None = None) -> Session:
        """A new session whose log is a copy of this one through entry ``at_seq`` (default: all).

        The copy runs to the end of the commit holding ``at_seq``, never splitting it (a user
        entry keeps its skill selection): a branch of the conversation to try another way.

        Args:
            at_seq: The log entry to branch after; ``None`` copies the whole log.

        Raises:
            SessionBusyError: Entries wait for ``flush()``.
            UsageError: ``at_seq`` is not an entry of this session.
        """
        if self._writer.pending:
            raise SessionBusyError(f"session {self.id} has entries to flush() before a fork")
        upto = await self._writer.commit_end(at_seq)
        info = self._info.forked(uuid.uuid4().hex, now())
        forked = await self._deps.store.fork_session(self.id, info, upto)
        return await self._open(forked.id)

    async def export(self, path: str | os.PathLike[str]) -> int:
        """Write the session to a JSON Lines session file; returns how many entries it holds.

        Args:
            path: The file to write.

        Raises:
            StoreError: The log cannot be read.
            OSError: The file cannot be written.
        """
        from .store.session_file import export_session  # only exporting needs the file format

        return await export_session(self._deps.store, self.id, path)

    async def refresh(self) -> None:
        """Catch up with what other processes committed (after a ``ConflictError``).

        Raises:
            SessionBusyError: A turn is running.
        """
        await self._guard.settled_not_running()
        fresh = await self._open(self.id)
        self._info, self._writer, self._parts = fresh._info, fresh._writer, fresh._parts
        self._writer.observe(self._parts.inbox.took)
        self._admitter = Admitter(self._deps, self._writer, self._parts)
        self._guard.writer, self._guard.gate = self._writer, self._parts.gate
        self._held = False

    async def named(self) -> str | None:
        """Wait for the title a model is making after the first turn; return the title."""
        await self._naming.wait()
        await self._write_side_calls()
        return self.title

    async def _write_side_calls(self, *, presets: bool = False) -> None:
        """Commit the title calls not yet in the log, when no turn is writing (best effort).

        With ``presets`` (closing) also the preset changes recorded while idle: the next
        request, in whatever process, then finds the preset in the log and tells the model.
        """
        calls = list(self._naming.pending)
        changes = list(self._parts.gate.pending_changes) if presets else []
        if not (calls or changes) or self._guard.busy:
            return  # the next admission commits them
        with contextlib.suppress(AgentSessionError):
            await self._writer.commit([*changes, *calls])  # behind entries a refused write kept
            self._naming.taken(calls)
            if changes:
                self._parts.gate.admitted()

    def _unrecorded(self) -> list[LogEntry]:
        return list(self._naming.pending)

    async def close(self) -> int:
        """Settle a dropped stream, write what a refused commit kept, end the title, free the lease.

        Returns how many entries still could not be written (lost with this object; 0 normally).
        """
        await self._stop_delivery()
        await self._guard.settle_dropped()
        await self._naming.close()
        await self._write_side_calls(presets=True)
        busy, writer = self._guard.busy, self._writer
        lost = len(writer.pending) if busy else await writer.write_before_close()
        with contextlib.suppress(Exception):
            await self._lease.release()
        self._guard.closed = True  # until it is used again, no runtime-wide pass tends it
        return lost

    async def _open(self, session_id: str) -> Session:
        if self._opener is None:
            raise UsageError("this session was not opened through a Runtime")
        return await self._opener(session_id)

    def cancel(self) -> bool:
        """Cancel the running turn; ``False`` when none runs. The session stays usable."""
        return self._guard.cancel()

    def _metadata(self) -> list[LogEntry]:
        """Changes recorded while idle that the next admission commits (switch, presets)."""
        switch = [self._switch] if self._switch is not None else []
        return [*switch, *self._parts.gate.pending_changes, *self._naming.pending]

    async def _ready(self) -> None:
        """Refuse when the model cannot be called (no key, no SDK); let the sources get ready.

        Runs before anything is stored; the sources connect their servers if they have any.
        """
        model = self.model
        if conforms(model, Preparable):
            cast(Preparable, model).ensure_ready()
        await self._parts.prepare()

    async def _run(
        self, promoted: list[LogEntry], start: Start, calls: Sequence[ToolCall] = ()
    ) -> AsyncIterator[Event]:
        turn = Turn(
            self._deps,
            self._parts,
            self._writer,
            self._admitter,
            self.model,
            self.id,
            await self._writer.last_dispatch(),
        )
        self._held = False
        self._cost_alert(started=True)
        try:
            async for event in turn.run(promoted, start, calls):
                if isinstance(event, StepCommitted) and event.what == "admission":
                    self._switch = None
                    self._naming.taken(promoted)
                if isinstance(event, TurnFinished) and event.result.stop_reason != (
                    "approval_required"
                ):
                    await self._naming.after_turn(self._writer.transcript)
                yield event
                if isinstance(event, StepCommitted) and event.what == "response":
                    alert = self._cost_alert()
                    if alert is not None:
                        yield alert
        finally:
            self._held = turn.held

    async def _recover(self, cause: Cause = "process") -> None:
        """Record truthfully a step that was dispatched but left unfinished."""
        tail = await self._writer.tail_since_dispatch()
        closing = closing_entries(tail or [], now(), cause)
        if closing:
            await self._writer.append(closing)

    def _title_now(self, title: str | None) -> str | None:
        if title is not None:  # a title the background call stored
            self._info = replace(self._info, title=title)
        return self._info.title

    def __repr__(self) -> str:
        return f"Session({self.id!r})"
