"""Spec exactness: the deviations an outside audit found, one scenario each.

Each test runs a real session on a SQLite file with the scripted model and checks what the model
received, what the log holds, or what the caller got.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.context import LoadResult
from agentsession.log import UserEntry
from agentsession.window import select_window

from .conftest import MakeRuntime

Make = MakeRuntime
README = Path(__file__).parent.parent / "README.md"


# -- item 4: a loader that raises fails the prompt, naming the component -------------------------


async def test_a_raising_loader_fails_the_prompt_naming_the_component(make_runtime: Make) -> None:
    state = {"broken": False, "value": "green"}

    def load() -> str:
        if state["broken"]:
            raise RuntimeError("status service returned garbage")
        return f"Build status: {state['value']}."

    runtime = make_runtime(["one", "two"])
    runtime.register_component(ags.ContextComponent("plugin.ci.status", load))
    session = await runtime.create_session()
    await session.prompt("first")
    before = await session.log()

    state["broken"], state["value"] = True, "red"
    with pytest.raises(ags.ContextLoadError) as caught:
        await session.prompt("second")
    assert caught.value.key == "plugin.ci.status"
    assert "plugin.ci.status" in str(caught.value)
    assert "status service returned garbage" in str(caught.value)
    assert isinstance(caught.value.__cause__, RuntimeError)
    # Nothing was admitted: not the user input, not a checkpoint, not a dispatch record.
    assert await session.log() == before
    assert len(runtime.scripted.requests) == 1

    # Fixed, the same session takes the next prompt, and the model hears the new value.
    state["broken"] = False
    result = await session.prompt("second")
    assert result.text == "one" or result.text == "two"
    last = runtime.scripted.requests[-1]
    updates = [m.content for m in last.messages if isinstance(m, ags.SystemMessage)]
    assert any("Build status: red." in text for text in updates)


async def test_an_explicit_unavailable_keeps_what_the_model_was_told(make_runtime: Make) -> None:
    values: list[LoadResult | str] = ["Build status: green.", ags.UNAVAILABLE]
    runtime = make_runtime(["one", "two"])
    runtime.register_component(ags.ContextComponent("plugin.ci.status", lambda: values[0]))
    session = await runtime.create_session()
    await session.prompt("first")
    values.pop(0)
    await session.prompt("second")
    last = runtime.scripted.requests[-1]
    assert dict(last.system)["plugin.ci.status"] == "Build status: green."
    assert not [m for m in last.messages if isinstance(m, ags.SystemMessage)]


# -- item 5: a legacy <permissions> snapshot is superseded by the current permissions text -------


async def test_current_permissions_supersede_a_legacy_permissions_snapshot(
    make_runtime: Make,
) -> None:
    from .skills.test_legacy_snapshots import PERMISSIONS, _stored_session

    runtime = make_runtime(["Noted."])
    session = await runtime.open_session(await _stored_session(runtime.store))
    session.set_permission_preset("read-only")
    await session.prompt("Shorter, please.")
    [request] = runtime.scripted.requests
    # The legacy snapshot replays unchanged, as its own user message ...
    assert PERMISSIONS in [m.content for m in request.messages if isinstance(m, ags.UserMessage)]
    # ... and the permissions the model acts on say, in so many words, that they win.
    current = dict(request.system)["core.permissions"]
    assert "Current system permissions supersede earlier guidance." in current
    assert "read-only" in current


# -- item 7: prompt parts are validated -----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "named"),
    [
        # raw bytes on purpose: the validation under test rejects them (data is base64 text)
        ([ags.ImagePart("image/png", data=b"\x89PNG")], "part 0 (ImagePart)"),  # type: ignore[arg-type]
        ([ags.TextPart("look"), {"kind": "text", "text": "hi"}], "part 1 (dict)"),
        ([ags.TextPart(123)], "part 0 (TextPart)"),  # type: ignore[arg-type]
        ([ags.ImagePart("image/png")], "part 0 (ImagePart)"),
        ([ags.ImagePart(None, url="https://x.test/a.png")], "part 0 (ImagePart)"),  # type: ignore[arg-type]
        (b"not a list", "bytes"),
    ],
)
async def test_invalid_prompt_parts_are_usage_errors_naming_the_part(
    make_runtime: Make, content: object, named: str
) -> None:
    runtime = make_runtime(["never"])
    session = await runtime.create_session()
    with pytest.raises(ags.UsageError) as caught:
        await session.prompt(content)  # type: ignore[arg-type]
    assert named in str(caught.value)
    with pytest.raises(ags.UsageError):
        await session.preview_request(content)  # type: ignore[arg-type]
    assert await session.log() == []
    assert runtime.scripted.requests == []


# -- item 8: a turn wider than the cap is documented where the window is --------------------------


def test_parallel_calls_wider_than_the_cap_are_sent_whole_and_the_readme_says_so() -> None:
    calls = tuple(ags.ToolCall(f"t{i}", {}, id=f"c{i}") for i in range(10))
    history: list[ags.Message] = [
        ags.UserMessage("do ten things"),
        ags.AssistantMessage(tool_calls=calls),
        *(ags.ToolResultMessage(c.id, c.name, "ok") for c in calls),
    ]
    window = select_window(history, 6)
    assert window.count == 12  # one model step is never split: no call loses its result
    section = README.read_text(encoding="utf-8").split("### Window, budget, compaction")[1]
    section = section.split("\n### ")[0]
    text = " ".join(section.split())
    assert re.search(r"parallel (tool )?calls", text)
    assert "more than the cap" in text or "wider than the cap" in text


# -- item 9: an exception a scripted reply raises ends the prompt with ProviderError -------------


@pytest.mark.parametrize(
    "raised",
    [ValueError("scripted failure"), ags.UsageError("scripted usage"), ags.StoreError("disk")],
)
async def test_a_scripted_exception_ends_the_prompt_with_provider_error(
    make_runtime: Make, raised: Exception
) -> None:
    runtime = make_runtime([raised, "recovered"])
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError) as caught:
        await session.prompt("hello")
    assert caught.value.__cause__ is raised
    # The input and the admitted context stay; retry() sends the same request again.
    assert [r.entry for r in await session.log() if isinstance(r.entry, UserEntry)]
    result = await session.retry()
    assert result.text == "recovered"
    first, second = runtime.scripted.requests
    assert first == second


async def test_scripted_provider_errors_keep_their_own_type(make_runtime: Make) -> None:
    runtime = make_runtime(
        [ags.ContextOverflowError("too long"), "fine"],
        config=ags.Config(retry_base_delay=0, auto_compact=False),
    )
    session = await runtime.create_session()
    with pytest.raises(ags.ContextOverflowError):
        await session.prompt("hello")


# -- item 1: the preview is what prompt() sends, skill selection included ------------------------


async def test_preview_request_carries_the_skill_selection_prompt_sends(
    make_runtime: Make, tmp_path: Path
) -> None:
    from .skills.sessions import make_skills

    make_skills(tmp_path / "skills", "pdf", "docx")
    runtime = make_runtime(["one", "two"], skills_dirs=[tmp_path / "skills"])
    session = await runtime.create_session()
    preview = await session.preview_request("summarise $pdf")
    assert '<skill name="pdf"' in str(preview.messages[-1].content)
    await session.prompt("summarise $pdf")
    assert runtime.scripted.requests[-1] == preview
    # Nothing was admitted by the preview: one selection, saved with the prompt's own turn.
    assert [c.user_turn for c in session.runtime_contexts()] == [0]

    content = [ags.TextPart("and this one")]
    preview = await session.preview_request(content, skills=["docx"])
    await session.prompt(content, skills=["docx"])
    assert runtime.scripted.requests[-1] == preview
    with pytest.raises(ags.UsageError, match="unknown skill"):
        await session.preview_request("x", skills=["nope"])


# -- items 2 and 3: checkpoints fold to the effective state; every epoch records one --------------


def fold(checkpoints: list[ags.SystemPromptCheckpoint]) -> dict[str, str]:
    """The system context the checkpoints say the model has: every ``changed`` applied in order."""
    state: dict[str, str] = {}
    for checkpoint in checkpoints:
        for key, text in checkpoint.changed.items():
            if text is None:
                state.pop(key, None)
            else:
                state[key] = text
    return state


async def test_a_value_that_returns_at_a_window_advance_is_recorded(make_runtime: Make) -> None:
    value = {"now": "Build status: green."}
    config = ags.Config(retry_base_delay=0, titles=False, max_transcript_messages=4, window_step=1)
    runtime = make_runtime(["one", "two", "three"], config=config)
    runtime.register_component(ags.ContextComponent("plugin.ci.status", lambda: value["now"]))
    session = await runtime.create_session()
    await session.prompt("first")
    value["now"] = "Build status: red."
    await session.prompt("second")  # mid-epoch: an update message says red
    value["now"] = "Build status: green."
    await session.prompt("third")  # the window advances: a fresh baseline says green again
    last = runtime.scripted.requests[-1]
    assert dict(last.system)["plugin.ci.status"] == "Build status: green."
    assert not [m for m in last.messages if isinstance(m, ags.SystemMessage)]
    checkpoints = session.system_prompt_checkpoints()
    assert fold(checkpoints)["plugin.ci.status"] == "Build status: green."
    assert fold(checkpoints) == dict(last.system)
    # Every record holds a section's text as the system part carries it, mid-epoch too.
    assert checkpoints[1].changed == {"plugin.ci.status": "Build status: red."}


async def test_an_epoch_the_tools_start_records_every_section(
    make_runtime: Make, tmp_path: Path
) -> None:
    from .skills.sessions import RESPONSES

    @ags.tool
    def lookup(term: str) -> str:
        """Look a term up."""
        return term

    config = ags.Config(retry_base_delay=0, titles=False)
    first = make_runtime(
        ["one"], model=ags.ScriptedModel(["one"], profile=RESPONSES), config=config
    )
    session = await first.create_session()
    await session.prompt("first")
    await first.close()
    # The same session, reopened by an application that offers one more tool: the tools change,
    # the System Context does not.
    second = make_runtime(
        model=ags.ScriptedModel(["two"], profile=RESPONSES), config=config, tools=[lookup]
    )
    reopened = await second.open_session(session.id)
    await reopened.prompt("second")
    epochs = [r.entry for r in await reopened.log() if r.entry.kind == "epoch"]
    assert [e.reason for e in epochs] == ["start", "tools"]
    checkpoints = reopened.system_prompt_checkpoints()
    assert len(checkpoints) == 2
    [request] = second.scripted.requests
    assert checkpoints[-1].changed == dict(request.system)
    assert checkpoints[-1].message_count == 3


# -- item 6: a fork never splits what committed together ----------------------------------------


async def test_a_fork_at_any_seq_ends_where_that_commit_ends(
    make_runtime: Make, tmp_path: Path
) -> None:
    from .skills.sessions import load, make_skills

    make_skills(tmp_path / "skills", "pdf", "docx")
    config = ags.Config(retry_base_delay=0, titles=False)
    runtime = make_runtime(
        [load("docx"), "done", "again", "after the fork"],
        skills_dirs=[tmp_path / "skills"],
        config=config,
    )
    session = await runtime.create_session()
    commits: list[tuple[int, int]] = []

    async def run(text: str) -> None:
        async for event in session.stream(text):
            if isinstance(event, ags.StepCommitted):
                commits.append((event.first_seq, event.last_seq))

    await run("summarise $pdf")  # user + selection, a load_skill result, an update message
    session.set_permission_preset("read-only")
    await run("and now?")  # user + permission change + update message
    log = await session.log()
    assert {r.entry.kind for r in log} >= {
        "user",
        "runtime_context",
        "epoch",
        "system_prompt_checkpoint",
        "mid_conversation_system",
        "tool_result",
        "skill_loaded",
        "permission_changed",
    }
    assert [seq for first, last in commits for seq in range(first, last + 1)] == [
        r.seq for r in log
    ]
    for record in log:
        end = next(last for first, last in commits if first <= record.seq <= last)
        fork = await session.fork(record.seq)
        assert (await fork.log())[-1].seq == end, record.entry.kind

    # The fork at the first user entry keeps that turn's selection: its request sends the block.
    fork = await session.fork(0)
    assert [c.user_turn for c in fork.runtime_contexts()] == [0]
    await fork.prompt("branch here")
    sent = runtime.scripted.requests[-1]
    first_user = next(m for m in sent.messages if isinstance(m, ags.UserMessage))
    assert isinstance(first_user.content, str)
    assert first_user.content.startswith('<skill name="pdf"')


def test_commit_runs_of_compaction_and_recovery_are_kept_whole() -> None:
    from agentsession.log import (
        AssistantEntry,
        ContextEpoch,
        Dispatch,
        Interrupted,
        LogEntry,
        Record,
        Summary,
        ToolResultEntry,
    )
    from agentsession.log.commits import commit_end

    calls = (ags.ToolCall("a", {}, id="a"), ags.ToolCall("b", {}, id="b"))
    entries: list[LogEntry] = [
        UserEntry("go", timestamp="t0"),  # 0 ┐ admission
        Dispatch("m", 1, "d", timestamp="t0"),  # 1 ┘
        AssistantEntry(tool_calls=calls, timestamp="t1"),  # 2   response
        ToolResultEntry("a", "a", "interrupted", True, "t2"),  # 3 ┐ recovery closes the step
        ToolResultEntry("b", "b", "interrupted", True, "t2"),  # 4 │
        Interrupted("process ended", "t2"),  # 5 ┘
        Summary("so far", 2, "t3"),  # 6 ┐ compaction
        ContextEpoch(1, (), (), 2, "compaction", "m", timestamp="t3"),  # 7 ┘
        UserEntry("next", timestamp="t4"),  # 8 ┐ admission
        Dispatch("m", 1, "d", timestamp="t4"),  # 9 ┘
    ]
    records = [Record(seq, entry) for seq, entry in enumerate(entries)]
    ends = [commit_end(records[seq:]) for seq in range(len(records))]
    assert ends == [1, 1, 2, 5, 5, 5, 7, 7, 9, 9]
