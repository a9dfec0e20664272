"""The command line: run, sessions, show, chat, and one-line errors.

Most run in this process (``cli_here``); the console script, ``python -m``, ``show`` from a new
process and the offline demo run in real ones, where a process of its own is the point.
"""

from __future__ import annotations

import asyncio
import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.cli.console import print_transcript
from agentsession.store._sqlite_sql import KIND_CODES

from .cli_helpers import TIMEOUT, assert_clean_error, cli, session_id_of
from .cli_inprocess import cli_here


async def stored_transcript(db: Path, session_id: str, cwd: Path) -> tuple[ags.Session, str]:
    """The session as the library opens it, and its transcript printed the way ``show`` does."""
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel(), project_dir=cwd)
    try:
        session = await runtime.open_session(session_id)
        buffer = io.StringIO()
        print_transcript(session.messages, buffer)
        return session, buffer.getvalue()
    finally:
        await runtime.close()


def without_context_notes(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.strip().startswith("[")]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_run_prints_the_turn_and_names_the_demo_model(
    tmp_path: Path, db: Path, module: bool
) -> None:
    result = cli(tmp_path, "--db", str(db), "run", "count these four words", module=module)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    # Piped, standard output holds exactly the stored reply; the rest goes to standard error.
    assert result.out == "(scripted demo model) `count_words` returned **4**.\n"
    err = result.err
    assert '→ count_words {"text": "count these four words"}' in err  # JSON, not a repr
    assert "← count_words: 4" in err
    # The call is printed before its result, the result before the figures of the turn.
    assert err.index("→ count_words") < err.index("← count_words") < err.index("2 requests")
    figures = [line for line in result.err_lines if "2 requests" in line]
    assert len(figures) == 1 and "cache: first, hit" in figures[0], figures
    demo_lines = [line for line in result.err_lines if "scripted demo model" in line]
    assert len(demo_lines) == 1
    assert "--model" in demo_lines[0] and "AGENTSESSION_MODEL" in demo_lines[0]
    assert db.is_file()


def test_sessions_lists_the_session_with_its_title(tmp_path: Path, db: Path) -> None:
    first = cli_here(tmp_path, "--db", str(db), "run", "the first little question")
    second = cli_here(tmp_path, "--db", str(db), "run", "another one")
    assert first.code == second.code == 0
    ids = [session_id_of(first), session_id_of(second)]
    cli_here(tmp_path, "--db", str(db), "run", "--session", ids[0], "and a follow-up")

    listing = cli_here(tmp_path, "--db", str(db), "sessions")
    assert listing.code == 0, listing.err
    lines = listing.out.splitlines()
    assert len(lines) == 2
    # Most recent activity first: the continued session.
    assert [line.split()[0] for line in lines] == [ids[0], ids[1]]
    rows = {line.split()[0]: line for line in lines}
    assert rows[ids[0]].endswith("the first little question")
    assert rows[ids[1]].endswith("another one")
    # Messages by role, not log entries; the model the session talked to.
    assert "  2 user   4 assistant   2 tool  scripted:demo  " in rows[ids[0]]
    assert "  1 user   2 assistant   1 tool  scripted:demo  " in rows[ids[1]]
    # The model was not needed to list sessions, so it is not announced.
    assert not any("scripted demo model" in line for line in listing.err_lines)


def test_read_only_commands_never_create_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "nothing-here.db"
    listing = cli_here(tmp_path, "--db", str(missing), "sessions")
    assert listing.code == 0 and listing.out == ""
    assert f"no sessions yet (no database at {missing})" in listing.err
    for command in (["show", "x"], ["context", "x"], ["request", "x"], ["report", "x"]):
        result = cli_here(tmp_path, "--db", str(missing), *command)
        assert_clean_error(result, "no session database at", str(missing))
    info = cli_here(tmp_path, "--db", str(missing), "info")
    assert info.code == 0 and "not created yet" in info.out
    assert not missing.exists()


async def test_show_in_a_new_process_prints_the_stored_transcript(tmp_path: Path, db: Path) -> None:
    run = cli_here(tmp_path, "--db", str(db), "run", "how long is this")
    assert run.code == 0, run.err
    session_id = session_id_of(run)

    show = cli(tmp_path, "--db", str(db), "show", session_id, module=True)
    assert show.code == 0, show.err
    session, expected = await stored_transcript(db, session_id, tmp_path)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert show.out == f"# {session.title}\n{expected}"
    assert session.title == "how long is this"
    # What the turn printed live is what was stored: the calls and results on standard error,
    # the reply on standard output.
    shown = show.out.splitlines()
    assert shown[1] == "user: how long is this"
    live_calls = [line for line in run.err_lines if line.startswith(("  →", "  ←"))]
    assert shown[2:4] == live_calls
    assert shown[4] == f"assistant: {run.out.rstrip()}"


async def test_run_with_session_continues_it(tmp_path: Path, db: Path) -> None:
    first = cli_here(tmp_path, "--db", str(db), "run", "one two")
    session_id = session_id_of(first)
    again = cli_here(tmp_path, "--db", str(db), "run", "--session", session_id, "three four five")
    assert again.code == 0, again.err
    assert session_id_of(again) == session_id
    assert "← count_words: 3" in again.err
    assert again.out == "(scripted demo model) `count_words` returned **3**.\n"

    session, transcript = await stored_transcript(db, session_id, tmp_path)
    users = [m.content for m in session.messages if m.role == "user"]
    assert users == ["one two", "three four five"]
    assert len(session.messages) == 8
    listing = cli_here(tmp_path, "--db", str(db), "sessions")
    assert len(listing.out.splitlines()) == 1
    show = cli_here(tmp_path, "--db", str(db), "show", session_id)
    assert show.out == f"# {session.title}\n{transcript}"


def test_chat_reads_lines_until_end_of_input(tmp_path: Path, db: Path) -> None:
    # Not async: a chat turn takes Ctrl-C through the loop's signal handler, which only the
    # main thread may set, so the CLI's own loop runs here and the library's after it.
    chat = cli_here(tmp_path, "--db", str(db), "chat", stdin="alpha beta\n\ngamma delta epsilon\n")
    assert chat.code == 0, chat.err
    assert "Traceback" not in chat.err
    assert chat.out.splitlines() == [
        "(scripted demo model) `count_words` returned **2**.",
        "(scripted demo model) `count_words` returned **3**.",
    ]
    session_id = session_id_of(chat)
    assert f"resume with: agentsession chat --session {session_id}" in chat.err

    session, _ = asyncio.run(stored_transcript(db, session_id, tmp_path))
    users = [m.content for m in session.messages if m.role == "user"]
    assert users == ["alpha beta", "gamma delta epsilon"]  # the empty line was skipped
    assert [m.role for m in session.messages].count("tool") == 2

    more = cli_here(
        tmp_path, "--db", str(db), "chat", "--session", session_id, stdin="zeta\n/quit\nignored\n"
    )
    assert more.code == 0, more.err
    session, _ = asyncio.run(stored_transcript(db, session_id, tmp_path))
    users = [m.content for m in session.messages if m.role == "user"]
    assert users == ["alpha beta", "gamma delta epsilon", "zeta"]  # /quit ends the chat


def test_a_chat_left_before_a_prompt_names_no_session_to_resume(tmp_path: Path, db: Path) -> None:
    """No input at all: the empty session is not kept, so no hint points at it."""
    chat = cli_here(tmp_path, "--db", str(db), "chat", stdin="")
    assert chat.code == 0, chat.err
    assert "resume with" not in chat.err
    assert cli_here(tmp_path, "--db", str(db), "sessions").out == ""


# -- bad input: one clear line, a non-zero exit, no traceback ------------------------------------


@pytest.mark.parametrize("command", ["show", "run"])
def test_unknown_session_id(tmp_path: Path, db: Path, command: str) -> None:
    cli_here(tmp_path, "--db", str(db), "run", "make the database exist")
    if command == "show":
        result = cli_here(tmp_path, "--db", str(db), "show", "no-such-session")
    else:
        result = cli_here(tmp_path, "--db", str(db), "run", "--session", "no-such-session", "hi")
    assert_clean_error(result, "no-such-session")
    assert result.out == ""


@pytest.mark.parametrize("command", [["sessions"], ["show", "x"], ["run", "hi"]])
def test_db_file_that_is_not_sqlite(tmp_path: Path, command: list[str]) -> None:
    garbage = tmp_path / "garbage.db"
    data = bytes(range(256)) * 64
    garbage.write_bytes(data)
    result = cli_here(tmp_path, "--db", str(garbage), *command)
    assert_clean_error(result, str(garbage), "not a database")
    assert garbage.read_bytes() == data  # left as it was


@pytest.mark.parametrize("command", [["sessions"], ["run", "hi"]])
def test_db_path_that_is_a_directory(tmp_path: Path, command: list[str]) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    result = cli_here(tmp_path, "--db", str(folder), *command)
    assert_clean_error(result, str(folder), "directory")
    assert list(folder.iterdir()) == []


def insert_row(db: Path, session_id: str, kind: str, data: str) -> int:
    conn = sqlite3.connect(db)
    try:
        (seq,) = conn.execute(
            "SELECT next_seq FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        with conn:
            conn.execute(
                "INSERT INTO entries (session_key, seq, kind, version, data)"
                " VALUES ((SELECT session_key FROM sessions WHERE session_id = ?), ?, ?, 1, ?)",
                (session_id, seq, KIND_CODES.get(kind, kind), data),
            )
        return int(seq)
    finally:
        conn.close()


def test_show_with_a_corrupt_entry_row(tmp_path: Path, db: Path) -> None:
    session_id = session_id_of(cli_here(tmp_path, "--db", str(db), "run", "fine so far"))
    seq = insert_row(db, session_id, "user", '{"content": "broken')
    result = cli_here(tmp_path, "--db", str(db), "show", session_id)
    assert_clean_error(result, "not valid JSON", session_id, f"seq {seq}")


def test_continuing_past_an_unknown_entry_kind(tmp_path: Path, db: Path) -> None:
    session_id = session_id_of(cli_here(tmp_path, "--db", str(db), "run", "fine so far"))
    seq = insert_row(db, session_id, "from_the_future", "{}")
    result = cli_here(tmp_path, "--db", str(db), "run", "--session", session_id, "and now?")
    assert_clean_error(result, "unknown entry kind 'from_the_future'", f"seq {seq}")


def test_unknown_model_prefix(tmp_path: Path, db: Path) -> None:
    result = cli_here(tmp_path, "--db", str(db), "--model", "nope:x", "run", "hi")
    assert_clean_error(result, "nope")
    assert not any("scripted demo model" in line for line in result.err_lines)


def test_options_may_follow_the_command(tmp_path: Path, db: Path) -> None:
    run = cli_here(tmp_path, "run", "--db", str(db), "after the command")
    assert run.code == 0, run.err
    listing = cli_here(tmp_path, "sessions", "--db", str(db))
    assert listing.out.split()[0] == session_id_of(run)
    assert listing.out.rstrip().endswith("after the command")


def test_offline_demo_runs_and_shows_from_a_new_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "AGENTSESSION_MODEL"}
    env["AGENTSESSION_DEMO_DB"] = str(tmp_path / "demo" / "demo.db")
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(
        [sys.executable, "-m", "agentsession.cli.demo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    live, _, shown = done.stdout.partition("(a new process)\n")
    assert shown, done.stdout
    assert "16 log entries stored" in live
    assert "mid_conversation_system" in live
    assert "[context update: plugin.demo.style]" in live
    assert "extends the earlier one byte for byte: True" in live
    assert shown.splitlines()[0] == "# How many words are in this sentence?"
    assert "← count_words: 7" in shown and "← count_words: 6" in shown
    assert shown.count("user: ") == 2


def test_a_refused_first_prompt_leaves_no_empty_session(tmp_path: Path, db: Path) -> None:
    # Not valid Unicode (a terminal that is not UTF-8): refused before a session is made.
    broken = cli_here(tmp_path, "--db", str(db), "run", "caf\udce9")
    assert_clean_error(broken, "not valid Unicode")
    # Refused by the budget after the session was made: the empty session goes again.
    tight = cli_here(tmp_path, "--db", str(db), "run", "--context-window", "50", "hi")
    assert_clean_error(tight, "tokens")
    assert cli_here(tmp_path, "--db", str(db), "sessions").out.strip() in ("", "no sessions yet")
    later = cli_here(tmp_path, "--db", str(db), "run", "one two")
    assert later.code == 0, later.err
    assert len(cli_here(tmp_path, "--db", str(db), "sessions").out.splitlines()) == 1
