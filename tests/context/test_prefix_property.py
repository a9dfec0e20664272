"""Property: a request extends the previous one byte for byte, except where an epoch starts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.context import LoadResult
from agentsession.log import ContextEpoch, Dispatch, MidConversationSystemMessage

from ..conftest import Clock

KEYS = ("plugin.a.one", "plugin.b.two", "plugin.c.three")

op = st.one_of(
    st.tuples(st.just("turn"), st.integers(0, 3)),
    st.tuples(st.just("set"), st.sampled_from(KEYS), st.sampled_from(["x", "y", "z"])),
    st.tuples(st.just("unavailable"), st.sampled_from(KEYS)),
    st.tuples(st.just("absent"), st.sampled_from(KEYS)),
    st.tuples(st.just("unregister"), st.sampled_from(KEYS)),
    st.tuples(st.just("date"), st.integers(0, 2)),
    st.tuples(st.just("switch"), st.just(0)),
)


@ags.tool
def noop(i: int) -> str:
    """Do nothing."""
    return f"ok {i}"


async def scenario(ops: list[tuple[Any, ...]], tmp: Path) -> None:
    values: dict[str, LoadResult | str] = dict.fromkeys(KEYS, "x")
    plan: dict[str, int] = {"calls": 0}

    def reply(request: ags.Request) -> Any:
        if plan["calls"] > 0:
            plan["calls"] -= 1
            return [ags.ToolCall("noop", {"i": plan["calls"]})]
        return "done"

    clock = Clock(datetime(2026, 1, 1, 9, 0))
    models = [ags.ScriptedModel(reply, name="m0"), ags.ScriptedModel(reply, name="m1")]
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=models[0],
        project_dir=tmp,
        tools=[noop],
        clock=clock,
        config=ags.Config(max_transcript_messages=9, window_step=1, retry_base_delay=0),
    )

    def reader(key: str) -> Callable[[], LoadResult | str]:
        return lambda: values[key]

    handles = {
        key: runtime.register_component(ags.ContextComponent(key, reader(key))) for key in KEYS
    }
    session = await runtime.create_session()
    current = 0
    sent: list[ags.Request] = []
    for item in ops:
        match item:
            case ("turn", calls):
                plan["calls"] = calls
                before = len(models[current].requests)
                await session.prompt(f"turn {len(sent)}")
                sent.extend(models[current].requests[before:])
            case ("set", key, value):
                values[key] = value
            case ("unavailable", key):
                values[key] = ags.UNAVAILABLE
            case ("absent", key):
                values[key] = ags.ABSENT
            case ("unregister", key):
                handles[key].remove()
            case ("date", days):
                clock.moment += timedelta(days=days)
            case ("switch", _):
                current = 1 - current
                await session.switch_model(models[current])
    log = await session.log()
    epoch_starts: list[bool] = []
    fresh = False
    for record in log:
        if isinstance(record.entry, ContextEpoch):
            fresh = True
        if isinstance(record.entry, Dispatch):
            epoch_starts.append(fresh)
            fresh = False
    assert len(epoch_starts) == len(sent)
    for i in range(1, len(sent)):
        previous, request = sent[i - 1], sent[i]
        if epoch_starts[i]:
            assert not any(m.role == "system" for m in request.messages)
            continue
        assert request.system == previous.system
        assert request.messages[: len(previous.messages)] == previous.messages
        added = request.messages[len(previous.messages) :]
        assert sum(m.role == "system" for m in added) <= 1
    mids = [r.entry for r in log if isinstance(r.entry, MidConversationSystemMessage)]
    assert all(m.changes for m in mids)
    await runtime.close()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(op, min_size=1, max_size=25))
def test_prefix_is_stable_between_epoch_starts(ops: list[tuple[Any, ...]], tmp_path: Path) -> None:
    asyncio.run(scenario(ops, tmp_path))
