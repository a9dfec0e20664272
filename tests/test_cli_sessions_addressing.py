"""Sessions by short id and per folder, stdin the way ``llm`` reads it, the front door.

In-process (``main(argv)``) with the offline demo model or the loopback scripted server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsession.cli.examples import EXAMPLES

from .cli_helpers import assert_clean_error
from .cli_inprocess import run_cli
from .cli_model import ScriptedServer, serve, text


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    yield from serve()


def new_session(cwd: Path, db: Path, *words: str) -> str:
    done = run_cli(cwd, "--db", str(db), "--json", "run", *(words or ("count these words",)))
    assert done.code == 0, done.err
    first = json.loads(done.out.splitlines()[0])
    assert first["kind"] == "session"
    return str(first["id"])


def test_piped_stdin_and_a_prompt_are_sent_together(tmp_path: Path, server: ScriptedServer) -> None:
    server.reply("ok", "ok", "ok")
    db = str(tmp_path / "s.db")
    done = run_cli(tmp_path, "--db", db, "-m", server.model, "run", "explain:", stdin="CONTENT\n")
    assert done.code == 0, done.err
    user = [m for m in server.agent_requests[-1]["messages"] if m["role"] == "user"][-1]
    assert text(user) == "explain:\n\nCONTENT"  # the file's final newline is not the prompt's
    dash = run_cli(tmp_path, "--db", db, "-m", server.model, "run", "-", "explain:", stdin="X")
    assert dash.code == 0, dash.err
    user = [m for m in server.agent_requests[-1]["messages"] if m["role"] == "user"][-1]
    assert text(user) == "explain:\n\nX"
    alone = run_cli(
        tmp_path, "--db", db, "-m", server.model, "run", "-", stdin="  just\nthis\r\n\n"
    )
    assert alone.code == 0, alone.err
    user = [m for m in server.agent_requests[-1]["messages"] if m["role"] == "user"][-1]
    assert text(user) == "  just\nthis"  # line ends dropped at the end only, as $(...) does


def test_an_empty_pipe_and_no_words_is_refused(tmp_path: Path) -> None:
    assert_clean_error(run_cli(tmp_path, "run", stdin=""), "the prompt is empty")


@pytest.mark.parametrize(
    "command",
    [
        ["show"],
        ["context"],
        ["request", "--format", "neutral"],
        ["report", "-o", "r.html"],
        ["export", "-o", "x.jsonl"],
        ["retry"],
        ["rename", "=", "new", "title"],
        ["fork"],
        ["delete"],
    ],
)
def test_an_8_character_prefix_names_a_session(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "s.db"
    session = new_session(tmp_path, db)
    name, *rest = command
    args = [name, session[:8], *rest]
    if name == "rename":
        args = [name, session[:8], *rest[1:]]
    done = run_cli(tmp_path, "--db", str(db), *args)
    if name == "retry":  # nothing failed, yet the prefix named the whole session
        assert f"session {session}" in done.err, done.err
        return
    assert done.code == 0, done.err
    if name == "delete":
        assert run_cli(tmp_path, "--db", str(db), "--json", "sessions").out == ""


def test_an_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    original = new_session(tmp_path, db)
    exported = tmp_path / "s.jsonl"
    assert run_cli(tmp_path, "--db", str(db), "export", original, "-o", str(exported)).code == 0
    lines = exported.read_text().splitlines()
    for n in (1, 2):
        header = json.loads(lines[0])
        header["id"] = f"abcd{n:028d}"
        copy = tmp_path / f"copy{n}.jsonl"
        copy.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
        assert run_cli(tmp_path, "--db", str(db), "import", str(copy)).code == 0
    shared = run_cli(tmp_path, "--db", str(db), "show", "abcd")
    line = assert_clean_error(shared, "ambiguous")
    assert "abcd00000000" in line and line.count("abcd0000") == 2
    one = run_cli(tmp_path, "--db", str(db), "show", "abcd" + "0" * 27 + "2")
    assert one.code == 0, one.err
    unknown = run_cli(tmp_path, "--db", str(db), "show", "zzzz")
    assert_clean_error(unknown, "no session with id 'zzzz'")


def test_continue_takes_the_newest_session_of_this_folder_only(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    folder_a, folder_b = tmp_path / "a", tmp_path / "b"
    folder_a.mkdir()
    folder_b.mkdir()
    in_a = new_session(folder_a, db)
    refused = run_cli(folder_b, "--db", str(db), "run", "-c", "go on")
    assert_clean_error(refused, "no session to continue in")
    in_b = new_session(folder_b, db)
    again = run_cli(folder_b, "--db", str(db), "--json", "run", "-c", "count two words")
    assert json.loads(again.out.splitlines()[0])["id"] == in_b
    back = run_cli(folder_a, "--db", str(db), "--json", "run", "-c", "count two words")
    assert json.loads(back.out.splitlines()[0])["id"] == in_a


def test_sessions_json_has_id_and_message_count(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    session = new_session(tmp_path, db)
    done = run_cli(tmp_path, "--db", str(db), "sessions", "--json")
    (row,) = [json.loads(line) for line in done.out.splitlines()]
    assert row["id"] == session and row["message_count"] == 4 and row["schema_version"] == 1


def test_model_and_system_go_before_or_after_the_command(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    for args in (
        ["-s", "Be brief.", "-m", "scripted:demo", "run", "count a b"],
        ["run", "-s", "Be brief.", "-m", "scripted:demo", "count a b"],
    ):
        done = run_cli(tmp_path, "--db", str(db), "--json", *args)
        assert done.code == 0, done.err
        session = json.loads(done.out.splitlines()[0])["id"]
        view = run_cli(tmp_path, "--db", str(db), "--json", "context", session[:10])
        assert "Be brief." in view.out


def test_the_front_door(tmp_path: Path) -> None:
    bare = run_cli(tmp_path)
    assert bare.code == 0 and "usage: agentsession" in bare.out and "examples:" in bare.out
    assert run_cli(tmp_path, "--version").code == 0
    assert run_cli(tmp_path, "nonsense").code == 2
    refused = run_cli(tmp_path, "delete", "--model", "x", "abc")
    assert refused.code == 2 and "unrecognized arguments: --model" in refused.err
    assert "(see: agentsession delete --help)" in refused.err  # the command's help, not the top's
    for name in ("serve", "show", "run"):
        wrong = run_cli(tmp_path, name, "--no-such-flag", *(["x"] if name == "show" else []))
        assert wrong.code == 2 and wrong.err.strip() == (
            f"error: unrecognized arguments: --no-such-flag (see: agentsession {name} --help)"
        )
    for command in EXAMPLES:
        if command is None:
            continue
        helped = run_cli(tmp_path, command, "--help")
        assert helped.code == 0 and "examples:" in helped.out, command
        assert f"agentsession {command}" in helped.out.split("examples:")[1]


def test_a_mistyped_db_folder_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "s.db"
    done = run_cli(tmp_path, "--db", str(missing), "run", "count a b")
    assert_clean_error(done, "no-such-folder")
    assert not missing.parent.exists()
