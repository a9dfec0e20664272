"""MCP server declarations: values, names every wire format accepts, ``.mcp.json`` files."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.context.component import ContextComponent
from agentsession.mcp import load_mcp_config
from agentsession.mcp.config import resource_key, tool_name

from .conftest import LAB, NOTE
from .wire import tool_names

WIRE_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=200))
def test_tool_names_fit_every_wire_format(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert WIRE_NAME.match(name)
    assert name.startswith("mcp__")


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_resource_keys_are_component_keys(server: str, resource: str) -> None:
    key = resource_key(server, resource)
    ContextComponent(key, lambda: "x")  # raises on a key the registry would refuse
    assert key.startswith("mcp.")


@given(st.text(alphabet="ab._-", min_size=1, max_size=90), st.text(alphabet="ab", max_size=90))
def test_long_names_stay_apart(stem: str, tail: str) -> None:
    one, two = tool_name("s", stem + tail + "a"), tool_name("s", stem + tail + "b")
    plain = re.sub(r"[^A-Za-z0-9_-]", "_", stem + tail)
    assert one != two or plain + "a" == plain + "b"


def test_plain_names_are_kept() -> None:
    assert tool_name("time", "get_current_time") == "mcp__time__get_current_time"
    assert tool_name("my server", "a.b") == "mcp__my_server__a_b"
    assert resource_key("lab", "note://current") == "mcp.lab.note-current"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ags.MCPServer.stdio("", "x"), "needs a name"),
        (lambda: ags.MCPServer.stdio("s", ""), "needs a command"),
        (lambda: ags.MCPServer.http("s", "ftp://x"), "http:// or https://"),
        # an effect outside the Literal on purpose: the check under test refuses it
        (lambda: ags.MCPServer.stdio("s", "x", effect="delete"), "effect must be one of"),  # type: ignore[arg-type]
        (lambda: ags.MCPServer.stdio("s", "x", timeout=-1), "timeout must be"),
        (lambda: ags.MCPServer.stdio("s", "x", args="one"), "args must be a list"),
        (lambda: ags.MCPServer.stdio("s", "x", resources="note://x"), "resources must be"),
        (
            lambda: ags.MCPServer.stdio("s", "x", resources={"a.b": "u", "a-b": "v"}),
            "two resources",
        ),
    ],
)
def test_bad_declarations_are_usage_errors(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ags.UsageError, match=re.escape(message)):
        make()


def test_two_servers_with_one_prefix_are_refused(tmp_path: Path) -> None:
    servers = [ags.MCPServer.stdio("a b", "x"), ags.MCPServer.stdio("a_b", "y")]
    with pytest.raises(ags.UsageError, match="share the tool prefix mcp__a_b__"):
        ags.Runtime(store=ags.MemoryStore(), project_dir=tmp_path, mcp_servers=servers)


def write(path: Path, data: object) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def test_the_mcp_servers_format_is_read(tmp_path: Path) -> None:
    path = write(
        tmp_path / "servers.json",
        {
            "mcpServers": {
                "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
                "docs": {
                    "type": "http",
                    "url": "https://${HOST}/mcp",
                    "headers": {"Authorization": "Bearer ${TOKEN:-none}"},
                    "resources": {"guide": "docs://guide"},
                    "effect": "read",
                    "timeout": 5,
                },
            }
        },
    )

    time, docs = load_mcp_config(path, environ={"HOST": "example.test"})

    assert (time.transport, time.command, time.args) == (
        "stdio",
        "mcp-server-time",
        ("--local-timezone", "UTC"),
    )
    assert (docs.transport, docs.url) == ("http", "https://example.test/mcp")
    assert docs.headers == {"Authorization": "Bearer none"}
    assert (docs.resources, docs.effect, docs.timeout) == ((("guide", "docs://guide"),), "read", 5)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"mcpServers": {"a": ', "not valid JSON (line 1, column 22"),
        ("[1, 2]", 'expected an object with "mcpServers"'),
        ('{"mcpServers": {"a": {"args": []}}}', "MCP server 'a': a stdio server needs a command"),
        (
            '{"mcpServers": {"a": {"type": "sse", "url": "http://x"}}}',
            "type 'sse' is not supported",
        ),
        ('{"mcpServers": {"a": {"command": "x", "envs": {}}}}', "unknown keys for a stdio server"),
        ('{"mcpServers": {"a": {"command": "${NOPE}"}}}', "environment variable NOPE is not set"),
        ('{"mcpServers": {"a b": {"command": "x"}, "a_b": {"command": "y"}}}', "share the tool"),
    ],
)
def test_a_bad_file_is_one_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    path = write(tmp_path / "bad.json", content)
    with pytest.raises(ags.UsageError) as caught:
        load_mcp_config(path, environ={})
    text = str(caught.value)
    assert text.startswith(f"{path}: ")
    assert message in text
    assert "\n" not in text


def test_a_missing_file_is_one_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(ags.UsageError, match=re.escape(f"{path}: cannot read")):
        load_mcp_config(path)


def project_file(project: Path, name: str = "lab") -> Path:
    entry = {"command": sys.executable, "args": [str(LAB)], "resources": NOTE}
    return write(project / ".mcp.json", {"mcpServers": {name: entry}})


async def test_the_projects_mcp_json_is_honoured(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    project_file(tmp_path)
    model = ags.ScriptedModel(["ok"])
    runtime = make_runtime(model=model, project_config="trusted")
    session = await runtime.create_session()

    await session.prompt("hello")

    (request,) = model.requests
    assert "mcp__lab__echo" in tool_names(request)
    assert "first note" in dict(request.system)["mcp.lab.note"]


async def test_a_runtime_may_ignore_the_projects_file(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", "{ not json")
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        project_dir=tmp_path,
        config=ags.Config(load_project_mcp=False),
    )
    assert await runtime.list_sessions() == []
    await runtime.close()


def test_a_malformed_project_file_fails_the_runtime_naming_it(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", "{ not json")
    with pytest.raises(ags.UsageError, match=re.escape(str(tmp_path / ".mcp.json"))):
        ags.Runtime(store=ags.MemoryStore(), project_dir=tmp_path, project_config="trusted")


async def test_a_given_server_wins_over_the_project_file(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    project_file(tmp_path)
    given = ags.MCPServer.stdio("lab", sys.executable, [str(LAB)], effect="read")
    model = ags.ScriptedModel([[ags.ToolCall("mcp__lab__set_note", {"text": "n"})], "ok"])
    config = ags.Config(retry_base_delay=0, permission_preset="read-only")
    runtime = make_runtime(
        model=model, mcp_servers=[given], config=config, project_config="trusted"
    )
    session = await runtime.create_session()

    await session.prompt("note")

    assert "mcp.lab.note" not in dict(model.requests[0].system)  # the file's resource is not used
    answer = model.requests[-1].messages[-1]
    assert isinstance(answer, ags.ToolResultMessage) and not answer.is_error  # effect "read"


def test_without_the_sdk_given_servers_are_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # `import mcp` now fails as if not installed
    server = ags.MCPServer.stdio("lab", sys.executable, [str(LAB)])
    with pytest.raises(ags.UsageError, match=re.escape("pip install 'agentsession[mcp]'")):
        ags.Runtime(store=ags.MemoryStore(), project_dir=tmp_path, mcp_servers=[server])


async def test_without_the_sdk_a_project_file_is_left_out(
    make_runtime: Callable[..., ags.Runtime],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    project_file(tmp_path)
    monkeypatch.setitem(sys.modules, "mcp", None)
    model = ags.ScriptedModel(["ok"])
    with caplog.at_level("WARNING", logger="agentsession.mcp"):
        runtime = make_runtime(model=model, project_config="trusted")
    session = await runtime.create_session()

    await session.prompt("hello")

    assert tool_names(model.requests[0]) == []
    assert "they are left out" in caplog.text


def test_the_cli_reports_a_malformed_project_file_in_one_line(tmp_path: Path) -> None:
    write(tmp_path / ".mcp.json", '{"mcpServers": {"x": ')
    done = subprocess.run(
        [sys.executable, "-m", "agentsession", "--db", str(tmp_path / "s.db"), "run", "hi"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2  # a usage error (the project file), found after parsing
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: {tmp_path / '.mcp.json'}: not valid JSON (line 1, column 22: Expecting value)"
    ]
    assert "Traceback" not in done.stderr


def test_a_runtime_without_servers_does_not_import_the_mcp_client(tmp_path: Path) -> None:
    # A fresh interpreter: the client's modules are left unimported until a server is declared.
    code = (
        "import sys, agentsession as ags\n"
        "ags.Runtime(store=ags.MemoryStore(), project_dir=sys.argv[1])\n"
        "print('agentsession.mcp.connection' in sys.modules)\n"
        "lab = ags.MCPServer.stdio('lab', sys.executable, ['-c', 'pass'])\n"
        "ags.Runtime(store=ags.MemoryStore(), project_dir=sys.argv[1], mcp_servers=[lab])\n"
        "print('agentsession.mcp.connection' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True"]
