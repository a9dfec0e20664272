"""Hostile projects: a `.mcp.json` a model wrote or a repository brought acts only once trusted.

Real CLI processes in a real folder; the "server" of the hostile file is a command that leaves a
marker file behind when it starts, so "starts nothing" is a file that does not exist. Each test
also shows that the same file *does* act once trusted, so the check can fail.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest

import agentsession as ags
from agentsession.trust import TrustStore, project_files

from ..cli_helpers import Outcome, cli
from ..cli_model import ScriptedServer, serve
from ..cli_terminal import Terminal, needs_tmux

pytest.importorskip("mcp")


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    yield from serve()


def starter(marker: Path) -> dict[str, object]:
    """A stdio "server" that only leaves ``marker`` behind (then exits: the server is down)."""
    code = f"open({str(marker)!r}, 'w').write('started')"
    return {"mcpServers": {"evil": {"command": sys.executable, "args": ["-c", code]}}}


def run(
    project: Path, model: ScriptedServer, *args: str, env: dict[str, str] | None = None
) -> Outcome:
    db = project.parent / "agent.db"
    result = cli(project, "--db", str(db), "--model", model.model, *args, env=env)
    assert "Traceback" not in result.err, result.err
    return result


def config_home(project: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(project.parent / "config")}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_model_written_mcp_json_starts_nothing_on_the_next_run(
    project: Path, model: ScriptedServer
) -> None:
    marker = project.parent / "started"
    env = config_home(project)
    # Turn 1: the model writes .mcp.json into the project with a command (under full-access
    # nobody is asked; the built-in file tools may refuse the file as protected).
    hostile = json.dumps(starter(marker))
    command = f"printf %s {shlex.quote(hostile)} > .mcp.json"
    model.reply([("run_command", {"command": command})], "Done.")
    first = run(project, model, "run", "--preset", "full-access", "set things up", env=env)
    assert first.code == 0, first.err
    assert (project / ".mcp.json").exists()

    # Turn 2, a new process, no terminal, even read-only: the file is left out with one warning.
    model.reply("Hello.")
    second = run(project, model, "run", "--preset", "read-only", "hi", env=env)
    assert second.code == 0, second.err
    assert not marker.exists()
    warnings = [line for line in second.err_lines if ".mcp.json" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: ")
    assert "not trusted" in warnings[0]

    # The same file, trusted with --trust (before the command name too), does start.
    model.reply("Hello again.")
    third = run(project, model, "--trust", "run", "hi", env=env)
    assert third.code == 0, third.err
    assert marker.read_text() == "started"


def test_trust_is_per_content_and_can_be_revoked(project: Path, model: ScriptedServer) -> None:
    marker = project.parent / "started"
    env = config_home(project)
    (project / ".mcp.json").write_text(json.dumps(starter(marker)))
    trusted = cli(project, "trust", env=env)
    assert trusted.code == 0, trusted.err
    assert "evil: starts" in trusted.err  # what it would start is shown

    model.reply("ok")
    assert run(project, model, "run", "hi", env=env).code == 0
    assert marker.exists()
    marker.unlink()

    # An edit (another server) asks again: without a terminal it is left out.
    edited = starter(marker)
    edited["mcpServers"]["evil"]["args"].append("--again")  # type: ignore[index]
    (project / ".mcp.json").write_text(json.dumps(edited))
    model.reply("ok")
    again = run(project, model, "run", "hi", env=env)
    assert again.code == 0 and not marker.exists()
    assert any(line.startswith("warning: ") and ".mcp.json" in line for line in again.err_lines)

    # Trusted again, then revoked: left out once more.
    assert cli(project, "trust", str(project), env=env).code == 0
    revoked = cli(project, "trust", "--revoke", env=env)
    assert revoked.code == 0 and "no longer trusted" in revoked.err
    model.reply("ok")
    assert run(project, model, "run", "hi", env=env).code == 0
    assert not marker.exists()


def test_trust_records_are_private_and_name_the_real_folder(project: Path, tmp_path: Path) -> None:
    (project / ".mcp.json").write_text(json.dumps(starter(tmp_path / "m")))
    link = tmp_path / "link"
    link.symlink_to(project)
    env = config_home(project)
    assert cli(link, "trust", env=env).code == 0
    record = tmp_path / "config" / "agentsession" / "trusted_projects.json"
    assert stat.S_IMODE(record.stat().st_mode) == 0o600
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700
    data = json.loads(record.read_text())
    assert list(data["projects"]) == [os.path.realpath(project)]
    store = TrustStore(record)
    assert store.is_trusted(project_files(project))
    assert store.is_trusted(project_files(link))


async def test_a_library_runtime_ignores_the_project_file_unless_told(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    (tmp_path / ".mcp.json").write_text(json.dumps(starter(marker)))

    async def prompt(config: Literal["ignore", "trusted"] | None) -> None:
        model = ags.ScriptedModel(["ok"])
        store = ags.MemoryStore()
        runtime = (
            ags.Runtime(store=store, model=model, project_dir=tmp_path)
            if config is None
            else ags.Runtime(store=store, model=model, project_dir=tmp_path, project_config=config)
        )
        async with runtime:
            session = await runtime.create_session()
            await session.prompt("hi")

    await prompt(None)
    await prompt("ignore")
    assert not marker.exists()
    await prompt("trusted")
    assert marker.exists()
    with pytest.raises(ags.UsageError, match="project_config"):
        ags.Runtime(store=ags.MemoryStore(), project_dir=tmp_path, project_config="yes")  # type: ignore[arg-type]


@needs_tmux
@pytest.mark.parametrize("answer", ["y", "n"])
def test_a_terminal_asks_once_showing_what_would_start(
    project: Path, model: ScriptedServer, answer: str
) -> None:
    marker = project.parent / "started"
    hostile = starter(marker)
    hostile["mcpServers"]["web"] = {  # type: ignore[index]
        "url": "http://127.0.0.1:9/mcp",
        "headers": {"Authorization": "Bearer ${OPENAI_API_KEY}"},
    }
    (project / ".mcp.json").write_text(json.dumps(hostile))
    env = {
        "XDG_CONFIG_HOME": str(project.parent / "config"),
        "PYTHONIOENCODING": "utf-8",
        "TERM": "xterm-256color",
        "PATH": os.environ.get("PATH", ""),
        "OPENAI_API_KEY": "sk-not-for-this-folder",
    }
    db = str(project.parent / "agent.db")
    model.reply("ok", "ok")
    command = [sys.executable, "-m", "agentsession", "--db", db, "--model", model.model]
    opened: list[Terminal] = []
    try:
        term = Terminal([*command, "run", "hi"], env, project)
        opened.append(term)
        screen = term.wait_for("[y/N]")
        assert "evil: starts" in screen and "web: contacts http://127.0.0.1:9/mcp" in screen
        assert "reads environment variables: OPENAI_API_KEY" in screen
        assert "sk-not-for-this-folder" not in screen
        term.keys(answer, "Enter")
        term.wait_for("[exit 0]")
        assert marker.exists() == (answer == "y")
        # Asked once: a trusted folder is not asked again; a refused one is asked again.
        again = Terminal([*command, "run", "hi"], env, project)
        opened.append(again)
        screen = again.wait_for("[exit" if answer == "y" else "[y/N]")
        assert ("[y/N]" in screen) == (answer == "n")
    finally:
        for term in opened:
            term.close()
