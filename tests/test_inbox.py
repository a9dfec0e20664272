"""The inbox: ``steer()``, ``queue()``, ``pending_input()`` and ``cancel_input()`` beside a turn.

A tool that waits on an event holds the turn open while the test, in its own task, steers or
queues; nothing waits on time. Each test checks what the model got (``ScriptedModel.requests``)
and what the log holds; the stored form of the inbox entries is frozen in
``tests/fixtures/log_inbox_v1.jsonl``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.inspection.describe import describe
from agentsession.log import (
    InputCancelled,
    InputDelivered,
    InputQueued,
    Record,
    UserEntry,
    dump_entry,
    load_entry,
)
from agentsession.log.commits import commit_end

from .cli_inprocess import cli_here
from .conftest import MakeRuntime
from .held import Hold

FIXTURE = Path(__file__).parent / "fixtures" / "log_inbox_v1.jsonl"


def texts(request: ags.Request) -> list[str]:
    """Each message of a request as ``role:text``."""
    out = []
    for message in request.messages:
        content = message.content
        text = content if isinstance(content, str) else ""
        if isinstance(message, ags.ToolResultMessage):
            out.append(f"tool:{text}")
        elif isinstance(message, ags.AssistantMessage):
            calls = ",".join(c.name for c in message.tool_calls)
            out.append(f"assistant:{text}{'[' + calls + ']' if calls else ''}")
        else:
            out.append(f"{message.role}:{text}")
    return out


def test_the_stored_form_of_version_1_keeps_loading() -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    loaded = []
    for line in lines:
        row = json.loads(line)
        entry = load_entry(row["kind"], row["version"], json.dumps(row["data"]))
        loaded.append(entry)
        kind, version, data = dump_entry(entry)
        assert (kind, version) == (row["kind"], 1)
        assert load_entry(kind, version, data) == entry
    queued = [e for e in loaded if isinstance(e, InputQueued)]
    assert [(q.mode, q.text) for q in queued] == [
        ("steer", "use the staging bucket, not prod"),
        ("queue", "then write the release notes"),
        ("queue", "never mind"),
    ]
    delivered = [e for e in loaded if isinstance(e, InputDelivered)]
    assert [d.mode for d in delivered] == ["steer", "queue"]  # "steer" is the default
    assert [e.input_id for e in loaded if isinstance(e, InputCancelled)] == [queued[2].input_id]


async def test_a_steer_from_another_task_lands_after_the_tool_result(
    make_runtime: MakeRuntime,
) -> None:
    hold = Hold()
    runtime = make_runtime(
        [[ags.ToolCall("work", {"step": "one"})], "finished with the correction"],
        tools=[hold.tool()],
    )
    session = await runtime.create_session()
    turn = asyncio.create_task(session.prompt("start the work"))
    await hold.started.wait()
    accepted = await session.steer("use the staging bucket")  # no SessionBusyError
    assert [(p.id, p.mode, p.state) for p in session.pending_input()] == [
        (accepted.id, "steer", "pending")
    ]
    hold.go.set()
    result = await turn
    assert result.text == "finished with the correction"
    assert session.pending_input() == []
    second = runtime.scripted.requests[1]
    assert texts(second) == [
        "user:start the work",
        "assistant:[work]",
        "tool:did one",
        "user:use the staging bucket",
    ]
    # The inspection rebuilds that request exactly, the steer where it was sent.
    requests = (await session.inspect()).requests
    assert requests[1].exact
    assert texts(requests[1].request) == texts(second)
    kinds = [r.entry.kind for r in await session.log()]
    delivered = kinds.index("input_delivered")
    assert kinds[delivered + 1] == "user"
    assert kinds.index("input_queued") < kinds.index("tool_result") < delivered


async def test_queued_inputs_run_as_their_own_prompts_in_order(make_runtime: MakeRuntime) -> None:
    hold = Hold()
    runtime = make_runtime(
        [[ags.ToolCall("work", {"step": "one"})], "first done", "second done", "third done"],
        tools=[hold.tool()],
    )
    session = await runtime.create_session()
    turn = asyncio.create_task(session.prompt("first"))
    await hold.started.wait()
    await session.queue("second")
    await session.queue("third")
    hold.go.set()
    assert (await turn).text == "first done"
    results = await session.deliver_pending()  # waits for the delivery the turn's end started
    assert results == [] or [r.text for r in results] == ["second done", "third done"]
    assert session.pending_input() == []
    users = [m.content for m in session.messages if isinstance(m, ags.UserMessage)]
    assert users == ["first", "second", "third"]
    last = runtime.scripted.requests[-1]
    assert texts(last)[-1] == "user:third"


async def test_a_cancelled_input_is_never_delivered(make_runtime: MakeRuntime) -> None:
    hold = Hold()
    runtime = make_runtime(
        [[ags.ToolCall("work", {"step": "one"})], "first done", "kept done"],
        tools=[hold.tool()],
    )
    session = await runtime.create_session()
    turn = asyncio.create_task(session.prompt("first"))
    await hold.started.wait()
    dropped = await session.steer("forget this")
    kept = await session.queue("kept")
    assert await session.cancel_input(dropped.id)
    assert not await session.cancel_input(dropped.id)  # already withdrawn
    assert not await session.cancel_input("no-such-input")
    assert [p.id for p in session.pending_input()] == [kept.id]
    hold.go.set()
    await turn
    await session.deliver_pending()
    assert not await session.cancel_input(kept.id)  # delivered
    users = [m.content for m in session.messages if isinstance(m, ags.UserMessage)]
    assert users == ["first", "kept"]
    assert all("forget this" not in texts(r) for r in runtime.scripted.requests)


async def test_a_steer_while_idle_starts_a_turn(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime(["hello back"])
    session = await runtime.create_session()
    await session.steer("hello")
    await session.deliver_pending()
    assert [m.content for m in session.messages] == ["hello", "hello back"]
    assert session.pending_input() == []


async def test_pending_input_survives_a_reopen_and_is_delivered_once(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(["answer to a", "answer to b"])
    session = await runtime.create_session()
    first = await session.steer("a", start_turn=False)
    second = await session.queue("b", start_turn=False)
    await session.close()
    reopened = await runtime.open_session(session.id)
    assert [p.id for p in reopened.pending_input()] == [first.id, second.id]
    results = await reopened.deliver_pending()
    assert [r.text for r in results] == ["answer to a", "answer to b"]
    assert await reopened.deliver_pending() == []
    again = await runtime.open_session(session.id)
    assert again.pending_input() == []
    users = [m.content for m in again.messages if isinstance(m, ags.UserMessage)]
    assert users == ["a", "b"]


async def test_bad_input_is_refused_before_anything_is_stored(make_runtime: MakeRuntime) -> None:
    runtime = make_runtime([])
    session = await runtime.create_session()
    with pytest.raises(ags.UsageError):
        await session.steer("   ")
    with pytest.raises(ags.UsageError):
        await session.queue("bad \ud800 text")
    assert await session.log() == []


def test_a_fork_never_splits_a_delivery_from_its_user_entry() -> None:
    records = [
        Record(0, UserEntry("go")),
        Record(1, InputDelivered("i1")),
        Record(2, UserEntry("steer")),
        Record(3, InputDelivered("i2")),
        Record(4, UserEntry("steer 2")),
        Record(5, ags.SystemPromptCheckpoint(0, "t", {})),
    ]
    assert commit_end(records) == 5
    assert commit_end(records[1:]) == 5
    # A user entry after something that is no delivery starts a commit of its own.
    lone = [Record(0, UserEntry("a")), Record(1, UserEntry("b"))]
    assert commit_end(lone) == 0


def test_inbox_entries_read_well_in_the_timeline() -> None:
    title, text = describe(InputQueued("abcdef0123", "steer", "use staging"))
    assert title.startswith("input steer · abcdef01")
    assert text == "use staging"
    assert describe(InputCancelled("abcdef0123"))[0] == "input cancelled · abcdef01"
    assert "delivered" in describe(InputDelivered("abcdef0123"))[0]


async def test_show_lists_the_inputs_still_waiting(tmp_path: Path) -> None:
    db = tmp_path / "show.db"
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel([]))
    async with runtime:
        session = await runtime.create_session()
        steer = await session.steer("use the staging bucket", start_turn=False)
        queued = await session.queue("then the notes", start_turn=False)
        dropped = await session.queue("never mind", start_turn=False)
        assert await session.cancel_input(dropped.id)
    shown = cli_here(tmp_path, "--db", str(db), "show", session.id)
    assert shown.code == 0, shown.err
    assert shown.out.splitlines()[-2:] == [
        f"[waiting: steer {steer.id[:8]}, at the next step] use the staging bucket",
        f"[waiting: queue {queued.id[:8]}, as the next prompt] then the notes",
    ]
    as_json = cli_here(tmp_path, "--db", str(db), "--json", "show", session.id)
    rows = [json.loads(line) for line in as_json.out.splitlines()]
    waiting = [r for r in rows if r.get("kind") == "pending_input"]
    assert [(w["id"], w["mode"], w["state"]) for w in waiting] == [
        (steer.id, "steer", "pending"),
        (queued.id, "queue", "pending"),
    ]


def test_the_sync_facade_steers_and_queues(tmp_path: Path) -> None:
    from agentsession.sync import run_sync

    model = ags.ScriptedModel(["one", "two"])
    runtime = ags.Runtime(store=ags.SQLiteStore(tmp_path / "sync.db"), model=model)
    session = runtime.create_session_sync()
    first = session.steer_sync("first")  # idle: a turn starts on the facade's loop
    second = session.queue_sync("second")
    assert first.mode == "steer" and second.mode == "queue"
    run_sync(session.deliver_pending())
    users = [m.content for m in session.messages if isinstance(m, ags.UserMessage)]
    runtime.close_sync()
    assert users == ["first", "second"]
    assert [texts(r)[-1] for r in model.requests] == ["user:first", "user:second"]


async def test_the_request_preview_shows_a_waiting_steer_where_prompt_sends_it(
    make_runtime: MakeRuntime,
) -> None:
    runtime = make_runtime(["answered"])
    session = await runtime.create_session()
    await session.steer("mind the staging bucket", start_turn=False)
    preview = await session.preview_request("deploy it")
    assert texts(preview) == ["user:deploy it", "user:mind the staging bucket"]
    upcoming = (await session.inspect()).next_request
    assert upcoming is not None and texts(upcoming.request) == ["user:mind the staging bucket"]
    await session.prompt("deploy it")
    sent = runtime.scripted.requests[0]
    assert ags.request.digest(sent) == ags.request.digest(preview)
    assert session.pending_input() == []


async def test_a_steered_turn_is_not_shown_as_unfinished(make_runtime: MakeRuntime) -> None:
    from agentsession.cli.chatview import MARKS, outcome_marks, recap

    hold = Hold()
    runtime = make_runtime(
        [[ags.ToolCall("work", {"step": "one"})], "done with both"], tools=[hold.tool()]
    )
    session = await runtime.create_session()
    turn = asyncio.create_task(session.prompt("start"))
    await hold.started.wait()
    await session.steer("and mind the tests")
    hold.go.set()
    await turn
    turns = (await session.inspect()).turns
    assert [(t.text, t.outcome) for t in turns] == [
        ("start", "steered"),
        ("and mind the tests", "answered"),
    ]
    assert outcome_marks(list(session.messages), [t.outcome for t in turns]) == {}
    lines = await recap(runtime.store, session.id)
    assert not any(mark in line for line in lines for mark in MARKS.values())
    assert "you › and mind the tests" in lines


@pytest.mark.postgres
async def test_steer_queue_cancel_and_reopen_on_postgres(pg_dsn: str, tmp_path: Path) -> None:
    hold = Hold()
    model = ags.ScriptedModel(
        [[ags.ToolCall("work", {"step": "one"})], "steered", "queued ran", "after reopen"]
    )
    runtime = ags.Runtime(
        store=ags.PostgresStore(pg_dsn), model=model, tools=[hold.tool()], project_dir=tmp_path
    )
    async with runtime:
        session = await runtime.create_session()
        turn = asyncio.create_task(session.prompt("go"))
        await hold.started.wait()
        await session.steer("b")
        await session.queue("c")
        dropped = await session.queue("never")
        assert await session.cancel_input(dropped.id)
        hold.go.set()
        await turn
        await session.deliver_pending()
        later = await session.queue("d", start_turn=False)
        await session.close()
        reopened = await runtime.open_session(session.id)
        assert [p.id for p in reopened.pending_input()] == [later.id]
        assert [r.text for r in await reopened.deliver_pending()] == ["after reopen"]
        users = [m.content for m in reopened.messages if isinstance(m, ags.UserMessage)]
    assert users == ["go", "b", "c", "d"]
    assert texts(model.requests[1])[-2:] == ["tool:did one", "user:b"]


async def test_a_second_session_object_adds_input_beside_the_driver(
    make_runtime: MakeRuntime,
) -> None:
    hold = Hold()
    runtime = make_runtime(
        [[ags.ToolCall("work", {"step": "one"})], "steered", "queued ran"], tools=[hold.tool()]
    )
    driver = await runtime.create_session()
    turn = asyncio.create_task(driver.prompt("go"))
    await hold.started.wait()
    other = await make_runtime([], tools=[hold.tool()]).open_session(driver.id)
    # Session objects of one process share its lease: this one must not start a turn of its
    # own beside the running one, so it only records (the driver takes the entries).
    steer = await other.steer("from elsewhere", start_turn=False)
    queued = await other.queue("after that", start_turn=False)
    hold.go.set()
    await turn
    await driver.deliver_pending()
    records = await driver.log()
    delivered = [r.entry.input_id for r in records if isinstance(r.entry, InputDelivered)]
    assert delivered == [steer.id, queued.id]
    users = [m.content for m in driver.messages if isinstance(m, ags.UserMessage)]
    assert users == ["go", "from elsewhere", "after that"]
    assert texts(runtime.scripted.requests[1])[-2:] == ["tool:did one", "user:from elsewhere"]


CHILD = """
import asyncio, sys
import agentsession as ags

@ags.tool
async def work(step: str) -> str:
    '''Do one step.

    Args:
        step: Which step.
    '''
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    return f"did {step}"

async def main() -> None:
    model = ags.ScriptedModel([[ags.ToolCall("work", {"step": "one"})], "steered", "queued"])
    runtime = ags.Runtime(store=ags.SQLiteStore(sys.argv[1]), model=model, tools=[work],
                          project_dir=sys.argv[3], config=ags.Config(titles=False))
    session = await runtime.open_session(sys.argv[2])
    await session.prompt("go")
    await session.deliver_pending()
    await runtime.close()

asyncio.run(main())
"""


async def test_another_process_adds_input_and_the_lease_holder_delivers_it(
    tmp_path: Path,
) -> None:
    db = tmp_path / "two.db"
    async with ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel([])) as runtime:
        session_id = (await runtime.create_session()).id
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        str(db),
        session_id,
        str(tmp_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert await asyncio.wait_for(child.stdout.readline(), 120) == b"ready\n"
        async with ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel([])) as here:
            other = await here.open_session(session_id)
            steer = await other.steer("from another process")
            queued = await other.queue("and then this")
            # Only the driver's inbox holds what was added beside it: nothing to cancel here.
            assert not await other.cancel_input(queued.id)
            assert other.pending_input() == []
        child.stdin.write(b"go on\n")
        await child.stdin.drain()
        assert await asyncio.wait_for(child.wait(), 120) == 0
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()
    async with ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel([])) as runtime:
        records = await (await runtime.open_session(session_id)).log()
    kinds = [r.entry.kind for r in records]
    delivered = [r.entry.input_id for r in records if isinstance(r.entry, InputDelivered)]
    assert delivered == [steer.id, queued.id]
    users = [r.entry.content for r in records if isinstance(r.entry, UserEntry)]
    assert users == ["go", "from another process", "and then this"]
    first = kinds.index("input_delivered")
    assert kinds[first - 1] in ("tool_result", "input_queued")  # after the tool's result
    assert kinds.index("tool_result") < first
