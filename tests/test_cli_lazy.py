"""The command line loads what the command it runs needs, and nothing of the others.

The parser names every command, its help and its arguments without importing the module that
does the command's work (``commandtable``); ``report`` writes its file without ``rich`` or
``prompt_toolkit``; the help of every command still names everything it accepts.
"""

from __future__ import annotations

import argparse
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.cli.app import build_parser, main
from agentsession.cli.commandtable import IMPLEMENTATIONS, implementation
from agentsession.cli.examples import examples

from .cli_helpers import TIMEOUT, cli, session_id_of

DISPLAY = ("rich", "prompt_toolkit")
OTHER_COMMANDS = (
    "agentsession.cli.commands",
    "agentsession.cli.chat",
    "agentsession.cli.console",
    "agentsession.cli.manage",
    "agentsession.cli.screens",
)


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_of_the_parser_has_an_implementation() -> None:
    names = subparsers()
    assert sorted(names) == sorted(IMPLEMENTATIONS)
    for name in names:
        found = implementation(name)
        assert inspect.iscoroutinefunction(found), name
        assert found.__module__ == f"agentsession.cli.{IMPLEMENTATIONS[name][0]}"


def test_an_unknown_command_has_no_implementation() -> None:
    with pytest.raises(KeyError):
        implementation("bogus")


@pytest.mark.parametrize("name", sorted(IMPLEMENTATIONS))
def test_every_commands_help_names_its_arguments(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    sub = subparsers()[name]
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"usage: agentsession {name} ")
    assert sub.description is not None and sub.description in shown
    assert examples(name).strip() in shown
    for action in sub._actions:
        if action.option_strings:
            for option in action.option_strings:
                assert option in shown, (name, option)
        else:
            assert str(action.metavar) in shown, (name, action.metavar)


def loaded_by(cwd: Path, *argv: str) -> list[str]:
    """Run ``agentsession ARGV`` in a new process; the display and command modules it loaded."""
    script = (
        "import json, sys\n"
        "from agentsession.cli import main\n"
        "try:\n"
        f"    main({list(argv)!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"watched = {[*DISPLAY, *OTHER_COMMANDS]!r}\n"
        "found = sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.')"
        " for w in watched))\n"
        "sys.stdout.write('\\n' + json.dumps(found) + '\\n')\n"
    )
    loaded: list[str] = json.loads(run_python(cwd, script).splitlines()[-1])
    return loaded


def run_python(cwd: Path, script: str) -> str:
    """Run ``script`` in a new Python process in ``cwd``; what it wrote on stdout."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_and_version_load_no_command(tmp_path: Path) -> None:
    assert loaded_by(tmp_path, "--help") == []
    assert loaded_by(tmp_path, "report", "--help") == []
    assert loaded_by(tmp_path, "--version") == []


def test_a_report_loads_no_display_and_no_other_command(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    made = cli(tmp_path, "--db", str(db), "run", "one two three")
    assert made.code == 0, made.err
    session_id = session_id_of(made)
    target = tmp_path / "r.html"
    assert loaded_by(tmp_path, "--db", str(db), "report", session_id, "-o", str(target)) == []
    assert session_id in target.read_text(encoding="utf-8")
    # The commands that show a session on a terminal still load their display.
    assert "agentsession.cli.commands" in loaded_by(tmp_path, "--db", str(db), "sessions")


def added_by(cwd: Path, *argv: str) -> tuple[int, str, list[str]]:
    """Run the console script's ``main`` with ARGV in a new process: exit code, output, modules.

    The modules are those ``main`` (and importing it) added to ``sys.modules``, so what the
    interpreter's start-up loaded (site hooks of the environment) is not counted.
    """
    script = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "from agentsession.cli import main\n"
        f"sys.argv = ['agentsession', *{list(argv)!r}]\n"
        "try:\n"
        "    main()\n"
        "    code = 0\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "sys.stdout.write('\\n' + json.dumps([code, sorted(set(sys.modules) - before)]) + '\\n')\n"
    )
    shown, _, last = run_python(cwd, script).rstrip("\n").rpartition("\n")
    code, added = json.loads(last)
    return code, shown, added


def test_version_loads_only_the_standard_library_and_the_package_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, shown, added = added_by(tmp_path, "--version")
    assert code == 0
    # What the parser's own ``--version`` prints, character for character.
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--version"])
    assert exited.value.code == 0
    assert shown == capsys.readouterr().out == f"agentsession {ags.__version__}\n"
    outside = {m.split(".")[0] for m in added} - set(sys.stdlib_module_names)
    assert outside == {"agentsession"}
    assert {m for m in added if m.startswith("agentsession")} == {
        "agentsession",
        "agentsession.cli",
    }
    # None of the heavy standard modules the commands need either.
    assert not {"asyncio", "argparse", "typing", "logging"} & set(added)


def test_help_loads_the_parser_and_none_of_the_work(tmp_path: Path) -> None:
    code, shown, added = added_by(tmp_path, "--help")
    assert code == 0
    assert shown.startswith("usage: agentsession ")
    assert not {"asyncio", "logging", "agentsession.request", "agentsession.hygiene"} & set(added)
    assert not [m for m in added if m.startswith(("agentsession.store", "agentsession.codec"))]


#: Packages a report never needs: the providers' SDKs and their HTTP and model layers, the
#: server's stack, the Markdown renderer and the PostgreSQL driver (the session is on SQLite).
NOT_FOR_A_REPORT = (
    "anthropic",
    "openai",
    "google",
    "httpx",
    "pydantic",
    "starlette",
    "uvicorn",
    "fastapi",
    "markdown_it",
    "pygments",
    "psycopg",
    "agentsession.server",
    "agentsession.durable",
)


def test_a_report_loads_no_provider_sdk_server_or_other_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    made = cli(tmp_path, "--db", str(db), "run", "one two three")
    assert made.code == 0, made.err
    target = tmp_path / "r.html"
    code, _, added = added_by(
        tmp_path, "--db", str(db), "report", session_id_of(made), "-o", str(target)
    )
    assert code == 0 and target.exists()
    assert "agentsession.inspection.report" in added  # it did load the report's own modules
    unwanted = [m for m in added if any(m == w or m.startswith(f"{w}.") for w in NOT_FOR_A_REPORT)]
    assert unwanted == []


def test_a_command_whose_module_fails_to_import_is_told_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # ``main`` imports the command's module before the command runs (the collector paused); a
    # module that fails there fails again inside the command, and is told as any failure is.
    monkeypatch.setitem(IMPLEMENTATIONS, "sessions", ("no_such_module", "sessions"))
    with pytest.raises(SystemExit) as exited:
        main(["--db", str(tmp_path / "s.db"), "sessions"])
    assert exited.value.code == 1
    said = capsys.readouterr().err
    assert said.startswith("error: unexpected ModuleNotFoundError: ") and said.count("\n") == 1
