"""Background compaction: a summary prepared while idle, adopted at the next prompt's boundary.

The summary call is billed at once; the summary and its epoch are committed by the next prompt
only when nothing was logged since; a process killed in between leaves no summary behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import agentsession as ags
from agentsession.log import ContextEpoch, SideCall, Summary

Make = Callable[..., ags.Runtime]

SUMMARY = "## Goal\nPrepared in the background."


def scripted(runtime: ags.Runtime) -> ags.ScriptedModel:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model


async def _three_turns(make_runtime: Make) -> tuple[ags.Runtime, ags.Session]:
    runtime = make_runtime(
        ["a1", "a2", "a3", SUMMARY, "a4"],
        config=ags.Config(keep_user_turns=1, retry_base_delay=0, titles=False),
    )
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    return runtime, session


def _entries(log: list[ags.Record], kind: type) -> list[object]:
    return [r.entry for r in log if isinstance(r.entry, kind)]


async def test_prepared_summary_is_adopted_as_one_epoch_at_the_next_prompt(
    make_runtime: Make,
) -> None:
    runtime, session = await _three_turns(make_runtime)
    epochs_before = len(_entries(await session.log(), ContextEpoch))
    assert await session.prepare_compaction(min_tokens=0) is True
    log = await session.log()
    # Billed now, not yet adopted: no summary, no new epoch.
    calls = _entries(log, SideCall)
    assert [(c.purpose, c.reason) for c in calls if isinstance(c, SideCall)] == [
        ("compaction", "background")
    ]
    assert not _entries(log, Summary)
    assert len(_entries(log, ContextEpoch)) == epochs_before
    # The preview shows the request the prompt will send: the prepared summary adopted.
    preview = await session.preview_request("four")
    assert str(preview.messages[0].content).endswith(SUMMARY)
    await session.prompt("four")
    log = await session.log()
    (summary,) = _entries(log, Summary)
    assert isinstance(summary, Summary) and summary.text == SUMMARY
    epochs = _entries(log, ContextEpoch)
    assert len(epochs) == epochs_before + 1  # one new epoch, the compaction's
    last = epochs[-1]
    assert isinstance(last, ContextEpoch) and last.reason == "compaction"
    request = scripted(runtime).requests[-1]
    assert str(request.messages[0].content).endswith(SUMMARY)
    assert [m.content for m in request.messages[1:]] == ["three", "a3", "four"]
    assert request.messages == preview.messages and request.system == preview.system
    assert len(_entries(log, SideCall)) == 1  # adopting made no call


async def test_a_change_since_drops_the_prepared_summary(make_runtime: Make) -> None:
    runtime = make_runtime(
        ["a1", "a2", "a3", SUMMARY, "## Goal\nExplicit.", "a4"],
        config=ags.Config(keep_user_turns=1, retry_base_delay=0, titles=False),
    )
    session = await runtime.create_session()
    for text in ("one", "two", "three"):
        await session.prompt(text)
    assert await session.prepare_compaction(min_tokens=0) is True
    assert await session.compact() is True  # logged meanwhile: the prepared one is stale
    await session.prompt("four")
    log = await session.log()
    texts = [e.text for e in _entries(log, Summary) if isinstance(e, Summary)]
    assert texts == ["## Goal\nExplicit."]
    assert len(_entries(log, SideCall)) == 2  # the dropped summary stays billed


async def test_another_model_drops_the_prepared_summary(make_runtime: Make) -> None:
    _, session = await _three_turns(make_runtime)
    assert await session.prepare_compaction(min_tokens=0) is True
    other = ags.ScriptedModel(["from the other"], name="other")
    await session.switch_model(other)
    assert (await session.prompt("four")).text == "from the other"
    assert not _entries(await session.log(), Summary)
    assert other.requests[-1].messages[0].content == "one"


async def test_a_small_session_prepares_nothing(make_runtime: Make) -> None:
    runtime, session = await _three_turns(make_runtime)
    assert await session.prepare_compaction() is False  # far below the default threshold
    assert not _entries(await session.log(), SideCall)
    assert len(scripted(runtime).requests) == 3


CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    import agentsession as ags

    db, project = sys.argv[1:3]

    async def main():
        runtime = ags.Runtime(
            store=ags.SQLiteStore(db),
            model=ags.ScriptedModel(["a", "b", "c", "## Goal\\nNever adopted."]),
            project_dir=project,
            config=ags.Config(keep_user_turns=1, titles=False),
        )
        session = await runtime.create_session()
        for text in ("one", "two", "three"):
            await session.prompt(text)
        assert await session.prepare_compaction(min_tokens=0)
        print(session.id, flush=True)
        time.sleep(120)  # killed here: prepared, never adopted

    asyncio.run(main())
    """
)


def test_kill_after_preparing_leaves_nothing_half_done(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    db = tmp_path / "s.db"
    child = subprocess.Popen(
        [sys.executable, str(script), str(db), str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        session_id = child.stdout.readline().strip()  # printed once the summary is prepared
        assert session_id, "the child never prepared a summary"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
        if child.stdout is not None:
            child.stdout.close()
    asyncio.run(_check_reopened(db, session_id, tmp_path))


async def _check_reopened(db: Path, session_id: str, project: Path) -> None:
    model = ags.ScriptedModel(["still works"])
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, project_dir=project)
    try:
        session = await runtime.open_session(session_id)
        log = await session.log()
        calls = [e for e in _entries(log, SideCall) if isinstance(e, SideCall)]
        assert [(c.purpose, c.reason) for c in calls] == [("compaction", "background")]
        assert not _entries(log, Summary)
        reasons = [e.reason for e in _entries(log, ContextEpoch) if isinstance(e, ContextEpoch)]
        assert "compaction" not in reasons
        assert (await session.prompt("four")).text == "still works"
        (request,) = model.requests
        assert request.messages[0].content == "one"  # the old epoch, whole
        assert not _entries(await session.log(), Summary)
    finally:
        await runtime.close()


async def test_the_runtime_prepares_each_idle_session(make_runtime: Make) -> None:
    """``runtime.prepare_compactions()``: the application's timer, over its open sessions."""
    small = ags.ModelProfile(context_window=2_000, max_output_tokens=100)
    model = ags.ScriptedModel(["a1", "a2", "a3", SUMMARY, "a4"], profile=small)
    runtime = make_runtime(
        model=model,
        config=ags.Config(
            keep_user_turns=1, titles=False, compact_threshold=0.05, auto_compact=False
        ),
    )
    grown = await runtime.create_session()
    for text in ("one", "two", "three"):
        await grown.prompt(text)
    fresh = await runtime.create_session()  # nothing to summarise yet
    assert await runtime.prepare_compactions() == {grown.id: True, fresh.id: False}
    await grown.prompt("four")
    assert [e.text for e in _entries(await grown.log(), Summary) if isinstance(e, Summary)] == [
        SUMMARY
    ]
