"""Compaction inside a turn of durable steps: at admission, and after a context overflow.

With automatic compaction, an admission over the threshold compacts before the request is
dispatched, and a provider's context-overflow error in a model step compacts once and asks
again — both writing what ``prompt()`` writes. A worker that dies between the compaction and
the new dispatch leaves a step its retry finishes in the new epoch, without a second summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.durable import admit_prompt, last_seq, model_step
from agentsession.log import Dispatch, LogEntry, Record

from ..store.wrappers import DelegatingStore
from .common import drive, shape

Make = Callable[..., Any]
CONFIG = ags.Config(retry_base_delay=0, titles=False, environment=(), keep_user_turns=1)


def _overflow() -> ags.ContextOverflowError:
    return ags.ContextOverflowError("prompt is too long", status=400)


async def test_an_overflow_in_a_model_step_compacts_once_and_asks_again(
    make_runtime: Make,
) -> None:
    logs = []
    for stepped in (True, False):
        summarizer = ags.ScriptedModel(["the story so far"])
        runtime = make_runtime(
            ["a", "b", _overflow(), "fits now"], summarizer=summarizer, config=CONFIG
        )
        session = await runtime.create_session()
        for text in ("one", "two", "three"):
            if stepped:
                settled = await drive(runtime, session.id, text, twice=True)
                result = (settled.text, settled.stop_reason)
            else:
                done = await session.prompt(text)
                result = (done.text, done.stop_reason)
        assert result == ("fits now", "end_turn")
        assert len(summarizer.requests) == 1
        await session.close()
        logs.append(await runtime.store.read(session.id))
    kinds = [r.entry.kind for r in logs[0]]
    assert kinds.count("summary") == 1 and kinds.count("provider_failed") == 1
    assert shape(logs[0]) == shape(logs[1])


async def test_an_admission_over_the_threshold_compacts_as_prompt_does(
    make_runtime: Make,
) -> None:
    config = ags.Config(
        retry_base_delay=0, titles=False, environment=(), keep_user_turns=1, context_window=4_000
    )
    texts = [f"turn {k}: " + "x " * 700 for k in range(4)]
    logs = []
    for stepped in (True, False):
        summarizer = ags.ScriptedModel(lambda r: "the story so far")
        runtime = make_runtime(lambda r: "ok", summarizer=summarizer, config=config)
        session = await runtime.create_session()
        for text in texts:
            if stepped:
                assert (await drive(runtime, session.id, text)).text == "ok"
            else:
                assert (await session.prompt(text)).text == "ok"
        await session.close()
        assert summarizer.requests
        logs.append(await runtime.store.read(session.id))
    assert "summary" in [r.entry.kind for r in logs[0]]
    assert shape(logs[0]) == shape(logs[1])


class _Refuse(DelegatingStore):
    """Refuses the first append holding a dispatch once ``armed``: a worker dying there."""

    armed = False

    async def append(
        self, session_id: str, expected_seq: int, entries: Sequence[LogEntry]
    ) -> list[Record]:
        if self.armed and any(isinstance(e, Dispatch) for e in entries):
            self.armed = False
            raise ags.StoreError("the worker died here")
        return await super().append(session_id, expected_seq, entries)


async def test_a_step_retried_after_the_overflow_compaction_admits_in_the_new_epoch(
    make_runtime: Make, tmp_path: Path
) -> None:
    summarizer = ags.ScriptedModel(["the story so far"])
    store = _Refuse(ags.SQLiteStore(tmp_path / "refusing.db"))
    runtime = make_runtime(
        ["a", "b", _overflow(), "fits now"], summarizer=summarizer, config=CONFIG, store=store
    )
    sid = (await runtime.create_session()).id
    await drive(runtime, sid, "one")
    await drive(runtime, sid, "two")
    admitted = await admit_prompt(runtime, sid, await last_seq(runtime, sid), "three")
    store.armed = True
    with pytest.raises(ags.StoreError):
        await model_step(runtime, sid, admitted.seq, 1)
    kinds = [r.entry.kind for r in await runtime.store.read(sid)]
    assert kinds[-1] != "dispatch" and "summary" in kinds  # compacted, not yet dispatched
    responded = await model_step(runtime, sid, admitted.seq, 1)
    assert len(summarizer.requests) == 1
    (record,) = await runtime.store.read(sid, responded.seq)
    assert record.entry.kind == "assistant"
    assert "the story so far" in str(runtime.scripted.requests[-1].messages[0].content)
    # The refused dispatch stored nothing: the log is the one prompt() writes, the new epoch
    # admitted with its checkpoint, not the old request's dispatch sent again.
    prompted = make_runtime(
        ["a", "b", _overflow(), "fits now"],
        summarizer=ags.ScriptedModel(["the story so far"]),
        config=CONFIG,
    )
    session = await prompted.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    await session.close()
    assert shape(await runtime.store.read(sid)) == shape(await prompted.store.read(session.id))
