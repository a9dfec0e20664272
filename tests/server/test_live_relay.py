"""Live text between processes, without a database: payloads, what is sent, what is forwarded,
and when a follower sends a text delta (never after the entry that holds its text).

Two relays stand for two server processes; the payloads one takes are handed to the other as
PostgreSQL would deliver them (``heard``). The database itself carries them in
``test_live_deltas.py``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.events import TextDelta
from agentsession.server.follow import follow_log
from agentsession.server.live_relay import PAYLOAD_MAX, LiveRelay, payloads_of
from agentsession.server.notify import Notifier
from agentsession.server.wire import event_json, sse_frame

from .harness import until

SID = "s-live-relay"


@given(
    text=st.text(min_size=1, max_size=3000),
    at=st.integers(0, 10**9),
    limit=st.integers(700, PAYLOAD_MAX),  # room for the longest head drawn here
    sid=st.text(max_size=40),
)
def test_payloads_stay_below_the_limit_and_carry_the_text_whole(
    text: str, at: int, limit: int, sid: str
) -> None:
    head = {"v": 1, "o": "0123456789abcdef", "k": "d", "s": sid, "n": 7}
    found = payloads_of(head, at, text, limit)
    assert found, "a text fits in payloads of this size"
    offset = at
    for payload in found:
        assert payload.isascii() and len(payload.encode()) <= limit
        note = json.loads(payload)
        assert {k: note[k] for k in head} == head
        assert note["a"] == offset and note["t"]
        offset += len(note["t"])
    assert "".join(json.loads(p)["t"] for p in found) == text


def test_nothing_fits_beside_a_head_too_long() -> None:
    assert payloads_of({"s": "x" * 200}, 0, "text", limit=150) == []


def _pair() -> tuple[LiveRelay, LiveRelay, list[tuple[str, int, str]]]:
    delivered: list[tuple[str, int, str]] = []
    running = LiveRelay(None, lambda *a: None, lambda s: False)
    following = LiveRelay(None, lambda *a: delivered.append(a), lambda s: s == SID)
    return running, following, delivered


def _want(origin: str) -> str:
    return json.dumps({"v": 1, "o": origin, "k": "w", "s": SID})


def test_text_goes_out_only_once_wanted_and_then_from_the_step_start() -> None:
    running, following, delivered = _pair()
    running.said(SID, 5, "Hello, ")
    assert running.take() == [], "nobody elsewhere asked: nothing is sent"
    running.heard(_want(following.origin))
    running.said(SID, 5, "wörld")
    for payload in running.take():
        following.heard(payload)
    assert delivered == [(SID, 5, "Hello, wörld")]
    running.said(SID, 5, "!")
    for payload in running.take():
        following.heard(payload)
    assert delivered[-1] == (SID, 5, "!")
    assert running.take() == []
    # Another want (a process that asked before it listened): the step again from its start,
    # and the receiver cuts what it forwarded already.
    running.heard(_want(following.origin))
    for payload in running.take():
        following.heard(payload)
    assert "".join(t for _, _, t in delivered) == "Hello, wörld!"
    # The step committed: its text is in the log, nothing more goes out.
    running.step_over(SID)
    running.said(SID, 9, "")
    assert running.take() == []


def test_a_receiver_forwards_continuing_text_only() -> None:
    running, following, delivered = _pair()
    running.heard(_want(following.origin))
    running.said(SID, 3, "one ")
    first = running.take()
    running.said(SID, 3, "two ")
    second = running.take()
    running.said(SID, 3, "three")
    third = running.take()
    following.heard(first[0])
    following.heard(third[0])  # "two " never came: the rest of the step waits for its entry
    following.heard(second[0])
    assert [t for _, _, t in delivered] == ["one "]
    running.said(SID, 8, "next step")  # a new step starts afresh
    following.heard(running.take()[0])
    following.heard(first[0])  # an earlier step's late text
    assert delivered[-1] == (SID, 8, "next step") and len(delivered) == 2


def test_own_malformed_and_unfollowed_payloads_are_ignored() -> None:
    running, following, delivered = _pair()
    running.heard(_want(running.origin))  # its own want: nobody else asked
    running.said(SID, 1, "text")
    assert running.take() == []
    good = {"v": 1, "o": running.origin, "k": "d", "s": SID, "n": 1, "a": 0, "t": "x"}
    for bad in (
        "not json",
        "[1, 2]",
        json.dumps({**good, "v": 99}),
        json.dumps({**good, "n": "1"}),
        json.dumps({**good, "t": 5}),
        json.dumps({**good, "s": None}),
        json.dumps({**good, "k": "other"}),
        json.dumps({**good, "s": "not-followed-here"}),
        json.dumps({**good, "o": following.origin}),
    ):
        following.heard(bad)
    assert delivered == []
    following.heard(json.dumps(good))
    assert delivered == [(SID, 1, "x")]


async def _consume(frames: AsyncIterator[bytes], into: list[bytes]) -> None:
    async for frame in frames:
        into.append(frame)


def _text(text: str) -> bytes:
    return sse_frame("text_delta", event_json(TextDelta(text)))


async def test_a_follower_sends_text_only_before_the_entry_that_holds_it(tmp_path: Path) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(["the answer"]),
        config=ags.Config(titles=False),
    )
    session = await runtime.create_session()
    await session.prompt("question")
    records = await runtime.store.read(session.id)
    next_seq = records[-1].seq + 1
    notifier = Notifier(runtime.store)
    got: list[bytes] = []
    follower = asyncio.create_task(
        _consume(follow_log(runtime.store, notifier, session.id, -1), got)
    )
    try:
        await until(lambda: any(b"turn_finished" in f for f in got))
        answered = len(got)
        notifier.live(session.id, _text("stale"), records[-1].seq)  # its entry went out
        notifier.live(session.id, _text("current"), next_seq)  # a step not committed yet
        notifier.live(session.id, _text("ahead"), next_seq + 3)  # entries before it not read
        marker = sse_frame("turn_cancelled", {"kind": "turn_cancelled"})
        notifier.live(session.id, marker)  # no step: always sent
        await until(lambda: marker in got)
        assert got[answered:] == [_text("current"), _text("ahead"), marker]
    finally:
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
        await session.close()
        await runtime.close()
