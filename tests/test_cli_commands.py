"""The command line's options and inspection commands, on a real file.

They run in this process (``cli_here``); ``--version`` runs in a real one: the installed
console script names the installed version.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.cli.invocation import installed_extras
from agentsession.codec import decode
from agentsession.log import Dispatch, ModelSwitched, Record
from agentsession.providers.profiles import default_profile
from agentsession.request import Request, digest

from .cli_helpers import Outcome, assert_clean_error, cli, session_id_of
from .cli_inprocess import cli_here

ROOT = Path(__file__).resolve().parents[1]

REPLY = "(scripted demo model) `count_words` returned **{}**."


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "cli.db"


def run(tmp_path: Path, db: Path, *args: str, stdin: str = "") -> Outcome:
    result = cli_here(tmp_path, "--db", str(db), *args, stdin=stdin)
    assert "Traceback" not in result.err, result.err
    return result


async def stored(db: Path, session_id: str, tmp_path: Path) -> list[Record]:
    runtime = ags.Runtime(store=ags.SQLiteStore(db), project_dir=tmp_path)
    async with runtime:
        session = await runtime.open_session(session_id)
        return await session.log()


def test_version_and_help(tmp_path: Path) -> None:
    version = cli(tmp_path, "--version")
    assert version.code == 0 and version.out.strip() == f"agentsession {ags.__version__}"
    helped = cli_here(tmp_path, "request", "--help")
    assert helped.code == 0
    for text in ("--format", "--step", "anthropic-messages", "rebuilt from the log", "ID"):
        assert text in helped.out
    bad = cli_here(tmp_path, "context")
    assert bad.code == 2 and bad.err_lines == [
        "error: the following arguments are required: ID (see: agentsession context --help)"
    ]


def test_prompt_from_stdin_and_continue(tmp_path: Path, db: Path) -> None:
    dashed = run(tmp_path, db, "run", "-", stdin="one two three\n")
    assert dashed.code == 0 and dashed.out == REPLY.format(3) + "\n"
    piped = run(tmp_path, db, "run", stdin="four five\n")
    assert piped.code == 0 and piped.out == REPLY.format(2) + "\n"
    assert session_id_of(piped) != session_id_of(dashed)
    # -c continues the most recent session; words are joined into one prompt.
    again = run(tmp_path, db, "run", "-c", "six", "seven", "eight", "nine")
    assert session_id_of(again) == session_id_of(piped)
    assert again.out == REPLY.format(4) + "\n"
    empty = run(tmp_path, db, "run", "-", stdin="   \n")
    assert_clean_error(empty, "the prompt is empty")


def test_quiet_and_json(tmp_path: Path, db: Path) -> None:
    quiet = run(tmp_path, db, "--quiet", "run", "just the reply")
    assert quiet.code == 0
    assert quiet.out == REPLY.format(3) + "\n" and quiet.err == ""

    result = run(tmp_path, db, "run", "--json", "-c", "as json please")
    assert result.code == 0 and result.err == ""
    events = [json.loads(line) for line in result.out.splitlines()]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "session" and events[0]["model"] == "scripted:demo"
    assert kinds[-2:] == ["turn_finished", "figures"]
    order = [k for k in kinds if k in ("tool_call_started", "tool_result", "text_delta")]
    assert order[:2] == ["tool_call_started", "tool_result"] and "text_delta" in order
    text = "".join(e["text"] for e in events if e["kind"] == "text_delta")
    assert text == REPLY.format(3) == events[-2]["result"]["text"]
    assert events[-1]["caches"] == ["hit", "hit"]

    shown = run(tmp_path, db, "--json", "show", events[0]["id"])
    messages = [json.loads(line) for line in shown.out.splitlines()]
    assert messages[0] == {
        "kind": "session",
        "schema_version": 1,
        "id": events[0]["id"],
        "title": "just the reply",
    }
    assert [m["role"] for m in messages[1:]] == ["user", "assistant", "tool", "assistant"] * 2

    failed = run(tmp_path, db, "--json", "show", "missing")
    assert failed.code == 1
    assert json.loads(failed.out) == {
        "kind": "error",
        "schema_version": 1,
        "message": "no session with id 'missing'",
        "type": "SessionNotFoundError",
        "status": None,
        "retryable": False,
    }


async def test_system_text_is_kept_until_replaced(tmp_path: Path, db: Path) -> None:
    first = run(tmp_path, db, "run", "--system", "Answer in French.", "bonjour")
    session_id = session_id_of(first)
    run(tmp_path, db, "run", "-c", "encore")
    replaced = run(tmp_path, db, "run", "-c", "--system", "Answer in German.", "hallo")
    assert "[context update: core.agent]" in replaced.err
    records = await stored(db, session_id, tmp_path)
    epoch = next(r.entry for r in records if r.entry.kind == "epoch")
    assert dict(epoch.baseline)["core.agent"] == "Answer in French."
    mids = [r.entry for r in records if r.entry.kind == "mid_conversation_system"]
    # Continuing without --system changed nothing; the new text arrived once.
    assert len(mids) == 1 and "Answer in German." in mids[0].text


def test_context_window_too_small_is_one_line(tmp_path: Path, db: Path) -> None:
    result = run(tmp_path, db, "run", "--context-window", "50", "hello")
    assert_clean_error(result, "budget")
    bad = run(tmp_path, db, "run", "--context-window", "zero", "hello")
    assert bad.code == 2 and "expected a whole number" in bad.err


def test_debug_shows_the_traceback(tmp_path: Path, db: Path) -> None:
    run(tmp_path, db, "run", "make a database")
    result = cli_here(tmp_path, "--db", str(db), "--debug", "show", "nope")
    assert result.code == 1
    assert "Traceback" in result.err
    assert result.err_lines[-1] == "error: no session with id 'nope'"


async def test_a_session_continues_with_the_model_it_used(tmp_path: Path, db: Path) -> None:
    first = run(tmp_path, db, "run", "one two")
    session_id = session_id_of(first)
    env = {"AGENTSESSION_MODEL": "openai:gpt-4.1"}
    again = cli_env(tmp_path, db, env, "run", "--session", session_id, "three")
    assert again.code == 0, again.err
    assert again.out == REPLY.format(1) + "\n"
    assert not any("No model configured" in line for line in again.err_lines)

    # A session made by an application with a model the command line cannot call.
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=ags.ScriptedModel(["hi"]))
    async with runtime:
        other = await runtime.create_session()
        await other.prompt("hello")
    refused = run(tmp_path, db, "run", "--session", other.id, "more")
    assert_clean_error(refused, "last talked to model 'scripted'", "--model")
    switched = run(tmp_path, db, "run", "--session", other.id, "--model", "scripted:demo", "a b")
    assert switched.code == 0 and switched.out == REPLY.format(2) + "\n"
    records = await stored(db, other.id, tmp_path)
    switch = next(r.entry for r in records if isinstance(r.entry, ModelSwitched))
    assert switch.previous == "scripted" and switch.model == "scripted:demo"


def cli_env(tmp_path: Path, db: Path, env: dict[str, str], *args: str) -> Outcome:
    return cli_here(tmp_path, "--db", str(db), *args, env=env)


async def test_retry_resends_the_failed_step(tmp_path: Path, db: Path) -> None:
    # Nothing listens on the discard port of the loopback address: the provider call fails.
    dead = "openai-compatible:http://127.0.0.1:9/v1#m"
    failed = run(tmp_path, db, "run", "--model", dead, "--context-window", "100000", "a b c")
    assert_clean_error(failed, "the connection failed")
    session_id = session_id_of(failed)
    retried = run(tmp_path, db, "retry", session_id, "--model", "scripted:demo")
    assert retried.code == 0, retried.err
    assert retried.out == REPLY.format(3) + "\n"
    nothing = run(tmp_path, db, "retry", session_id)
    assert_clean_error(nothing, "nothing to retry")


async def test_request_prints_the_exact_json_of_a_past_and_the_next_request(
    tmp_path: Path, db: Path
) -> None:
    session_id = session_id_of(run(tmp_path, db, "run", "one two"))
    run(tmp_path, db, "run", "-c", "three four five")
    records = await stored(db, session_id, tmp_path)
    digests = [r.entry.digest for r in records if isinstance(r.entry, Dispatch)]
    assert len(digests) == 4

    for step, expected in enumerate(digests, start=1):
        shown = run(tmp_path, db, "request", session_id, "--step", str(step), "--format", "neutral")
        assert shown.code == 0, shown.err
        neutral = decode(Request, {**json.loads(shown.out), "sources": []})
        assert digest(neutral) == expected  # byte for byte what was sent
        for fmt in ("anthropic-messages", "openai-chat", "openai-responses", "gemini"):
            wire = run(tmp_path, db, "request", session_id, "--step", str(step), "--format", fmt)
            assert wire.code == 0, wire.err
            body: Any = json.loads(wire.out)
            assert body == ags.lower(neutral, fmt, profile=default_profile(fmt))

    upcoming = run(tmp_path, db, "request", session_id, "--format", "neutral")
    assert upcoming.code == 0, upcoming.err
    nxt = decode(Request, {**json.loads(upcoming.out), "sources": []})
    assert [m.role for m in nxt.messages] == ["user", "assistant", "tool", "assistant"] * 2
    assert await stored(db, session_id, tmp_path) == records  # nothing admitted

    no_format = run(tmp_path, db, "request", session_id)
    assert_clean_error(no_format, "has no wire format of its own", "--format")
    missing = run(tmp_path, db, "request", session_id, "--step", "9", "--format", "gemini")
    assert_clean_error(missing, "no dispatched request 9: the session has 4")


def test_context_shows_sources_epoch_window_and_tokens(tmp_path: Path, db: Path) -> None:
    session_id = session_id_of(run(tmp_path, db, "run", "one two"))
    shown = run(tmp_path, db, "context", session_id)
    assert shown.code == 0, shown.err
    lines = shown.out.splitlines()
    assert lines[0] == f"The next request of session {session_id} (nothing is admitted)"
    assert "epoch 0 (in force; it started because of the first request)" in shown.out
    assert "window from log seq 0; 0 earlier transcript messages are outside it" in shown.out
    for line in ("[0] user  ← #0 user", "[2] tool result: count_words  ← #5 tool_result"):
        assert any(line in row for row in lines), line
    assert any(row.strip().endswith("core.permissions") for row in lines)
    assert any(row.strip().endswith("count_words") for row in lines)

    past = run(tmp_path, db, "context", session_id, "--step", "1", "--full")
    assert past.code == 0, past.err
    assert past.out.startswith(f"Request 1 of session {session_id}, rebuilt from the log")
    assert "epoch 0 (starts with this request" in past.out
    assert "[1]" not in past.out  # the first request held the user message only
    as_json = run(tmp_path, db, "--json", "context", session_id)
    view = json.loads(as_json.out)
    assert view["kind"] == "context" and view["epoch"] == 0
    assert view["messages"][0]["source_kinds"] == ["user"]


def test_report_one_and_all(tmp_path: Path, db: Path) -> None:
    first = session_id_of(run(tmp_path, db, "run", "one two"))
    second = session_id_of(run(tmp_path, db, "run", "three"))
    one = run(tmp_path, db, "report", first, "-o", "one.html")
    assert one.code == 0 and f"wrote {Path('one.html')}" in one.err
    html = (tmp_path / "one.html").read_text(encoding="utf-8")
    assert first in html and "id='turn-count'>1<" in html

    every = run(tmp_path, db, "report", "--all", "-o", "reports")
    assert every.code == 0, every.err
    written = sorted(p.name for p in (tmp_path / "reports").iterdir())
    assert written == sorted(["index.html", f"{first}.html", f"{second}.html"])
    index = (tmp_path / "reports" / "index.html").read_text(encoding="utf-8")
    assert f"href='{first}.html'" in index and f"href='{second}.html'" in index

    neither = run(tmp_path, db, "report")
    assert_clean_error(neither, "give a session id, or --all")
    unwritable = run(tmp_path, db, "report", first, "-o", str(tmp_path / "one.html" / "x"))
    assert_clean_error(unwritable, "cannot write")


def test_info_names_the_paths_version_and_extras(tmp_path: Path, db: Path) -> None:
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    result = cli_env(tmp_path, db, env, "info")
    assert result.code == 0, result.err
    text = result.out
    assert f"agentsession {ags.__version__}" in text
    assert str(tmp_path / "data" / "agentsession" / "sessions.db") in text
    assert str(tmp_path / "data" / "agentsession" / "chat_history") in text
    assert f"{db} (not created yet)" in text
    assert "none configured" in text
    labels = [line.split("  ")[0] for line in text.splitlines()]
    assert labels == [
        "version",
        "database",
        "default database",
        "chat history",
        "model",
        "extras installed",
        "extras missing",
        "config file",
    ]
    configured = cli_env(tmp_path, db, {"AGENTSESSION_MODEL": "anthropic:claude-x"}, "info")
    assert "anthropic:claude-x" in configured.out


def test_info_checks_every_extra_a_feature_needs() -> None:
    """Each extra of pyproject that a feature needs is checked: none is called missing by
    omission (``serve`` without the server extra, say, while ``info`` said none was missing)."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(declared["project"]["optional-dependencies"])
    # Tools of the checkout, not features; and ``cli``, without which ``info`` cannot run.
    assert set(installed_extras()) == extras - {"cli", "bench", "release", "docs", "dev"}


def test_json_output_is_one_object_per_line_for_request_and_report(
    tmp_path: Path, db: Path
) -> None:
    session_id = session_id_of(run(tmp_path, db, "run", "one two"))
    body = run(tmp_path, db, "--json", "request", session_id, "--format", "openai-chat")
    assert body.code == 0, body.err
    (line,) = body.out.splitlines()
    wrapped = json.loads(line)
    assert wrapped["kind"] == "request" and wrapped["schema_version"] == 1
    assert wrapped["format"] == "openai-chat" and wrapped["body"]["messages"]
    wrote = run(tmp_path, db, "--json", "report", session_id, "-o", "one.html")
    assert [json.loads(x) for x in wrote.out.splitlines()] == [
        {"kind": "wrote", "schema_version": 1, "paths": ["one.html"]}
    ]


def test_info_names_the_model_given_with_the_flag(tmp_path: Path, db: Path) -> None:
    flagged = cli_env(tmp_path, db, {}, "--model", "openai:gpt-4.1", "info")
    assert flagged.code == 0, flagged.err
    assert "openai:gpt-4.1" in flagged.out and "none configured" not in flagged.out
