"""Instruction files through real sessions: baseline, nested discovery, edits, removals, moves.

Real folders, a real SQLite store and the built-in ``read_file``; the assertions read the model's
requests (baseline keys and texts, mid-conversation updates) and the log.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.log import InstructionsFound, ToolResultEntry
from agentsession.log.entries import MidConversationSystemMessage

from .conftest import MakeRuntime
from .scenario import assert_prefix_stable, kinds, make_project, new_updates, updates

Make = MakeRuntime
ROOT_KEY = "core.instructions:AGENTS.md"
NESTED_KEY = "core.instructions:pkg/sub/AGENTS.md"
ROOT_TEXT = "Root rules: indent with four spaces."
NESTED_TEXT = "Sub rules: no global variables in pkg/sub."


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path: Path, xdg: Path) -> Path:
    project = make_project(tmp_path)
    (project / "AGENTS.md").write_text(ROOT_TEXT + "\n")
    for folder in ("pkg/sub", "pkg/sibling"):
        (project / folder).mkdir(parents=True)
        (project / folder / "file.py").write_text(f"# {folder}\nx = 1\n")
    (project / "pkg/sub/AGENTS.md").write_text(NESTED_TEXT + "\n")
    return project


def read(path: str) -> list[ags.ToolCall]:
    return [ags.ToolCall("read_file", {"path": path})]


def runtime_for(make_runtime: Make, project: Path, replies: Any, **kwargs: Any) -> ags.Runtime:
    model = replies if isinstance(replies, ags.ScriptedModel) else ags.ScriptedModel(replies)
    return make_runtime(model=model, project_dir=project, tools=ags.builtin_tools(), **kwargs)


def scripted(runtime: ags.Runtime) -> ags.ScriptedModel:
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    return model


def baseline(request: ags.Request) -> dict[str, str]:
    return dict(request.system)


async def test_the_project_file_is_in_the_first_baseline(make_runtime: Make, project: Path) -> None:
    runtime = runtime_for(make_runtime, project, ["hi"])
    session = await runtime.create_session()
    await session.prompt("hello")
    system = baseline(scripted(runtime).requests[0])
    keys = [k for k in system if k.startswith("core.instructions:")]
    assert keys == [ROOT_KEY]  # the nested file is not known before a read below it
    assert ROOT_TEXT in system[ROOT_KEY]
    assert '<instructions path="AGENTS.md">' in system[ROOT_KEY]
    assert NESTED_TEXT not in repr(scripted(runtime).requests[0])


async def test_a_nested_file_joins_once_when_a_read_reaches_below_it(
    make_runtime: Make, project: Path
) -> None:
    runtime = runtime_for(
        make_runtime,
        project,
        [
            read("pkg/sibling/file.py"),
            read("pkg/sub/file.py"),
            read("pkg/sub/file.py"),
            "done",
            "and more",
        ],
    )
    model = scripted(runtime)
    session = await runtime.create_session()
    steps = [
        (e.first_seq, e.last_seq)
        async for e in session.stream("look around")
        if isinstance(e, ags.StepCommitted) and e.what == "tool_result"
    ]

    assert new_updates(model, 1) == []  # the sibling folder has no file of its own
    (joined,) = new_updates(model, 2)
    assert "Instruction file pkg/sub/AGENTS.md, complete current contents" in joined
    assert NESTED_TEXT in joined and ROOT_TEXT not in joined
    assert "apply to work under pkg/sub/" in joined
    # It follows the tool result that found it.
    assert model.requests[2].messages[-2].role == "tool"
    assert isinstance(model.requests[2].messages[-1], ags.SystemMessage)
    assert new_updates(model, 3) == []  # admitted once; reading there again adds nothing
    await session.prompt("next")
    assert new_updates(model, 4) == []
    assert all(r.system == model.requests[0].system for r in model.requests)
    assert_prefix_stable(model)

    records = await session.log()
    found = [r for r in records if isinstance(r.entry, InstructionsFound)]
    assert len(found) == 1
    entry = found[0].entry
    assert isinstance(entry, InstructionsFound) and entry.paths == ("pkg/sub/AGENTS.md",)
    result = records[found[0].seq - 1].entry
    assert isinstance(result, ToolResultEntry) and result.call_id == entry.call_id
    # One transaction: the result and the discovery.
    assert (found[0].seq - 1, found[0].seq) in steps
    reading = model.requests[2].messages[-2]
    assert isinstance(reading, ags.ToolResultMessage) and reading.call_id == result.call_id
    mids = [r.entry for r in records if isinstance(r.entry, MidConversationSystemMessage)]
    assert len(mids) == 1


async def test_edits_removals_and_unreadable_files_reach_the_model_once(
    make_runtime: Make, project: Path
) -> None:
    replies = [read("pkg/sub/file.py"), *[f"reply {n}" for n in range(8)]]
    runtime = runtime_for(make_runtime, project, replies)
    model = scripted(runtime)
    session = await runtime.create_session()
    await session.prompt("start")  # requests 0 and 1: the nested file joins
    assert [u for u in new_updates(model, 1) if NESTED_TEXT in u]

    edited = "Root rules, second version: indent with tabs.\nAnd keep lines short."
    (project / "AGENTS.md").write_text(edited)
    await session.prompt("after the edit")  # request 2
    (update,) = new_updates(model, 2)
    assert "Instruction file AGENTS.md, complete current contents" in update
    assert edited in update and ROOT_TEXT not in update
    assert "this replaces any earlier version of this file" in update
    await session.prompt("nothing changed")  # request 3
    assert new_updates(model, 3) == []

    # Unreadable (a folder where the file was): unavailable, so the model keeps what it knew.
    (project / "AGENTS.md").unlink()
    (project / "AGENTS.md").mkdir()
    await session.prompt("unreadable")  # request 4
    assert new_updates(model, 4) == []
    (project / "AGENTS.md").rmdir()
    (project / "AGENTS.md").write_text(edited)
    await session.prompt("readable again, same text")  # request 5
    assert new_updates(model, 5) == []

    (project / "AGENTS.md").unlink()
    (project / "pkg/sub/AGENTS.md").unlink()
    await session.prompt("both removed")  # request 6
    (removal,) = new_updates(model, 6)
    assert "Instruction file AGENTS.md was removed; its instructions no longer apply." in removal
    assert "Instruction file pkg/sub/AGENTS.md was removed" in removal
    assert edited not in removal and NESTED_TEXT not in removal
    await session.prompt("still removed")  # request 7
    assert new_updates(model, 7) == []
    assert_prefix_stable(model)


async def test_a_removed_nested_file_joins_again_on_the_next_read(
    make_runtime: Make, project: Path
) -> None:
    runtime = runtime_for(
        make_runtime,
        project,
        [read("pkg/sub/file.py"), "one", "two", read("pkg/sub/file.py"), "three"],
    )
    model = scripted(runtime)
    session = await runtime.create_session()
    await session.prompt("first")
    (project / "pkg/sub/AGENTS.md").unlink()
    await session.prompt("second")
    assert "pkg/sub/AGENTS.md was removed" in new_updates(model, 2)[0]
    (project / "pkg/sub/AGENTS.md").write_text("Sub rules are back.\n")
    await session.prompt("third")
    assert new_updates(model, 3) == []  # not effective until a read finds it again
    assert new_updates(model, 4) == [u for u in new_updates(model, 4) if "Sub rules are back." in u]
    assert len(new_updates(model, 4)) == 1


async def test_after_compaction_the_nested_file_is_in_the_new_baseline(
    make_runtime: Make, project: Path
) -> None:
    summarizer = ags.ScriptedModel(["## Summary\nRead pkg/sub/file.py."])
    runtime = runtime_for(
        make_runtime,
        project,
        [read("pkg/sub/file.py"), "read it", "two", "three"],
        summarizer=summarizer,
        config=ags.Config(keep_user_turns=1, retry_base_delay=0),
    )
    model = scripted(runtime)
    session = await runtime.create_session()
    await session.prompt("read the file")
    await session.prompt("two")
    assert await session.compact() is True
    await session.prompt("three")
    after = model.requests[-1]
    system = baseline(after)
    assert list(system)[-2:] == [ROOT_KEY, NESTED_KEY]
    assert NESTED_TEXT in system[NESTED_KEY]
    assert updates(after) == []  # folded into the baseline, not repeated as an update
    epochs = [r.entry.reason for r in await session.log() if r.entry.kind == "epoch"]
    assert epochs == ["start", "compaction"]


async def test_reopening_keeps_the_nested_file_and_another_folder_re_resolves(
    make_runtime: Make, project: Path, tmp_path: Path
) -> None:
    first = runtime_for(make_runtime, project, [read("pkg/sub/file.py"), "found"])
    session = await first.create_session()
    await session.prompt("read")
    known = updates(scripted(first).requests[-1])
    assert len(known) == 1 and NESTED_TEXT in known[0]
    await first.close()

    # Same folder, new runtime on the same SQLite file: still effective, edits still tracked.
    reopened_runtime = runtime_for(make_runtime, project, ["same place", "edited"])
    model = scripted(reopened_runtime)
    reopened = await reopened_runtime.open_session(session.id)
    await reopened.prompt("again")
    assert updates(model.requests[0]) == known  # history as it was, nothing announced again
    (project / "pkg/sub/AGENTS.md").write_text("Sub rules, edited after reopening.\n")
    await reopened.prompt("after edit")
    (update,) = new_updates(model, 1)
    assert "pkg/sub/AGENTS.md, complete current contents" in update
    assert "Sub rules, edited after reopening." in update
    known = updates(model.requests[-1])
    await reopened_runtime.close()

    # Another folder: its own root file replaces the old one, the nested file no longer applies.
    moved = make_project(tmp_path, "moved")
    (moved / "AGENTS.md").write_text("Rules of the moved checkout.\n")
    moved_runtime = runtime_for(make_runtime, moved, ["moved"])
    moved_model = scripted(moved_runtime)
    elsewhere = await moved_runtime.open_session(session.id)
    await elsewhere.prompt("where am I")
    sent = updates(moved_model.requests[0])
    assert sent[: len(known)] == known
    (update,) = sent[len(known) :]
    assert "[core.instructions:AGENTS.md]" in update
    assert "Rules of the moved checkout." in update and ROOT_TEXT not in update
    assert "Instruction file pkg/sub/AGENTS.md was removed" in update
    assert "Sub rules" not in update


async def test_without_project_instructions_only_the_global_file_applies(
    make_runtime: Make, project: Path, xdg: Path
) -> None:
    (xdg / "agentsession").mkdir(parents=True)
    (xdg / "agentsession" / "AGENTS.md").write_text("Global rules: answer briefly.\n")
    off = runtime_for(
        make_runtime,
        project,
        [read("pkg/sub/file.py"), "done"],
        config=ags.Config(load_project_instructions=False, retry_base_delay=0),
    )
    session = await off.create_session()
    await session.prompt("read")
    model = scripted(off)
    keys = [k for k in baseline(model.requests[0]) if k.startswith("core.instructions")]
    assert keys == ["core.instructions:~global"]
    assert "Global rules: answer briefly." in baseline(model.requests[0])[keys[0]]
    assert new_updates(model, 1) == []
    assert "instructions_found" not in await kinds(session)
    assert ROOT_TEXT not in repr(model.requests) and NESTED_TEXT not in repr(model.requests)

    on = runtime_for(make_runtime, project, ["hi"])
    await (await on.create_session()).prompt("hi")
    keys = [k for k in baseline(scripted(on).requests[0]) if k.startswith("core.instructions")]
    assert keys == ["core.instructions:~global", ROOT_KEY]


# -- bad input ------------------------------------------------------------------------------------


async def test_bad_instruction_files_give_diagnostics_and_the_session_goes_on(
    make_runtime: Make, project: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (project / "AGENTS.md").write_bytes(b"Huge rules.\n" + b"y" * (5 * 1024 * 1024))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "AGENTS.md").write_text("OUTSIDE SECRET RULES\n")
    bad = {
        "binary": b"\x00\x01\x02binary\x00",
        "utf": b"Caf\xe9 rules \xff\xfe still here\n",
    }
    for name, data in bad.items():
        (project / "pkg" / name).mkdir()
        (project / "pkg" / name / "AGENTS.md").write_bytes(data)
    for name in ("loop", "out"):
        (project / "pkg" / name).mkdir()
    os.symlink("AGENTS.md", project / "pkg/loop/AGENTS.md")
    os.symlink(outside / "AGENTS.md", project / "pkg/out/AGENTS.md")
    for name in ("binary", "utf", "loop", "out"):
        (project / "pkg" / name / "file.py").write_text("x = 1\n")

    calls = [ags.ToolCall("read_file", {"path": f"pkg/{n}/file.py"}) for n in bad] + [
        ags.ToolCall("read_file", {"path": f"pkg/{n}/file.py"}) for n in ("loop", "out")
    ]
    runtime = runtime_for(make_runtime, project, [calls, "read them", "still fine"])
    model = scripted(runtime)
    with caplog.at_level(logging.WARNING, logger="agentsession.instructions"):
        session = await runtime.create_session()
        await session.prompt("read the odd folders")
        assert (await session.prompt("go on")).text == "still fine"

    system = baseline(model.requests[0])
    root = system[ROOT_KEY]
    assert root.startswith("Instructions from AGENTS.md")
    assert "Huge rules." in root
    assert len(root) < 140_000  # cut near 128 KiB, never the 5 MB
    assert "[truncated: this file is 5242892 bytes; only the first 131072 bytes are shown]" in root

    (update,) = new_updates(model, 1)
    assert "pkg/utf/AGENTS.md" in update and "Caf\ufffd rules \ufffd\ufffd still here" in update
    for name in ("binary", "loop", "out"):
        assert f"pkg/{name}/AGENTS.md" not in update
    every_request = repr(model.requests)
    assert "OUTSIDE SECRET" not in every_request
    assert "binary\\x00" not in every_request

    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "AGENTS.md: is 5242892 bytes; only the first 131072 were read" in logged
    assert "pkg/binary/AGENTS.md: holds binary data" in logged
    assert "pkg/utf/AGENTS.md: is not valid UTF-8" in logged
    assert "pkg/loop/AGENTS.md: symbolic links loop" in logged
    assert "pkg/out/AGENTS.md: is a symbolic link leading outside its allowed folder" in logged
    # Reported once per problem, not at every boundary.
    assert logged.count("holds binary data") == 1


async def test_a_symlinked_project_file_pointing_outside_is_not_read(
    make_runtime: Make, project: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("OUTSIDE SECRET\n")
    (project / "AGENTS.md").unlink()
    os.symlink(secret, project / "AGENTS.md")
    runtime = runtime_for(make_runtime, project, ["fine"])
    session = await runtime.create_session()
    assert (await session.prompt("hi")).text == "fine"
    assert "OUTSIDE SECRET" not in repr(scripted(runtime).requests)
    assert ROOT_KEY not in baseline(scripted(runtime).requests[0])


async def test_listing_a_folder_with_its_own_file_finds_it(
    make_runtime: Make, project: Path
) -> None:
    runtime = runtime_for(
        make_runtime,
        project,
        [
            [ags.ToolCall("list_files", {"path": "pkg/sibling"})],
            [ags.ToolCall("list_files", {"path": "pkg/sub"})],
            "listed",
        ],
    )
    model = scripted(runtime)
    session = await runtime.create_session()
    await session.prompt("list")
    assert new_updates(model, 1) == []
    (update,) = new_updates(model, 2)
    assert NESTED_TEXT in update
