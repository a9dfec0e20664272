"""The ``Store`` contract as a test suite a store of your own can pass.

Subclass ``StoreContract`` in a pytest module under a ``Test…`` name and say how to open your
store; every check below runs against it::

    from agentsession.testing import StoreContract

    class TestMyStore(StoreContract):
        def open_store(self) -> MyStore:
            return MyStore(...)          # a new, empty database for each check

Each check opens the store inside its own event loop and closes it at the end, so no pytest
plugin is needed. A store that offers optional fast paths (``fast_paths``, see ``store.fast``) is
held to them too: each synchronous read must return what its asynchronous twin returns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ConflictError, SessionNotFoundError, StoreError
from ..log import (
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    LogEntry,
    Record,
    Summary,
    ToolResultEntry,
    UserEntry,
    now,
)
from ..request import ToolCall
from ..store.base import SessionInfo, Store
from ..store.fast import fast_paths

__all__ = ["StoreContract"]

Check = Callable[[Any, Store], Awaitable[None]]


def _check(body: Check) -> Callable[[Any], None]:
    """A test method that runs ``body`` on a freshly opened store, in a loop of its own.

    Not ``functools.wraps``: a test runner would read the wrapped signature and look for a
    ``store`` fixture.
    """

    def test(self: StoreContract) -> None:
        async def run() -> None:
            store = self.open_store()
            try:
                await body(self, store)
            finally:
                await store.close()

        asyncio.run(run())

    test.__name__, test.__qualname__, test.__doc__ = body.__name__, body.__qualname__, body.__doc__
    return test


def info(session_id: str, **fields: Any) -> SessionInfo:
    """A new session's metadata, stamped now."""
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


def _users(*texts: str) -> list[LogEntry]:
    return [UserEntry(t) for t in texts]


def _pairs(records: list[Record]) -> list[tuple[int, LogEntry]]:
    return [(r.seq, r.entry) for r in records]


async def _raises(kind: type[BaseException], call: Awaitable[object], text: str = "") -> None:
    try:
        await call
    except kind as exc:
        assert text in str(exc), f"{kind.__name__} without {text!r}: {exc}"
    else:
        raise AssertionError(f"expected {kind.__name__}")


class StoreContract:
    """What every store must do; see the module's docs for how to run it."""

    def open_store(self) -> Store:
        """A new store on an empty database; override it."""
        raise NotImplementedError("StoreContract.open_store: return your store")

    @_check
    async def test_sessions_are_created_listed_and_titled(self, store: Store) -> None:
        """Sessions are listed newest activity first; an append counts as activity."""
        assert await store.list_sessions() == []
        first = info("a", title="first", project_dir="/p")
        await store.create_session(first)
        await asyncio.sleep(0.002)
        await store.create_session(info("b"))
        assert await store.get_session("a") == first
        assert [s.id for s in await store.list_sessions()] == ["b", "a"]
        await asyncio.sleep(0.002)
        await store.append("a", 0, _users("x", "y"))
        assert [s.id for s in await store.list_sessions()] == ["a", "b"]
        got = await store.get_session("a")
        assert got.next_seq == 2 and got.updated_at > first.updated_at
        await store.set_title("a", "Fixing the </skill> parser ✓")
        assert (await store.get_session("a")).title == "Fixing the </skill> parser ✓"

    @_check
    async def test_an_existing_id_conflicts(self, store: Store) -> None:
        """Creating a session twice is a ``ConflictError`` and keeps the first."""
        await store.create_session(info("a", title="kept"))
        await _raises(ConflictError, store.create_session(info("a", title="other")))
        assert (await store.get_session("a")).title == "kept"

    @_check
    async def test_an_unknown_session_is_named(self, store: Store) -> None:
        """Every call on a session that does not exist raises ``SessionNotFoundError``."""
        await store.create_session(info("a"))
        calls = [
            store.get_session("nope"),
            store.set_title("nope", "t"),
            store.append("nope", 0, _users("x")),
            store.read("nope"),
            store.last("nope", ["user"]),
        ]
        for call in calls:
            try:
                await call
            except SessionNotFoundError as exc:
                assert exc.session_id == "nope"
            else:
                raise AssertionError("expected SessionNotFoundError")

    @_check
    async def test_appended_entries_read_back_by_range_and_kind(self, store: Store) -> None:
        """``append`` returns the records it wrote; ``read`` filters by seq range and kind."""
        await store.create_session(info("a"))
        log: list[LogEntry] = [
            UserEntry(f"u{i}") if i % 2 == 0 else AssistantEntry(f"a{i}") for i in range(8)
        ]
        log[5] = Dispatch("m", 5, "d5")
        records = await store.append("a", 0, log[:3])
        assert _pairs(records) == list(enumerate(log[:3]))
        await store.append("a", 3, log[3:])
        everything = list(enumerate(log))
        assert _pairs(await store.read("a")) == everything
        assert _pairs(await store.read("a", 3, 6)) == everything[3:6]
        assert _pairs(await store.read("a", 6, 3)) == []
        assert _pairs(await store.read("a", 7, 2**70)) == everything[7:]
        evens = [e for e in everything if e[0] % 2 == 0]
        assert _pairs(await store.read("a", kinds=["user"])) == evens
        assert _pairs(await store.read("a", kinds=[])) == []

    @_check
    async def test_last_finds_the_newest_entry_of_some_kinds(self, store: Store) -> None:
        """``last`` is the newest record of any of ``kinds``, or ``None``."""
        await store.create_session(info("a"))
        assert await store.last("a", ["user"]) is None
        epoch = ContextEpoch(1, (("k", "v"),), (), 3)
        await store.append("a", 0, [ContextEpoch(0, (), (), 0), UserEntry("u"), Summary("s", 1)])
        await store.append("a", 3, [AssistantEntry("x"), epoch, UserEntry("later")])
        found = await store.last("a", ["epoch"])
        assert found is not None and (found.seq, found.entry) == (4, epoch)
        newest = await store.last("a", ["summary", "epoch", "user"])
        assert newest is not None and newest.seq == 5
        assert await store.last("a", ["model_switched"]) is None

    @_check
    async def test_a_wrong_expected_seq_conflicts_and_writes_nothing(self, store: Store) -> None:
        """Appends are compare-and-set on the next seq: a stale writer changes nothing."""
        await store.create_session(info("a"))
        await store.append("a", 0, _users("one", "two"))
        before = await store.get_session("a")
        for expected in (0, 1, 3, -1):
            await _raises(ConflictError, store.append("a", expected, _users("x", "y")))
        assert _pairs(await store.read("a")) == list(enumerate(_users("one", "two")))
        assert await store.get_session("a") == before
        assert await store.append("a", 2, []) == []
        await store.append("a", 2, _users("three"))
        assert (await store.get_session("a")).next_seq == 3

    @_check
    async def test_an_unencodable_batch_is_refused_whole(self, store: Store) -> None:
        """A batch is written entirely or not at all."""
        await store.create_session(info("a"))
        bad = AssistantEntry(tool_calls=(ToolCall("f", {"x": object()}),))
        await _raises(StoreError, store.append("a", 0, [UserEntry("ok"), bad]))
        assert await store.read("a") == []
        assert (await store.get_session("a")).next_seq == 0

    @_check
    async def test_entries_are_isolated_and_text_survives(self, store: Store) -> None:
        """What the caller changes later is not stored; any text comes back as it went in."""
        await store.create_session(info("a"))
        args: dict[str, Any] = {"path": "a.txt", "lines": [1, 2]}
        text = ToolResultEntry("c1", "read", "broken \ud800 half pair \udfff end ✓")
        await store.append(
            "a", 0, [AssistantEntry(tool_calls=(ToolCall("read", args, "c1"),)), text]
        )
        args["lines"].append(3)
        call, result = await store.read("a")
        assert isinstance(call.entry, AssistantEntry)
        assert call.entry.tool_calls[0].arguments == {"path": "a.txt", "lines": [1, 2]}
        assert result.entry == text

    @_check
    async def test_fork_copies_a_prefix_and_delete_removes(self, store: Store) -> None:
        """A fork holds the log up to a seq and lives on its own; a deleted session is gone."""
        await store.create_session(info("a"))
        await store.append("a", 0, _users("one", "two", "three"))
        forked = await store.fork_session("a", info("b"), 1)
        assert forked.id == "b" and forked.next_seq == 2
        assert _pairs(await store.read("b")) == list(enumerate(_users("one", "two")))
        await store.append("b", 2, _users("other"))
        assert len(await store.read("a")) == 3
        await store.delete_session("a")
        await _raises(SessionNotFoundError, store.get_session("a"))
        assert [s.id for s in await store.list_sessions()] == ["b"]

    @_check
    async def test_a_lease_has_one_holder_at_a_time(self, store: Store) -> None:
        """Leases: one owner at a time, renewed and released only by that owner."""
        await store.create_session(info("a"))
        assert await store.acquire_lease("a", "me", ttl=60)
        assert not await store.acquire_lease("a", "you", ttl=60)
        lease = await store.lease_of("a")
        assert lease is not None and lease.owner == "me"
        assert await store.renew_lease("a", "me", ttl=60)
        assert not await store.renew_lease("a", "you", ttl=60)
        assert not await store.release_lease("a", "you")
        assert await store.release_lease("a", "me")
        assert await store.lease_of("a") is None
        assert await store.acquire_lease("a", "you", ttl=60)

    @_check
    async def test_declared_fast_paths_agree_with_the_async_reads(self, store: Store) -> None:
        """A store that declares synchronous reads returns from them what ``read``/``last`` do."""
        await store.create_session(info("a"))
        await store.append("a", 0, [UserEntry("u"), AssistantEntry("x"), UserEntry("v")])
        fast = fast_paths(store)
        if fast.read_now is not None:
            assert fast.read_now("a", 0, 3, ["user"]) == await store.read("a", 0, 3, ["user"])
        if fast.count_now is not None:
            assert fast.count_now("a", ["user"], 3) == 2
        if fast.last_now is not None:
            assert fast.last_now("a", ["assistant"]) == await store.last("a", ["assistant"])
        if fast.append_soon is not None:  # a write handed over at once, as a future
            written = await fast.append_soon("a", 3, [UserEntry("w")])
            assert written == (await store.read("a", 3)) and [r.seq for r in written] == [3]
            await _raises(ConflictError, fast.append_soon("a", 3, [UserEntry("again")]))

    @_check
    async def test_a_closed_store_refuses_calls(self, store: Store) -> None:
        """After ``close()`` (twice is fine) every call raises ``StoreError``."""
        await store.create_session(info("a"))
        await store.close()
        await store.close()
        await _raises(StoreError, store.get_session("a"))
        await _raises(StoreError, store.append("a", 0, _users("x")))
