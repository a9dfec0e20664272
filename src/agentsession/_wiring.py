"""The runtime's helpers: its arguments checked, a stored session's history and model read.

Kept out of ``runtime`` so that module stays the wiring itself: the tools checked and the token
counter a model fits when a ``Runtime`` is built; a stored session's transcript, checkpoints and
last logged model when it is opened; a session file imported as data; ``SupportsAclose``, the
models whose clients it closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from os import PathLike
from typing import Protocol, runtime_checkable

from ._frozen import frozen
from .budget import TokenCounter, counter_for_encoding, default_counter
from .config import Config
from .engine.costs import prime_ledger
from .engine.leases import live_lease
from .engine.writer import LogWriter
from .errors import AgentSessionError, UsageError
from .log import (
    STATE_KINDS,
    TRANSCRIPT_KINDS,
    ContextEpoch,
    LogEntry,
    ModelSwitched,
    Record,
    SystemPromptCheckpoint,
)
from .projection import transcript_from
from .providers.base import Model
from .session import Session
from .store.base import SessionInfo, Store
from .store.fast import fast_paths, reopening
from .tools import Tool
from .transcript import Transcript

__all__ = ["SupportsAclose", "close_clients", "import_file", "prepared_if_idle"]


@runtime_checkable
class SupportsAclose(Protocol):
    """A model holding a client with connections to close (the SDK models)."""

    async def aclose(self) -> None:
        """Close the client and its connections."""
        ...


async def close_clients(models: Iterable[object]) -> None:
    """Close the client of each model that holds one, once (a model named twice is one client)."""
    closing: list[SupportsAclose] = []
    for model in models:
        if isinstance(model, SupportsAclose) and all(m is not model for m in closing):
            closing.append(model)
    for client in closing:
        await client.aclose()


async def import_file(
    store: Store, path: str | PathLike[str], new_id: str | None, config: Config
) -> str:
    """A session file stored whole as a new session, admitted as data (``engine/imports``)."""
    # Imported here: only importing a session file needs the file format and its checks.
    from .engine.imports import admit_import
    from .store.session_file import SessionFile, import_session

    def admit(parsed: SessionFile) -> SessionFile:
        return admit_import(parsed, config.permission_preset, path=str(path))

    return await import_session(
        store, path, new_id=new_id, admit=admit, max_line_bytes=config.max_import_line_bytes
    )


async def _history(
    store: Store, info: SessionInfo
) -> tuple[Transcript, Callable[[], list[SystemPromptCheckpoint]] | list[SystemPromptCheckpoint]]:
    """The session's transcript and checkpoints: read when asked for, where the store can.

    A store that reads synchronously pages the transcript in on demand and reads the
    checkpoints at their first use, so opening reads neither; another store gives both now.
    """
    end = info.next_seq
    fast = fast_paths(store)
    reader = fast.reads()
    if reader is not None:
        read_now, count_now = reader

        def page(start: int, stop: int) -> list[Record]:
            return read_now(info.id, start, stop, TRANSCRIPT_KINDS)

        def checkpoints() -> list[SystemPromptCheckpoint]:
            found = read_now(info.id, 0, end, ["system_prompt_checkpoint"])
            return [r.entry for r in found if isinstance(r.entry, SystemPromptCheckpoint)]

        # A count the store already holds (a reopen's snapshot) is taken now: counting later
        # would start a worker thread for an answer that needs no I/O.
        held = fast.count_held
        transcript = Transcript(
            stored=info.message_count,
            end_seq=end,
            reader=page,
            users=lambda: count_now(info.id, ["user"], end),
            counted=None if held is None else held(info.id, ["user"], end),
        )
        return transcript, checkpoints
    kinds = [*TRANSCRIPT_KINDS, "system_prompt_checkpoint"]
    records = await store.read(info.id, 0, end, kinds=kinds)
    stored = [r.entry for r in records if isinstance(r.entry, SystemPromptCheckpoint)]
    return Transcript.of(transcript_from(records)), stored


def _checked_tools(tools: Iterable[Tool]) -> tuple[Tool, ...]:
    checked: list[Tool] = []
    for item in tools:
        if not isinstance(item, Tool):
            raise UsageError(f"tools must be decorated with @ags.tool; got {type(item).__name__}")
        if any(t.name == item.name for t in checked):
            raise UsageError(f"two tools are named {item.name!r}")
        checked.append(item)
    return tuple(checked)


def _counter_for(model: Model | None) -> TokenCounter:
    """Exact offline counting where the model's tokenizer ships; else a calibrated estimate."""
    if model is None:
        return default_counter()
    return counter_for_encoding(model.profile.tokenizer, fallback=default_counter())


def _another(chosen: Model, named: str, provider: str) -> bool:
    """Whether ``chosen`` is another model than the one logged.

    Another name, or the same name at another provider (an older log names no provider: there
    the name decides).
    """
    if chosen.name != named:
        return True
    return bool(provider) and chosen.profile.provider != provider


@frozen
class Stored:
    """What opening a stored session reads (``read_stored``)."""

    info: SessionInfo
    state: list[LogEntry]
    writer: LogWriter
    #: The model the log names last and its provider (``_named_model``).
    named: tuple[str, str]
    #: No live process holds the session's lease: a step left unfinished is dead, not running.
    idle: bool
    #: The log from the last dispatch on, when ``idle`` (``None``: nothing dispatched).
    tail: list[Record] | None


async def read_stored(store: Store, session_id: str) -> Stored:
    """Read what opening ``session_id`` needs, in one round trip where the store can.

    The reads that do not depend on each other are asked at once: answered from one snapshot
    where the store took one (``store.fast``'s ``reopening``), else overlapping rather than
    queueing one behind another on a busy server's pool.
    """
    async with reopening(store, session_id):
        info = await store.get_session(session_id)
        stored, history, lease, named = await asyncio.gather(
            store.read(session_id, kinds=STATE_KINDS),
            _history(store, info),
            live_lease(store, session_id),
            _named_model(store, session_id),
        )
        writer = LogWriter(store, info.id, info.next_seq, *history)
        await prime_ledger(store, info.id, writer.ledger)
        tail = await writer.tail_since_dispatch() if lease is None else None
    return Stored(info, [r.entry for r in stored], writer, named, lease is None, tail)


async def _named_model(store: Store, session_id: str) -> tuple[str, str]:
    """The model the log says the session talked to last, and its provider ("": unknown)."""
    latest = await store.last(session_id, ["model_switched", "epoch"])
    entry = latest.entry if latest is not None else None
    if isinstance(entry, ModelSwitched | ContextEpoch):
        return entry.model, entry.provider
    return "", ""


async def prepared_if_idle(session: Session) -> bool:
    """``session.prepare_compaction()``; ``False`` for a session busy, leased or failing."""
    try:
        return await session.prepare_compaction()
    except AgentSessionError:  # a turn runs, approvals wait, another process leases it
        return False
