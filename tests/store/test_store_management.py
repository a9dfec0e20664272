"""The Store contract beyond the log: sessions created whole, counters, delete, fork, leases.

Runs against every store, like ``test_store_contract.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from agentsession.errors import (
    ConflictError,
    SessionNotFoundError,
    StoreError,
    UsageError,
)
from agentsession.log import (
    AssistantEntry,
    Dispatch,
    LogEntry,
    ToolResultEntry,
    UserEntry,
    now,
)
from agentsession.request import ToolCall
from agentsession.store import Lease, SessionInfo, Store

from .conftest import StoreFactory

T0 = "2025-05-05T05:05:05.000005+00:00"
T1 = "2025-06-06T06:06:06.000006+00:00"


def new_info(session_id: str, **fields: Any) -> SessionInfo:
    stamp = now()
    return SessionInfo(id=session_id, created_at=stamp, updated_at=stamp, **fields)


def conversation() -> list[LogEntry]:
    """user, assistant (model a), dispatch, assistant calling a tool (model b), its result."""
    return [
        UserEntry("hello"),
        AssistantEntry("hi", model="model-a"),
        Dispatch("m", 1, "d"),
        AssistantEntry("", (ToolCall("read", {"p": 1}, "c1"),), model="model-b"),
        ToolResultEntry("c1", "read", "text"),
    ]


async def log_of(store: Store, session_id: str) -> list[LogEntry]:
    return [r.entry for r in await store.read(session_id)]


# -- sessions created whole ------------------------------------------------------------------


async def test_create_with_entries_keeps_the_given_row(store: Store) -> None:
    info = SessionInfo("imp", T0, T1, title="imported", project_dir="/p", file_version=2)
    await store.create_session(info, conversation())
    got = await store.get_session("imp")
    assert got == dataclasses.replace(info, next_seq=5, message_count=4, last_model="model-b")
    assert await log_of(store, "imp") == conversation()
    newest = await store.last("imp", ["assistant"])
    assert newest is not None
    assert newest.seq == 3
    # The session continues where the imported log ends.
    await store.append("imp", 5, [UserEntry("next")])
    assert (await store.get_session("imp")).next_seq == 6


async def test_counters_in_the_info_are_derived_not_taken(store: Store) -> None:
    info = SessionInfo("a", T0, T0, next_seq=9, message_count=7, last_model="made-up")
    await store.create_session(info)
    got = await store.get_session("a")
    assert (got.next_seq, got.message_count, got.last_model) == (0, 0, None)


async def test_create_whole_is_all_or_nothing(store: Store) -> None:
    await store.create_session(new_info("taken", title="kept"))
    with pytest.raises(ConflictError, match="already exists"):
        await store.create_session(new_info("taken", title="other"), conversation())
    assert (await store.get_session("taken")).title == "kept"
    assert await store.read("taken") == []

    bad = AssistantEntry(tool_calls=(ToolCall("f", {"x": object()}),))
    with pytest.raises(StoreError, match="entry 2 of the batch"):
        await store.create_session(new_info("new"), [UserEntry("a"), UserEntry("b"), bad])
    with pytest.raises(SessionNotFoundError):
        await store.get_session("new")
    assert [s.id for s in await store.list_sessions()] == ["taken"]


# -- listing counters ------------------------------------------------------------------------


async def test_listing_counts_messages_and_names_the_last_model(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.append("a", 0, conversation()[:3])
    got = await store.get_session("a")
    assert (got.message_count, got.last_model) == (2, "model-a")

    await store.append("a", 3, conversation()[3:])
    # An assistant entry without a model leaves the last named one in place.
    await store.append("a", 5, [AssistantEntry("unnamed"), Dispatch("m", 2, "d")])
    (listed,) = await store.list_sessions()
    assert (listed.message_count, listed.last_model, listed.next_seq) == (5, "model-b", 7)
    assert listed == await store.get_session("a")

    # A refused append changes no counter.
    with pytest.raises(ConflictError):
        await store.append("a", 3, [AssistantEntry("late", model="model-c")])
    assert await store.get_session("a") == listed


async def test_listing_a_model_name_with_odd_characters(store: Store) -> None:
    await store.create_session(new_info("a"))
    entry = AssistantEntry("x", model="weird\x00model\ud800")
    await store.append("a", 0, [entry])
    assert await log_of(store, "a") == [entry]  # the log keeps every character
    assert (await store.get_session("a")).last_model == "weird\ufffdmodel\ufffd"


# -- text no store can keep alike ------------------------------------------------------------


@pytest.mark.parametrize("bad", ["nul\x00inside", "lone \ud800 surrogate"])
async def test_row_text_that_cannot_be_stored_is_a_usage_error(store: Store, bad: str) -> None:
    with pytest.raises(UsageError):
        await store.create_session(new_info(bad))
    await store.create_session(new_info("a"))
    with pytest.raises(UsageError):
        await store.set_title("a", bad)
    with pytest.raises(UsageError):
        await store.create_session(new_info("b", project_dir=bad))
    with pytest.raises(UsageError):
        await store.acquire_lease("a", bad)
    assert (await store.get_session("a")).title is None
    # Such an id can name no session.
    for call in (store.get_session(bad), store.read(bad), store.last(bad, ["user"])):
        with pytest.raises(SessionNotFoundError):
            await call
    assert await store.release_lease(bad, "me") is False
    assert await store.read("a", kinds=[bad]) == []


async def test_an_empty_session_id_is_refused(store: Store) -> None:
    with pytest.raises(UsageError, match="empty"):
        await store.create_session(new_info(""))


# -- delete ----------------------------------------------------------------------------------


async def test_delete_removes_the_session_and_nothing_else(store: Store) -> None:
    await store.create_session(new_info("gone"), conversation())
    await store.create_session(new_info("stays"), [UserEntry("mine")])
    assert await store.acquire_lease("gone", "worker-1", 60)
    await store.delete_session("gone")

    for call in (
        store.get_session("gone"),
        store.read("gone"),
        store.last("gone", ["user"]),
        store.lease_of("gone"),
        store.append("gone", 5, [UserEntry("x")]),
        store.delete_session("gone"),
    ):
        with pytest.raises(SessionNotFoundError):
            await call
    assert [s.id for s in await store.list_sessions()] == ["stays"]
    assert await log_of(store, "stays") == [UserEntry("mine")]

    # The id is free again, with an empty log and no lease.
    await store.create_session(new_info("gone"))
    assert await store.read("gone") == []
    assert await store.lease_of("gone") is None
    assert await store.acquire_lease("gone", "worker-2", 60)


# -- fork ------------------------------------------------------------------------------------


async def test_fork_copies_the_log_up_to_and_including_an_entry(store: Store) -> None:
    source = SessionInfo("src", T0, T1, title="source", project_dir="/p", file_version=2)
    await store.create_session(source, conversation())
    fork_info = SessionInfo("fork", T1, T1, title="a branch", project_dir="/q")
    forked = await store.fork_session("src", fork_info, 2)

    assert forked == dataclasses.replace(
        fork_info, next_seq=3, message_count=2, last_model="model-a", file_version=2
    )
    assert forked == await store.get_session("fork")
    assert await log_of(store, "fork") == conversation()[:3]
    assert await store.last("fork", ["assistant"]) == (await store.read("src"))[1]

    # The two logs go their own ways.
    await store.append("fork", 3, [UserEntry("on the branch")])
    await store.append("src", 5, [UserEntry("on the trunk")])
    assert (await log_of(store, "fork"))[3:] == [UserEntry("on the branch")]
    assert (await log_of(store, "src"))[5:] == [UserEntry("on the trunk")]
    assert (await store.get_session("src")).title == "source"


async def test_fork_of_the_whole_log_and_of_the_first_entry(store: Store) -> None:
    await store.create_session(new_info("src"), conversation())
    whole = await store.fork_session("src", new_info("whole"), 4)
    assert await log_of(store, "whole") == conversation()
    assert (whole.next_seq, whole.message_count, whole.last_model) == (5, 4, "model-b")
    first = await store.fork_session("src", new_info("first"), 0)
    assert (first.next_seq, first.message_count, first.last_model) == (1, 1, None)


async def test_fork_refusals_write_nothing(store: Store) -> None:
    await store.create_session(new_info("src"), conversation())
    await store.create_session(new_info("empty"))
    await store.create_session(new_info("taken"), [UserEntry("kept")])
    for upto in (-1, 5, 99):
        with pytest.raises(UsageError, match="seq 0 to 4"):
            await store.fork_session("src", new_info("f"), upto)
    with pytest.raises(UsageError, match="empty"):
        await store.fork_session("empty", new_info("f"), 0)
    with pytest.raises(ConflictError, match="already exists"):
        await store.fork_session("src", new_info("taken"), 2)
    with pytest.raises(SessionNotFoundError):
        await store.fork_session("nope", new_info("f"), 0)
    assert sorted(s.id for s in await store.list_sessions()) == ["empty", "src", "taken"]
    assert await log_of(store, "taken") == [UserEntry("kept")]


# -- leases ----------------------------------------------------------------------------------


async def test_a_lease_has_one_owner_until_released(store: Store) -> None:
    await store.create_session(new_info("s"))
    assert await store.lease_of("s") is None
    assert await store.acquire_lease("s", "worker-1", 60)
    lease = await store.lease_of("s")
    assert isinstance(lease, Lease)
    assert (lease.session_id, lease.owner) == ("s", "worker-1")

    assert not await store.acquire_lease("s", "worker-2", 60)
    assert not await store.renew_lease("s", "worker-2", 60)
    assert not await store.release_lease("s", "worker-2")
    assert (await store.lease_of("s")) == lease

    # The holder taking it again extends it.
    assert await store.acquire_lease("s", "worker-1", 120)
    extended = await store.lease_of("s")
    assert extended is not None
    assert extended.expires_at > lease.expires_at
    assert await store.renew_lease("s", "worker-1", 240)

    assert await store.release_lease("s", "worker-1")
    assert await store.lease_of("s") is None
    assert not await store.release_lease("s", "worker-1")
    assert not await store.renew_lease("s", "worker-1")
    assert await store.acquire_lease("s", "worker-2", 60)


async def test_an_expired_lease_can_be_taken_over(store: Store) -> None:
    await store.create_session(new_info("s"))
    # Long enough that a busy machine's next call still finds it held; then it runs out.
    assert await store.acquire_lease("s", "dead-worker", 5.0)
    assert not await store.acquire_lease("s", "worker-2", 60)
    for _ in range(1200):  # until it has run out, within a generous bound
        if await store.lease_of("s") is None:
            break
        await asyncio.sleep(0.1)
    assert await store.lease_of("s") is None
    assert await store.acquire_lease("s", "worker-2", 60)
    held = await store.lease_of("s")
    assert held is not None
    assert held.owner == "worker-2"
    # The old holder finds out at its next renewal.
    assert not await store.renew_lease("s", "dead-worker", 60)
    assert not await store.release_lease("s", "dead-worker")


async def test_an_expired_lease_nobody_took_renews(store: Store) -> None:
    await store.create_session(new_info("s"))
    assert await store.acquire_lease("s", "slow-worker", 0.05)
    await asyncio.sleep(0.3)
    assert await store.renew_lease("s", "slow-worker", 60)
    assert not await store.acquire_lease("s", "other", 60)


async def test_leases_are_per_session(store: Store) -> None:
    await store.create_session(new_info("a"))
    await store.create_session(new_info("b"))
    assert await store.acquire_lease("a", "worker-1", 60)
    assert await store.acquire_lease("b", "worker-2", 60)
    a, b = await store.lease_of("a"), await store.lease_of("b")
    assert (a and a.owner, b and b.owner) == ("worker-1", "worker-2")


async def test_lease_arguments_and_unknown_sessions(store: Store) -> None:
    await store.create_session(new_info("s"))
    for ttl in (0, -1, float("nan"), float("inf")):
        with pytest.raises(UsageError, match="positive number of seconds"):
            await store.acquire_lease("s", "me", ttl)
    with pytest.raises(UsageError, match="owner"):
        await store.acquire_lease("s", "", 60)
    for call in (store.acquire_lease("nope", "me", 60), store.lease_of("nope")):
        with pytest.raises(SessionNotFoundError):
            await call
    assert not await store.renew_lease("nope", "me", 60)
    assert not await store.release_lease("nope", "me")


async def test_two_stores_on_one_database_share_leases(make_store: StoreFactory) -> None:
    one = make_store()
    two = make_store() if type(one).__name__ != "MemoryStore" else one
    try:
        await one.create_session(new_info("s"))
        results = await asyncio.gather(
            *(s.acquire_lease("s", f"worker-{i}", 60) for i, s in enumerate([one, two] * 3))
        )
        assert sorted(results) == [False] * 5 + [True]
        winner = f"worker-{results.index(True)}"
        held = await two.lease_of("s")
        assert held is not None
        assert held.owner == winner
    finally:
        await one.close()
        if two is not one:
            await two.close()
