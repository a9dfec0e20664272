"""The command line as a coding agent, in this process: tools under a preset, approvals without
a terminal, calls left waiting by an earlier run, skills and MCP servers (in processes of
their own, as always).

The model is scripted over loopback (``cli_model``): the CLI talks to it as to any local
OpenAI-compatible server, and every request it sent is recorded there.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.cli.approvals import NO_TERMINAL
from agentsession.log import ApprovalDecided, PermissionChanged, Record

from .cli_helpers import Outcome, assert_clean_error, session_id_of
from .cli_inprocess import cli_here
from .cli_model import ScriptedServer, serve, text, tool_results

BUILTIN = ["read_file", "write_file", "list_files", "run_command"]


@pytest.fixture
def model() -> Iterator[ScriptedServer]:
    yield from serve()


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "agent.db"


def agent(tmp_path: Path, db: Path, model: ScriptedServer, *args: str) -> Outcome:
    result = cli_here(tmp_path, "--db", str(db), "--model", model.model, *args)
    assert "Traceback" not in result.err, result.err
    return result


async def stored(db: Path, session_id: str, project: Path) -> list[Record]:
    async with ags.Runtime(store=ags.SQLiteStore(db), project_dir=project) as runtime:
        return await (await runtime.open_session(session_id)).log()


def tool_names(request: dict[str, object]) -> list[str]:
    tools = request.get("tools")
    assert isinstance(tools, list)
    return [t["function"]["name"] for t in tools]


def ran(folder: Path) -> list[str]:
    path = folder / "ran.txt"
    return path.read_text().split() if path.exists() else []


def command(line: str) -> tuple[str, dict[str, str]]:
    return ("run_command", {"command": f"echo {line} >> ran.txt"})


async def test_read_only_refuses_a_write_and_a_continued_session_keeps_its_preset(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    write = ("write_file", {"path": "hello.txt", "content": "hi"})
    model.reply([write], "I could not write it.", [write], "Still not.")
    first = agent(tmp_path, db, model, "run", "--preset", "read-only", "write hello.txt")
    assert first.code == 0, first.err
    assert first.out == "I could not write it.\n"
    assert not (tmp_path / "hello.txt").exists()
    asked, answered = model.agent_requests
    assert tool_names(asked) == BUILTIN  # a real model gets the built-in tools
    (refusal,) = tool_results(answered)
    assert "Permission denied by preset 'read-only'" in text(refusal)
    assert any(line.startswith("✗ write_file") for line in map(str.strip, first.err_lines))

    # Continued without --preset: the session's own preset stays (never silently widened).
    again = agent(tmp_path, db, model, "run", "-c", "try once more")
    assert again.code == 0 and again.out == "Still not.\n"
    assert not (tmp_path / "hello.txt").exists()
    assert "Permission denied by preset 'read-only'" in text(
        tool_results(model.agent_requests[-1])[0]
    )
    records = await stored(db, session_id_of(first), tmp_path)
    changes = [r.entry for r in records if isinstance(r.entry, PermissionChanged)]
    assert [(c.previous, c.preset) for c in changes] == [("workspace-write", "read-only")]


def test_an_unknown_preset_is_one_line_and_creates_nothing(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    result = agent(tmp_path, db, model, "run", "--preset", "yolo", "hi")
    assert_clean_error(result, "unknown permission preset 'yolo'", "read-only")
    assert not db.exists() and model.requests == []


async def test_without_a_terminal_calls_that_ask_are_denied_and_yes_approves_them(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    model.reply([command("one")], "Understood, I did not run it.")
    denied = agent(tmp_path, db, model, "run", "run the command")
    assert denied.code == 0, denied.err
    assert denied.out == "Understood, I did not run it.\n"
    assert ran(tmp_path) == []
    (denial,) = tool_results(model.agent_requests[-1])
    # Chat Completions has no error flag: the lowering marks an error result with "Error: ".
    assert text(denial) == f"Error: The user denied this call of run_command ({NO_TERMINAL})."
    said = [line.strip() for line in denied.err_lines if "denied run_command" in line]
    assert len(said) == 1 and "--yes" in said[0]

    model.reply([command("two")], [command("three")], "Both ran.")
    approved = agent(tmp_path, db, model, "run", "-c", "--yes", "run two commands")
    assert approved.code == 0, approved.err
    assert approved.out == "Both ran.\n"
    assert ran(tmp_path) == ["two", "three"]
    assert sum("approved run_command (--yes)" in line for line in approved.err_lines) == 2
    # One turn, its figures once: the requests sent while it paused twice.
    figures = [line for line in approved.err_lines if " requests · " in line]
    assert len(figures) == 1 and "3 requests" in figures[0], approved.err

    records = await stored(db, session_id_of(approved), tmp_path)
    decided = [r.entry for r in records if isinstance(r.entry, ApprovalDecided)]
    assert [(d.approved, d.always) for d in decided] == [
        (False, False),
        (True, False),
        (True, False),
    ]


def test_json_output_shows_each_approval_and_its_answer(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    model.reply([command("one")], "done")
    result = agent(tmp_path, db, model, "--json", "run", "run it")
    assert result.code == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    kinds = [e["kind"] for e in events]
    answered = kinds.index("approval_answer")
    # The paused part finishes, the answer follows, then the resumed part finishes the turn.
    assert kinds.index("approval_needed") < kinds.index("turn_finished") < answered
    assert kinds.count("turn_finished") == 2 and kinds[-2] == "turn_finished"
    answer = events[answered]
    assert answer["name"] == "run_command" and answer["approved"] is False
    assert answer["note"] == NO_TERMINAL
    assert events[-1]["kind"] == "figures"


async def left_waiting(db: Path, project: Path) -> str:
    """An application's session that paused for approval, then its process ended."""
    waiting = ags.ScriptedModel([[ags.ToolCall("run_command", {"command": "echo one >> ran.txt"})]])
    async with ags.Runtime(
        store=ags.SQLiteStore(db), model=waiting, tools=ags.builtin_tools(), project_dir=project
    ) as runtime:
        session = await runtime.create_session()
        paused = await session.prompt("run it")
        assert paused.stop_reason == "approval_required"
        return session.id


async def test_calls_an_earlier_run_left_waiting_are_answered_before_the_next_prompt(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    session_id = await left_waiting(db, tmp_path)
    model.reply("The first one ran.", "And this is the answer to the second prompt.")
    result = agent(tmp_path, db, model, "run", "--session", session_id, "--yes", "second")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "The first one ran.",
        "And this is the answer to the second prompt.",
    ]
    assert ran(tmp_path) == ["one"]
    assert any("1 tool call of an earlier turn waits for approval" in e for e in result.err_lines)
    # The first request the CLI sent carries the approved call's result.
    (output,) = tool_results(model.agent_requests[0])
    assert "[exit code: 0]" in text(output)


async def test_retry_of_a_turn_that_waits_answers_and_finishes_it(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    session_id = await left_waiting(db, tmp_path)
    model.reply("Understood, not run.")
    result = agent(tmp_path, db, model, "retry", session_id)  # no terminal: denied
    assert result.code == 0, result.err
    assert result.out == "Understood, not run.\n" and ran(tmp_path) == []
    (denial,) = tool_results(model.agent_requests[0])
    assert NO_TERMINAL in text(denial)
    again = agent(tmp_path, db, model, "retry", session_id)
    assert_clean_error(again, "nothing to retry")


SKILL = """---
name: {name}
description: {description}
---
{body}
"""


def write_skill(folder: Path, name: str, description: str, body: str) -> Path:
    path = folder / name / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(SKILL.format(name=name, description=description, body=body), "utf-8")
    return path


def broken_skills(root: Path) -> dict[str, Path]:
    """Three skill folders that cannot be used, each for its own reason."""
    (root / "no-front-matter").mkdir(parents=True)
    (root / "no-front-matter" / "SKILL.md").write_text("Just text.\n", "utf-8")
    bad = root / "Bad_Name"
    bad.mkdir()
    (bad / "SKILL.md").write_text(SKILL.format(name="Bad_Name", description="x", body="x"))
    other = root / "folder-name"
    other.mkdir()
    (other / "SKILL.md").write_text(SKILL.format(name="other-name", description="x", body="x"))
    return {"no-front-matter": root, "Bad_Name": bad, "folder-name": other}


def test_skills_lists_the_catalog_and_one_line_per_broken_skill(tmp_path: Path) -> None:
    project = tmp_path / "project"
    skills = project / ".agents" / "skills"
    good = write_skill(skills, "release-notes", "Write release   notes from commits.", "Steps.")
    broken = broken_skills(skills)
    extra = tmp_path / "more"
    other = write_skill(extra, "triage", "Sort incoming issues.", "Label them.")

    listed = cli_here(tmp_path, "skills", "--project", str(project), "--skills-dir", str(extra))
    assert listed.code == 0, listed.err
    lines = listed.out.splitlines()
    assert lines[:2] == [
        f"release-notes  {good}  Write release notes from commits.",
        f"triage  {other}  Sort incoming issues.",
    ]
    problems = lines[2:]
    assert len(problems) == len(broken), listed.out
    for name in broken:
        assert sum(name in line for line in problems) == 1, (name, problems)
    assert all(line.startswith("error: ") for line in problems)

    as_json = cli_here(tmp_path, "--json", "skills", "--project", str(project))
    assert as_json.code == 0, as_json.err
    objects = [json.loads(line) for line in as_json.out.splitlines()]
    assert [o["name"] for o in objects if o["kind"] == "skill"] == ["release-notes"]
    assert sum(o["kind"] == "skill_diagnostic" for o in objects) == len(broken)

    missing = cli_here(tmp_path, "skills", "--project", str(tmp_path / "nowhere"))
    assert_clean_error(missing, "no project folder at")


def test_a_selected_skill_reaches_the_model_and_an_unknown_one_creates_nothing(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    extra = tmp_path / "more"
    write_skill(extra, "triage", "Sort incoming issues.", "Label every issue TRIAGED.")
    write_skill(tmp_path / ".claude" / "skills", "tidy", "Tidy up.", "Remove dead code.")
    model.reply("Labelled.", "Tidied.")
    chosen = agent(
        tmp_path, db, model, "run", "--skills-dir", str(extra), "--skill", "triage", "go"
    )
    assert chosen.code == 0, chosen.err
    user = [m for m in model.agent_requests[0]["messages"] if m["role"] == "user"][-1]
    assert '<skill name="triage"' in text(user) and "Label every issue TRIAGED." in text(user)
    # The project's own skills and $name in the text.
    dollar = agent(tmp_path, db, model, "run", "-c", "now $tidy please")
    assert dollar.code == 0, dollar.err
    user = [m for m in model.agent_requests[-1]["messages"] if m["role"] == "user"][-1]
    assert '<skill name="tidy"' in text(user)

    sessions_before = cli_here(tmp_path, "--db", str(db), "sessions").out
    unknown = agent(tmp_path, db, model, "run", "--skill", "nope", "go")
    assert_clean_error(unknown, "unknown skill 'nope'", "tidy")
    assert cli_here(tmp_path, "--db", str(db), "sessions").out == sessions_before


def test_a_malformed_mcp_file_is_one_line_naming_it(tmp_path: Path, db: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text('{"mcpServers": {"lab": {"command": ', "utf-8")
    flag = cli_here(tmp_path, "--db", str(db), "run", "--mcp-config", str(config), "hi")
    assert_clean_error(flag, str(config), "not valid JSON")
    assert not db.exists()

    project = tmp_path / "project"
    project.mkdir()
    (project / ".mcp.json").write_text('{"mcpServers": {"lab": {"type": "carrier-pigeon"}}}')
    own = cli_here(project, "--db", str(db), "run", "--trust", "hi")
    assert_clean_error(own, str(project / ".mcp.json"), "carrier-pigeon")
    assert not db.exists()


def test_a_server_that_answers_garbage_is_one_warning_line_not_a_traceback(
    tmp_path: Path, db: Path
) -> None:
    pytest.importorskip("mcp")
    # `echo` prints its arguments and exits: the SDK logs the unparsable line with a traceback.
    (tmp_path / ".mcp.json").write_text('{"mcpServers": {"echoer": {"command": "echo"}}}')
    result = cli_here(tmp_path, "--db", str(db), "run", "--trust", "hi")
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    down = [line for line in result.err_lines if "MCP server 'echoer'" in line]
    assert down and down[0].startswith("warning: ") and "is down" in down[0]


@pytest.mark.parametrize("where", ["flag", "project"])
def test_mcp_server_tools_reach_the_model_and_run(
    tmp_path: Path, db: Path, model: ScriptedServer, where: str
) -> None:
    pytest.importorskip("mcp")
    lab = Path(__file__).parent / "mcp_servers" / "lab_server.py"
    servers = {"mcpServers": {"lab": {"command": sys.executable, "args": [str(lab)]}}}
    config = tmp_path / ("servers.json" if where == "flag" else ".mcp.json")
    config.write_text(json.dumps(servers), "utf-8")
    model.reply([("mcp__lab__echo", {"text": "hello from the lab"})], "The lab answered.")
    options = ["--mcp-config", str(config)] if where == "flag" else ["--trust"]
    result = agent(tmp_path, db, model, "run", *options, "ask the lab")
    assert result.code == 0, result.err
    assert result.out == "The lab answered.\n"
    asked, answered = model.agent_requests
    assert "mcp__lab__echo" in tool_names(asked) and "write_file" in tool_names(asked)
    (echoed,) = tool_results(answered)
    assert text(echoed) == "hello from the lab"


def test_a_piped_chat_reports_each_failure_and_exits_non_zero(
    tmp_path: Path, db: Path, model: ScriptedServer
) -> None:
    # No scripted reply: the provider call fails; an unknown preset fails too. The chat goes on.
    stdin = "hello\n/preset bogus\n"
    piped = cli_here(
        tmp_path, "--db", str(db), "--model", model.model, "--json", "chat", stdin=stdin
    )
    assert piped.code == 1, piped.err
    objects = [json.loads(line) for line in piped.out.splitlines()]
    errors = [o["message"] for o in objects if o["kind"] == "error"]
    assert len(errors) == 2 and "bogus" in errors[1]
    quiet = cli_here(
        tmp_path, "--db", str(db), "--model", model.model, "-q", "chat", stdin="again\n"
    )
    assert quiet.code == 1
    assert [line for line in quiet.err_lines if line.startswith("error: ")]
