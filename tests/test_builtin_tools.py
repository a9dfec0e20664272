"""The built-in coding tools on a real project folder, with real files and real subprocesses."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agentsession.hygiene import has_surrogates
from agentsession.permissions import WORKSPACE_WRITE, decide
from agentsession.tools import ToolContext, ToolOutcome
from agentsession.tools.builtin import (
    LINE_MAX_CHARS,
    LIST_MAX_ENTRIES,
    READ_MAX_CHARS,
    builtin_tools,
    list_files,
    read_file,
    run_command,
    write_file,
)

from .unprivileged import unprivileged


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "README.md").write_text("# demo\nsecond line\n")
    (root / "pkg" / "sub" / "mod.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret\n")
    (root / "link_out").symlink_to(outside)
    (root / "secret_link").symlink_to(outside / "secret.txt")
    (root / "loop").symlink_to(root / "loop")
    return root


@pytest.fixture
def outside(project: Path) -> Path:
    return project.parent / "outside"


@pytest.fixture
def context(project: Path) -> ToolContext:
    return ToolContext(project, session_id="s", call_id="c")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def test_the_four_tools_and_their_declarations() -> None:
    tools = builtin_tools()
    assert [t.name for t in tools] == ["read_file", "write_file", "list_files", "run_command"]
    assert [t.effect for t in tools] == ["read", "write", "read", "execute"]
    assert [t.paths for t in tools] == [("path",), ("path",), ("path",), ()]
    assert all(t.context_param == "context" for t in tools)
    assert all("context" not in t.parameters["properties"] for t in tools)


# -- confinement -----------------------------------------------------------------------------

ESCAPES = ["../outside/secret.txt", "link_out/secret.txt", "secret_link", "pkg/../../outside/x"]


@pytest.mark.parametrize("path", ESCAPES)
async def test_reads_outside_the_project_are_refused(
    project: Path, outside: Path, context: ToolContext, path: str
) -> None:
    outcome = await read_file.invoke({"path": path}, context=context)
    assert outcome.is_error
    assert outcome.content.startswith(f"Refused: {path!r} resolves to {outside}")
    assert "outside the project" in outcome.content
    assert "top secret" not in outcome.content
    assert context.reads == ()


async def test_absolute_and_home_paths_outside_are_refused(
    project: Path, outside: Path, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(outside))
    for path in (str(outside / "secret.txt"), "~/secret.txt", "/etc/hostname"):
        outcome = await read_file.invoke({"path": path}, context=context)
        assert outcome.is_error and outcome.content.startswith("Refused:"), path
    listing = await list_files.invoke({"path": ".."}, context=context)
    assert listing.is_error and "outside the project" in listing.content


@pytest.mark.parametrize("path", [*ESCAPES, "link_out/new.txt", "link_out/deeper/new.txt"])
async def test_writes_outside_the_project_are_refused_and_touch_nothing(
    project: Path, outside: Path, context: ToolContext, path: str
) -> None:
    before = _snapshot(outside)
    outcome = await write_file.invoke({"path": path, "content": "pwned"}, context=context)
    assert outcome.is_error and outcome.content.startswith("Refused:")
    assert _snapshot(outside) == before
    assert os.listdir(outside) == ["secret.txt"]


async def test_outside_access_works_when_the_context_allows_it(
    project: Path, outside: Path
) -> None:
    context = ToolContext(project, allow_outside=True)
    read = await read_file.invoke({"path": "../outside/secret.txt"}, context=context)
    assert read == ToolOutcome("top secret\n")
    wrote = await write_file.invoke({"path": "link_out/new.txt", "content": "ok"}, context=context)
    assert not wrote.is_error
    assert (outside / "new.txt").read_text() == "ok"


async def test_invalid_path_strings_are_refused(context: ToolContext) -> None:
    for path in ("a\0b", "\ud800"):
        outcome = await write_file.invoke({"path": path, "content": "x"}, context=context)
        assert outcome.is_error and "is not a valid path" in outcome.content


# -- read_file -------------------------------------------------------------------------------


async def test_read_file_reads_and_reports_the_path(project: Path, context: ToolContext) -> None:
    outcome = await read_file.invoke({"path": "pkg/sub/mod.py"}, context=context)
    assert outcome == ToolOutcome("x = 1\n")
    assert context.reads == (context.project_dir / "pkg" / "sub" / "mod.py",)


async def test_a_five_megabyte_file_is_shown_in_windows(
    project: Path, context: ToolContext
) -> None:
    line = "0123456789" * 9 + "abcdefghi\n"  # 100 bytes
    (project / "big.log").write_text(line * 52_429)  # just over 5 MB
    first = await read_file.invoke({"path": "big.log"}, context=context)
    assert not first.is_error
    assert len(first.content) < READ_MAX_CHARS + 300
    shown = first.content.count(line)
    assert shown == READ_MAX_CHARS // len(line)
    assert f"more follows: call read_file with start_line={shown + 1}" in first.content
    assert "5,242,900 bytes" in first.content
    last = await read_file.invoke({"path": "big.log", "start_line": 52_429}, context=context)
    assert last == ToolOutcome(line)
    past = await read_file.invoke({"path": "big.log", "start_line": 60_000}, context=context)
    assert "has 52,429 lines; start_line 60,000 is past the end" in past.content
    few = await read_file.invoke({"path": "big.log", "max_lines": 3}, context=context)
    assert few.content.startswith(line * 3 + "\n[showing lines 1-3 of big.log")


async def test_binary_files_are_refused(project: Path, context: ToolContext) -> None:
    (project / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    outcome = await read_file.invoke({"path": "image.png"}, context=context)
    assert outcome.is_error
    assert (
        outcome.content
        == "image.png is a binary file (272 bytes); read_file shows text files only."
    )


async def test_invalid_utf8_is_replaced_with_a_note(project: Path, context: ToolContext) -> None:
    (project / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    outcome = await read_file.invoke({"path": "latin1.txt"}, context=context)
    assert outcome.content.startswith("caf\ufffd cr\ufffdme\n")
    assert "[note: 2 invalid UTF-8 sequences replaced with U+FFFD]" in outcome.content
    (project / "real.txt").write_text("already \ufffd here\n")
    clean = await read_file.invoke({"path": "real.txt"}, context=context)
    assert clean == ToolOutcome("already \ufffd here\n")


async def test_multibyte_characters_across_read_pieces_survive(
    project: Path, context: ToolContext
) -> None:
    (project / "wide.txt").write_text("€" * 30_000 + "\nend\n")  # one 90 kB line of 3-byte chars
    outcome = await read_file.invoke({"path": "wide.txt"}, context=context)
    assert outcome.content.startswith("€" * LINE_MAX_CHARS + " [... line cut at 2,000")
    assert "end\n" in outcome.content
    assert "invalid UTF-8" not in outcome.content
    assert "[note: 1 lines longer than 2,000 characters cut]" in outcome.content


async def test_symlink_loops_folders_and_pipes_give_readable_errors(
    project: Path, context: ToolContext
) -> None:
    loop = await read_file.invoke({"path": "loop"}, context=context)
    assert loop.is_error and loop.content.startswith("Cannot read loop:")
    folder = await read_file.invoke({"path": "pkg"}, context=context)
    assert folder == ToolOutcome("pkg is a folder; use list_files to see what it holds.", True)
    missing = await read_file.invoke({"path": "nope.txt"}, context=context)
    assert missing == ToolOutcome("No such file: nope.txt", True)
    os.mkfifo(project / "pipe")
    pipe = await read_file.invoke({"path": "pipe"}, context=context)  # must not wait for a writer
    assert pipe.is_error and "not a regular file" in pipe.content
    written = await write_file.invoke({"path": "pipe", "content": "x"}, context=context)
    assert written.is_error
    assert context.reads == ()


# -- write_file ------------------------------------------------------------------------------


async def test_write_file_creates_folders_and_replaces(project: Path, context: ToolContext) -> None:
    created = await write_file.invoke(
        {"path": "new/deep/file.txt", "content": "one\ntwo"}, context=context
    )
    assert created == ToolOutcome("Created new/deep/file.txt: 7 bytes, 2 lines.")
    assert (project / "new" / "deep" / "file.txt").read_text() == "one\ntwo"
    replaced = await write_file.invoke({"path": "README.md", "content": ""}, context=context)
    assert replaced == ToolOutcome("Replaced README.md: 0 bytes, 0 lines.")
    assert (project / "README.md").read_bytes() == b""
    folder = await write_file.invoke({"path": "pkg", "content": "x"}, context=context)
    assert folder.is_error and (project / "pkg").is_dir()
    looped = await write_file.invoke({"path": "loop", "content": "x"}, context=context)
    assert looped.is_error and looped.content.startswith("Cannot write loop:")


async def test_write_file_keeps_the_mode_and_leaves_nothing_beside(
    project: Path, context: ToolContext
) -> None:
    script = project / "run.sh"
    script.write_text("old\n")
    script.chmod(0o750)
    before = set(os.listdir(project))
    outcome = await write_file.invoke({"path": "run.sh", "content": "new\n"}, context=context)
    assert outcome == ToolOutcome("Replaced run.sh: 4 bytes, 1 lines.")
    assert script.read_text() == "new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert set(os.listdir(project)) == before


async def test_a_write_that_fails_leaves_the_old_file_whole(
    project: Path, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full disk (or any failed write) after part of the new text: the old file stays as it was.
    kept = project / "README.md"
    old = kept.read_bytes()

    def fail_fsync(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", fail_fsync)
    before = set(os.listdir(project))
    outcome = await write_file.invoke(
        {"path": "README.md", "content": "x" * 10_000}, context=context
    )
    assert outcome.is_error and "No space left on device" in outcome.content
    assert kept.read_bytes() == old
    assert set(os.listdir(project)) == before


async def test_write_file_replaces_lone_surrogates(project: Path, context: ToolContext) -> None:
    outcome = await write_file.invoke({"path": "s.txt", "content": "a\udcffb\0c"}, context=context)
    assert "1 invalid characters (lone surrogates) were written as U+FFFD" in outcome.content
    assert (project / "s.txt").read_text() == "a\ufffdb\0c"


# -- list_files ------------------------------------------------------------------------------


async def test_list_files_shows_folders_links_and_reports_the_read(
    project: Path, context: ToolContext
) -> None:
    outcome = await list_files.invoke({}, context=context)
    assert outcome.content.splitlines() == [
        "README.md",
        f"link_out -> {project.parent / 'outside'}",
        f"loop -> {project / 'loop'}",
        "pkg/",
        f"secret_link -> {project.parent / 'outside' / 'secret.txt'}",
    ]
    assert context.reads == (context.project_dir,)
    deep = await list_files.invoke({"path": "pkg", "recursive": True}, context=context)
    assert deep.content.splitlines() == ["sub/", "sub/mod.py"]
    empty_dir = project / "empty"
    empty_dir.mkdir()
    assert (await list_files.invoke({"path": "empty"}, context=context)).content == "(empty folder)"
    file = await list_files.invoke({"path": "README.md"}, context=context)
    assert file == ToolOutcome("README.md is a file; use read_file to read it.", True)


async def test_list_files_is_bounded(project: Path, context: ToolContext) -> None:
    many = project / "many"
    many.mkdir()
    for i in range(LIST_MAX_ENTRIES + 5):
        (many / f"f{i:05d}").touch()
    outcome = await list_files.invoke({"path": "many"}, context=context)
    lines = outcome.content.splitlines()
    assert len(lines) == LIST_MAX_ENTRIES + 1
    assert lines[-1].startswith("[... more entries not shown (limit 1,000)")


async def test_non_utf8_file_names_come_back_encodable(project: Path, context: ToolContext) -> None:
    try:
        os.close(os.open(os.path.join(os.fsencode(project), b"r\xe9sum\xe9.txt"), os.O_CREAT))
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    outcome = await list_files.invoke({}, context=context)
    assert "r\ufffdsum\ufffd.txt" in outcome.content
    assert "2 invalid characters" in outcome.content
    assert not has_surrogates(outcome.content)
    json.dumps(outcome.content, ensure_ascii=False).encode("utf-8")


# -- run_command -----------------------------------------------------------------------------


async def test_run_command_runs_in_the_project_with_exit_code(
    project: Path, context: ToolContext
) -> None:
    outcome = await run_command.invoke({"command": "pwd; echo err >&2; exit 3"}, context=context)
    assert outcome.is_error
    assert outcome.content == f"{context.project_dir}\nerr\n[exit code: 3]"
    quoted = await run_command.invoke(
        {"command": "printf '%s\\n' \"a;b $((1+1))\""}, context=context
    )
    assert quoted == ToolOutcome("a;b 2\n[exit code: 0]")
    stdin = await run_command.invoke({"command": "cat; echo done"}, context=context)
    assert stdin == ToolOutcome("done\n[exit code: 0]")
    silent = await run_command.invoke({"command": "true"}, context=context)
    assert silent == ToolOutcome("(no output)\n[exit code: 0]")


def _gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie waiting for its reaper counts as ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "State:\tZ" in status


async def _wait_gone(pid: int) -> bool:
    for _ in range(12_000):  # a generous bound: the kernel ends a killed process in its own time
        if _gone(pid):
            return True
        await asyncio.sleep(0.01)
    return _gone(pid)


async def test_a_timed_out_command_is_killed_with_everything_it_started(
    project: Path, context: ToolContext
) -> None:
    command = "sleep 1000 & echo $! > bg.pid; echo started; sleep 1000"
    outcome = await run_command.invoke({"command": command, "timeout_seconds": 1}, context=context)
    assert outcome.is_error
    assert outcome.content.startswith("started\n[timed out after 1 second;")
    assert await _wait_gone(int((project / "bg.pid").read_text()))


async def test_background_jobs_do_not_outlive_the_call(project: Path, context: ToolContext) -> None:
    outcome = await run_command.invoke({"command": "sleep 1000 & echo $!"}, context=context)
    assert outcome.content.endswith("[exit code: 0]")
    assert await _wait_gone(int(outcome.content.splitlines()[0]))


async def test_cancelling_a_command_kills_it(project: Path, context: ToolContext) -> None:
    task = asyncio.create_task(
        run_command.invoke({"command": "echo $$ > sh.pid; sleep 1000"}, context=context)
    )
    pid_file = project / "sh.pid"
    for _ in range(3000):
        if pid_file.exists() and pid_file.read_text().strip():
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_gone(int(pid_file.read_text()))


async def test_command_output_is_bounded_head_and_tail(context: ToolContext) -> None:
    command = "echo FIRST; yes 0123456789 | head -c 5000000; echo; echo LAST"
    outcome = await run_command.invoke({"command": command}, context=context)
    assert outcome.content.startswith("FIRST\n")
    assert outcome.content.endswith("LAST\n[exit code: 0]")
    assert "bytes of output omitted" in outcome.content
    assert len(outcome.content) < 31_000


def test_a_permission_check_precedes_what_the_tools_refuse(project: Path) -> None:
    tools = {t.name: t for t in builtin_tools()}
    for path in ESCAPES:
        decision = decide(WORKSPACE_WRITE, tools["write_file"], {"path": path}, project)
        assert decision.kind == "deny", path
    assert decide(WORKSPACE_WRITE, tools["run_command"], {"command": "ls"}, project).kind == "ask"


_WRITER = """
import asyncio, sys
from agentsession.tools.builtin import write_file
from agentsession.tools import ToolContext

outcome = asyncio.run(
    write_file.invoke({"path": "locked.txt", "content": "new"}, context=ToolContext(sys.argv[1]))
)
print(outcome.is_error, outcome.content)
"""


def test_a_file_the_user_made_read_only_is_not_replaced() -> None:
    # A rename needs only the folder's write permission; the file's own must still count.
    # Root ignores modes, so as root the writer runs as the unprivileged user.
    prefix = unprivileged()
    folder = Path(tempfile.mkdtemp(prefix="agentsession-ro-file-"))
    try:
        folder.chmod(0o777)
        locked = folder / "locked.txt"
        locked.write_text("kept\n")
        locked.chmod(0o444)
        done = subprocess.run(
            [*prefix, sys.executable, "-c", _WRITER, str(folder)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        assert (
            done.stdout.strip()
            == "True Cannot write locked.txt: the file is read-only; not written."
        )
        assert locked.read_text() == "kept\n"
        assert sorted(p.name for p in folder.iterdir()) == ["locked.txt"]
    finally:
        shutil.rmtree(folder)
