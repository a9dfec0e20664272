"""No stored state makes a session unusable: hostile tool output, refused writes, cancellation,
budgets that cannot be met, broken credentials. Each scenario is a real failure driven through a
real SQLite store; after it, the same session (or a reopened one) takes the next prompt."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.log import AssistantEntry, Interrupted, LogEntry, Omitted, ToolResultEntry

from .conftest import MakeRuntime
from .wrapped_stores import Refusing, Slow

Make = MakeRuntime


def model_of(runtime: ags.Runtime) -> ags.ScriptedModel:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model


def encodes(request: ags.Request) -> None:
    """Every wire format can send ``request`` as UTF-8 JSON."""
    for fmt in ("openai-chat", "openai-responses", "anthropic-messages", "gemini"):
        json.dumps(ags.lower(request, fmt), ensure_ascii=False).encode("utf-8")


async def kinds(session: ags.Session) -> list[str]:
    return [r.entry.kind for r in await session.log()]


# -- hostile tool output -------------------------------------------------------------------------


def test_a_file_name_that_is_not_utf8_never_breaks_a_session(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "plain.txt").write_text("x")
    try:
        name = os.path.join(os.fsencode(folder), b"caf\xe9.txt")  # latin-1, not UTF-8
        os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644))
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    db = tmp_path / "s.db"
    script = textwrap.dedent(
        f"""
        import asyncio, json, os, sys
        import agentsession as ags

        @ags.tool
        def list_dir() -> str:
            \"\"\"List the folder.\"\"\"
            return "\\n".join(sorted(os.listdir({str(folder)!r})))

        async def main():
            replies = [[ags.ToolCall("list_dir", {{}})], "listed", "again"]
            model = ags.ScriptedModel(replies)
            runtime = ags.Runtime(store=ags.SQLiteStore({str(db)!r}), model=model,
                                  tools=[list_dir], project_dir={str(tmp_path)!r})
            if sys.argv[1] == "create":
                session = await runtime.create_session()
                await session.prompt("what is in the folder?")
                print(session.id)
            else:
                session = await runtime.open_session(sys.argv[2])
                model._script = ["after reopening"]
                result = await session.prompt("and now?")
                request = model.requests[-1]
                for fmt in ("openai-chat", "openai-responses", "anthropic-messages", "gemini"):
                    json.dumps(ags.lower(request, fmt), ensure_ascii=False).encode("utf-8")
                print(result.text)
            await runtime.close()

        asyncio.run(main())
        """
    )
    first = subprocess.run(
        [sys.executable, "-c", script, "create"], capture_output=True, text=True, timeout=300
    )
    assert first.returncode == 0, first.stderr
    session_id = first.stdout.strip()
    second = subprocess.run(
        [sys.executable, "-c", script, "open", session_id],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "after reopening"


async def test_surrogates_in_a_result_are_replaced_and_said(make_runtime: Make) -> None:
    @ags.tool
    def names() -> str:
        """Names with a broken byte."""
        return "caf\udce9.txt\nplain.txt"

    runtime = make_runtime([[ags.ToolCall("names", {})], "ok", "fine"], tools=[names])
    session = await runtime.create_session()
    assert (await session.prompt("list")).text == "ok"
    result = session.messages[2]
    assert isinstance(result, ags.ToolResultMessage)
    assert "\udce9" not in str(result.content) and "caf\ufffd.txt" in str(result.content)
    assert "replaced" in str(result.content)
    assert (await session.prompt("again")).text == "fine"
    encodes(model_of(runtime).requests[-1])


async def test_a_context_component_with_lone_surrogates_never_breaks_a_session(
    make_runtime: Make,
) -> None:
    # A plugin listing file names read with surrogateescape; long enough to be a kept text.
    listing = "Files here: caf\udce9.txt, notes.md, and the rest of the folder"
    runtime = make_runtime(["one", "two", "three"])
    runtime.register_component(ags.ContextComponent("plugin.files.listing", lambda: listing))
    session = await runtime.create_session()
    assert (await session.prompt("hi")).text == "one"
    assert (await session.prompt("again")).text == "two"
    request = model_of(runtime).requests[-1]
    encodes(request)
    assert any("caf\ufffd.txt" in text for _, text in request.system)
    reopened = await make_runtime(["three"]).open_session(session.id)
    assert (await reopened.prompt("after reopening")).text == "three"


async def test_a_prompt_with_lone_surrogates_is_refused_before_anything_is_stored(
    make_runtime: Make,
) -> None:
    runtime = make_runtime(["never"])
    session = await runtime.create_session()
    with pytest.raises(ags.UsageError, match="not valid Unicode"):
        await session.prompt("caf\udce9")
    with pytest.raises(ags.UsageError, match="not valid Unicode"):
        await session.prompt([ags.TextPart("ok"), ags.TextPart("\ud800")])
    assert await session.log() == []
    assert model_of(runtime).requests == []


async def test_nul_characters_survive_the_round_trip(make_runtime: Make) -> None:
    @ags.tool
    def binaryish() -> str:
        """Text with NULs."""
        return "a\x00b"

    runtime = make_runtime([[ags.ToolCall("binaryish", {})], "seen"], tools=[binaryish])
    session = await runtime.create_session()
    await session.prompt("nul\x00input")
    reopened = await make_runtime(["x"]).open_session(session.id)
    assert reopened.messages[0].content == "nul\x00input"
    assert reopened.messages[2].content == "a\x00b"


BIG = "x" * 2_000_000


@ags.tool
def dump() -> str:
    """Return two megabytes."""
    return BIG


async def test_a_two_megabyte_result_is_cut_with_a_marker(make_runtime: Make) -> None:
    runtime = make_runtime([[ags.ToolCall("dump", {})], "got it"], tools=[dump])
    session = await runtime.create_session()
    await session.prompt("dump")
    result = str(session.messages[2].content)
    limit = ags.Config().max_tool_result_chars
    assert limit is not None and len(result) <= limit + 200
    assert "omitted" in result and result.startswith("x") and result.endswith("x")


async def test_with_the_limit_off_an_oversized_result_becomes_a_placeholder(
    make_runtime: Make,
) -> None:
    config = ags.Config(max_tool_result_chars=None, context_window=50_000, retry_base_delay=0)
    runtime = make_runtime(
        [[ags.ToolCall("dump", {})], "done", "next"],
        tools=[dump],
        config=config,
        summarizer=ags.ScriptedModel(["a summary"]),
    )
    session = await runtime.create_session()
    assert (await session.prompt("dump")).text == "done"
    assert (await session.prompt("and the next prompt?")).text == "next"
    last = model_of(runtime).requests[-1]
    shown = [m for m in last.messages if isinstance(m, ags.ToolResultMessage)]
    assert "omitted" in str(shown[0].content) and len(str(shown[0].content)) < 300
    # The stored result is intact; the placeholder is a durable decision of the log.
    entries = [r.entry for r in await session.log()]
    stored = next(e for e in entries if isinstance(e, ToolResultEntry))
    assert stored.content == BIG
    assert any(isinstance(e, Omitted) for e in entries)
    # retry() and compact() work too.
    assert await session.compact() in (True, False)


# -- write-ahead -------------------------------------------------------------------------------


async def test_no_tool_runs_before_its_call_is_durable(
    make_runtime: Make, db_path: Path, tmp_path: Path
) -> None:
    side = tmp_path / "side.txt"

    @ags.tool(effect="write")
    def touch(n: int) -> str:
        """Append to the side file."""
        with side.open("a") as handle:
            handle.write(f"{n}\n")
        return "touched"

    refusing = {"on": False}

    def refuse(entries: Sequence[LogEntry]) -> bool:
        return refusing["on"] and any(isinstance(e, AssistantEntry) for e in entries)

    store = Refusing(ags.SQLiteStore(db_path), refuse)
    calls = [ags.ToolCall("touch", {"n": 1}), ags.ToolCall("touch", {"n": 2})]
    runtime = make_runtime([calls, "both done"], tools=[touch], store=store)
    session = await runtime.create_session()
    refusing["on"] = True
    with pytest.raises(ags.StoreError, match="flush"):
        await session.prompt("touch twice")
    assert not side.exists()  # the response was not durable: nothing ran
    assert session.unflushed_entries == 1
    with pytest.raises(ags.SessionBusyError):
        await session.prompt("meanwhile")
    refusing["on"] = False
    assert await session.flush() == 1
    result = await session.retry()
    assert result.text == "both done"
    assert side.read_text() == "1\n2\n"  # each tool ran exactly once
    assert (await kinds(session)).count("tool_result") == 2


# -- cancellation ------------------------------------------------------------------------------


async def test_a_timeout_during_a_commit_leaves_the_session_usable(
    make_runtime: Make, db_path: Path
) -> None:
    store = Slow(ags.SQLiteStore(db_path), delay=0.3)
    runtime = make_runtime(["first", "second"], store=store)
    session = await runtime.create_session()
    store.slow = True
    turn = asyncio.ensure_future(session.prompt("will time out while committing"))
    # The caller's timeout runs out (it cancels the call) once the commit is under way, not after
    # a fixed time: a busy machine can spend that before the turn reaches its first commit.
    await asyncio.wait_for(store.committing.wait(), 120)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    store.slow = False
    assert not session.busy
    result = await session.prompt("next")  # no ConflictError, no SessionBusyError
    entries = [r.entry for r in await session.log()]
    seqs = [r.seq for r in await session.log()]
    assert seqs == list(range(len(seqs)))
    assert result.text in ("first", "second")
    interrupted = [e for e in entries if isinstance(e, Interrupted)]
    assert interrupted and all("cancelled" in e.reason for e in interrupted)


async def test_leaving_stream_early_cancels_the_turn_cleanly(make_runtime: Make) -> None:
    release = asyncio.Event()

    @ags.tool
    async def wait() -> str:
        """Wait for a while."""
        await release.wait()
        return "waited"

    runtime = make_runtime([[ags.ToolCall("wait", {})], "never", "second prompt"], tools=[wait])
    session = await runtime.create_session()
    async for event in session.stream("start"):
        if isinstance(event, ags.ToolCallStarted):
            break
    result = await session.prompt("next")  # the abandoned turn settled first
    assert result.text in ("never", "second prompt")
    entries = [r.entry for r in await session.log()]
    closed = [e for e in entries if isinstance(e, Interrupted)]
    assert closed and "cancelled" in closed[0].reason
    synthetic = [e for e in entries if isinstance(e, ToolResultEntry) and e.is_error]
    assert synthetic and "cancelled" in str(synthetic[0].content)


async def test_session_cancel_stops_a_running_turn(make_runtime: Make) -> None:
    started = asyncio.Event()

    @ags.tool
    async def hang() -> str:
        """Hang until cancelled."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    runtime = make_runtime([[ags.ToolCall("hang", {})], "after"], tools=[hang])
    session = await runtime.create_session()
    task = asyncio.create_task(session.prompt("hang"))
    await started.wait()
    assert session.cancel()
    await asyncio.sleep(0)  # the cancel is delivered; the turn has yet to record its abandoned step
    # Winding down is not running: a second cancel would land inside that record's write.
    assert session.busy and not session.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not session.busy and not session.cancel()
    assert any(isinstance(r.entry, Interrupted) for r in await session.log())
    assert (await session.prompt("again")).text == "after"


# -- budget and overflow -----------------------------------------------------------------------


async def test_a_prompt_that_cannot_fit_even_after_compaction_costs_nothing(
    make_runtime: Make,
) -> None:
    summarizer = ags.ScriptedModel(["summary"])
    config = ags.Config(context_window=4_000, keep_user_turns=1, retry_base_delay=0)
    runtime = make_runtime(["a", "b", "c"], config=config, summarizer=summarizer)
    session = await runtime.create_session()
    await session.prompt("one")
    await session.prompt("two")
    before = await session.log()
    huge = "word " * 20_000
    with pytest.raises(ags.BudgetExceededError) as info:
        await session.prompt(huge)
    assert info.value.text == huge
    assert summarizer.requests == []  # nothing was summarised
    assert await session.log() == before  # nothing was stored
    assert (await session.prompt("small again")).text == "c"


async def test_a_failing_summariser_still_gives_the_text_back(make_runtime: Make) -> None:
    summarizer = ags.ScriptedModel([RuntimeError("summariser down")])
    runtime = make_runtime(
        ["a", "b", "c"],
        config=ags.Config(context_window=2_000, keep_user_turns=1, retry_base_delay=0),
        summarizer=summarizer,
    )
    session = await runtime.create_session()
    await session.prompt("x " * 900)
    await session.prompt("short")
    before = await session.log()
    with pytest.raises(ags.BudgetExceededError) as info:
        await session.prompt("y " * 1000)
    assert info.value.text == "y " * 1000
    assert await session.log() == before
    assert "summariser" in str(info.value)
    assert len(summarizer.requests) == 1


async def test_a_provider_overflow_compacts_once_and_retries_once(make_runtime: Make) -> None:
    summarizer = ags.ScriptedModel(["the story so far"])
    overflow = ags.ContextOverflowError("prompt is too long", status=400)
    runtime = make_runtime(
        ["a", "b", overflow, "fits now"],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    session = await runtime.create_session()
    await session.prompt("one")
    await session.prompt("two")
    result = await session.prompt("three")
    assert result.text == "fits now"
    assert len(summarizer.requests) == 1
    entries = await kinds(session)
    assert entries.count("summary") == 1 and entries.count("provider_failed") == 1
    last = model_of(runtime).requests[-1]
    assert "the story so far" in str(last.messages[0].content)


async def test_overflow_without_auto_compaction_says_what_to_do(make_runtime: Make) -> None:
    overflow = ags.ContextOverflowError("prompt is too long", status=400)
    runtime = make_runtime(
        ["a", overflow], config=ags.Config(auto_compact=False, retry_base_delay=0)
    )
    session = await runtime.create_session()
    await session.prompt("one")
    with pytest.raises(ags.ContextOverflowError):
        await session.prompt("two")
    assert "provider_failed" in await kinds(session)


async def test_components_are_sampled_once_per_provider_call_also_when_compacting(
    make_runtime: Make,
) -> None:
    samples = {"n": 0}

    def load() -> str:
        samples["n"] += 1
        return f"value {samples['n']}"

    summarizer = ags.ScriptedModel(["summary"])
    runtime = make_runtime(
        ["a", "b", "c"],
        summarizer=summarizer,
        components=[ags.ContextComponent("plugin.t.counter", load)],
        config=ags.Config(
            context_window=2_000, keep_user_turns=1, compact_threshold=0.01, retry_base_delay=0
        ),
    )
    session = await runtime.create_session()
    await session.prompt("one")
    await session.prompt("two")
    await session.prompt("three")
    sent = model_of(runtime).requests
    assert samples["n"] == len(sent) == 3  # one sample per provider call, compactions included
    assert [r.entry.kind for r in await session.log()].count("summary") == 1
    # The request right after the compaction: its fresh baseline holds that call's one sample,
    # and no update repeats the component with another value.
    after = sent[2]
    assert dict(after.system)["plugin.t.counter"] == "value 3"
    assert not [m for m in after.messages if isinstance(m, ags.SystemMessage)]
    assert "value 2" in str(sent[1].messages[-1].content)


# -- credentials -------------------------------------------------------------------------------


async def test_a_missing_key_is_refused_before_anything_is_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=ags.get_model("openai:gpt-4.1"),
        project_dir=tmp_path,
    )
    try:
        session = await runtime.create_session()
        with pytest.raises(ags.CredentialsError, match="OPENAI_API_KEY"):
            await session.prompt("hello")
        assert await session.log() == []
        assert session.title is None
    finally:
        await runtime.close()


def test_the_suite_cannot_reach_the_network() -> None:
    import socket

    with pytest.raises(OSError, match="network"):
        socket.create_connection(("192.0.2.1", 443), timeout=1)
