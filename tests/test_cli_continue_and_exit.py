"""Command-line regressions: ``agentsession -c chat`` as ``--help`` shows it, a chat left at
once leaves nothing for ``-c`` to continue, and a misuse found after parsing exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

from .cli_inprocess import cli_here


def _sessions(tmp_path: Path, db: Path) -> list[dict[str, object]]:
    listed = cli_here(tmp_path, "--db", str(db), "--json", "sessions")
    assert listed.code == 0, listed.err
    return [json.loads(line) for line in listed.out.splitlines()]


def test_the_continue_example_of_the_help_works(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    helped = cli_here(tmp_path, "--help")
    assert "agentsession -c chat" in helped.out
    assert cli_here(tmp_path, "--db", str(db), "run", "count these words").code == 0
    (first,) = _sessions(tmp_path, db)
    chat = cli_here(tmp_path, "--db", str(db), "-c", "chat", stdin="and these too\n")
    assert chat.code == 0, chat.err
    (after,) = _sessions(tmp_path, db)  # the same session, continued
    assert after["id"] == first["id"]
    shown = cli_here(tmp_path, "--db", str(db), "show", str(first["id"]))
    assert "count these words" in shown.out and "and these too" in shown.out
    # After the command, as before: one -c either way.
    again = cli_here(tmp_path, "--db", str(db), "run", "-c", "once more")
    assert again.code == 0, again.err
    assert len(_sessions(tmp_path, db)) == 1


def test_a_chat_left_at_once_is_not_what_run_c_continues(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert cli_here(tmp_path, "--db", str(db), "run", "the real conversation").code == 0
    (real,) = _sessions(tmp_path, db)
    left = cli_here(tmp_path, "--db", str(db), "chat", stdin="")  # Ctrl-D at the first prompt
    assert left.code == 0, left.err
    assert [s["id"] for s in _sessions(tmp_path, db)] == [real["id"]]  # nothing empty stored
    more = cli_here(tmp_path, "--db", str(db), "run", "-c", "a follow-up")
    assert more.code == 0, more.err
    shown = cli_here(tmp_path, "--db", str(db), "show", str(real["id"]))
    assert "the real conversation" in shown.out and "a follow-up" in shown.out


def test_a_misuse_found_after_parsing_exits_2_like_argparse(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert cli_here(tmp_path, "--db", str(db), "run", "something").code == 0
    needs = cli_here(tmp_path, "--db", str(db), "cost")
    assert needs.code == 2 and "needs a session ID or --all" in needs.err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    nothing = cli_here(elsewhere, "--db", str(db), "run", "-c", "go on")
    assert nothing.code == 2 and "no session to continue" in nothing.err
    bad_model = cli_here(tmp_path, "--db", str(db), "--model", "nosuch:model", "run", "x")
    assert bad_model.code == 2 and "unknown model" in bad_model.err
    missing = cli_here(tmp_path, "--db", str(db), "show", "0000ffff")
    assert missing.code == 1  # a session that is not there is no misuse of the command
