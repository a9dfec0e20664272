"""Workspaces: each session works in a folder of its own, never in the server's folder.

Two owners (two tokens) on one server each get their own workspace; a session of one never
reads or writes the other's files, by a relative or an absolute path. ``agentsession serve``
without ``--workspaces`` offers no built-in file or command tool; with it, every session gets
them, confined to its folder, under the server's preset (``read-only`` unless ``--preset``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from .harness import Frame, Server, frames, serve_cli

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
BUILTIN = {"read_file", "write_file", "list_files", "run_command"}
#: A session id's form; in capitals too it names that session's folder where case is ignored.
ID = "0123456789abcdef0123456789abcdef"


def _as(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _turn(server: Server, token: str, sid: str, text: str) -> list[Frame]:
    response = server.client.post(
        f"/sessions/{sid}/prompt", json={"text": text}, headers=_as(token)
    )
    assert response.status_code == 200, response.text
    return list(frames(iter(response.text.splitlines())))


def _results(got: list[Frame]) -> list[str]:
    """The tool results the turn committed, as their stored text."""
    found = []
    for frame in got:
        if frame.id is not None and frame.data.get("kind") == "tool_result":
            found.append(str(frame.data["entry"]["content"]))
    return found


@pytest.fixture
def places(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    root = tmp_path / "workspaces"
    server = Server(
        str(tmp_path / "db.sqlite"),
        tmp_path,
        "--token",
        ALICE,
        "--token",
        BOB,
        "--workspaces",
        str(root),
    )
    yield server, root
    server.stop()


def test_two_owners_each_work_in_their_own_workspace(places: tuple[Server, Path]) -> None:
    server, root = places
    alice = server.client.post("/sessions", json={}, headers=_as(ALICE)).json()["id"]
    bob = server.client.post("/sessions", json={}, headers=_as(BOB)).json()["id"]
    wrote = _results(_turn(server, ALICE, alice, "write notes.txt alpha-secret"))
    assert len(wrote) == 1 and "error" not in wrote[0].lower()
    # The file landed in Alice's own folder: under the root, per owner, then per session.
    written = [p for p in root.rglob("notes.txt")]
    assert len(written) == 1 and written[0].read_text() == "alpha-secret"
    assert written[0].parent.name == alice and written[0].parent.parent.parent == root
    # Bob's session has its own folder: the same relative name is not there ...
    missing = _results(_turn(server, BOB, bob, "read notes.txt"))
    assert len(missing) == 1 and "alpha-secret" not in missing[0]
    # ... and neither a relative climb nor Alice's absolute path reaches her file.
    climbed = _results(
        _turn(server, BOB, bob, f"read ../../{written[0].parent.parent.name}/{alice}/notes.txt")
    )
    absolute = _results(_turn(server, BOB, bob, f"read {written[0]}"))
    assert climbed and absolute
    for result in (*climbed, *absolute):
        assert "alpha-secret" not in result and "Permission denied" in result
    overwrite = _results(_turn(server, BOB, bob, f"write {written[0]} bob-was-here"))
    assert overwrite and written[0].read_text() == "alpha-secret"
    # Bob writes in his own folder, which Alice's session never sees.
    _turn(server, BOB, bob, "write notes.txt beta")
    assert sorted(p.read_text() for p in root.rglob("notes.txt")) == ["alpha-secret", "beta"]
    again = _results(_turn(server, ALICE, alice, "read notes.txt"))
    assert len(again) == 1 and "alpha-secret" in again[0] and "beta" not in again[0]
    # Every process opens a session in the same folder: the recorded one, shown by name only.
    shown = server.client.get(f"/sessions/{alice}", headers=_as(ALICE)).json()
    assert shown["workspace"] is None and str(root) not in str(shown)


def test_a_named_workspace_is_shared_by_its_owners_sessions_only(
    places: tuple[Server, Path],
) -> None:
    server, _ = places
    first = server.client.post("/sessions", json={"workspace": "site"}, headers=_as(ALICE))
    assert first.status_code == 201 and first.json()["workspace"] == "site"
    second = server.client.post("/sessions", json={"workspace": "site"}, headers=_as(ALICE))
    theirs = server.client.post("/sessions", json={"workspace": "site"}, headers=_as(BOB))
    _turn(server, ALICE, first.json()["id"], "write index.html hello")
    shared = _results(_turn(server, ALICE, second.json()["id"], "read index.html"))
    assert len(shared) == 1 and "hello" in shared[0]
    other = _results(_turn(server, BOB, theirs.json()["id"], "read index.html"))
    assert len(other) == 1 and "hello" not in other[0]
    for bad in ("../x", ".hidden", "a/b", "", "0123456789abcdef0123456789abcdef", 7, ID.upper()):
        refused = server.client.post("/sessions", json={"workspace": bad}, headers=_as(ALICE))
        assert refused.status_code == 400, bad


@contextlib.contextmanager
def _serve(tmp_path: Path, *options: str) -> Iterator[httpx.Client]:
    """``agentsession serve`` on a model that is never called (a preview needs no provider)."""
    argv = ("--db", str(tmp_path / "c.db"), "--model", "openai:gpt-4.1", "serve", *options)
    with serve_cli(tmp_path, *argv, env={"OPENAI_API_KEY": "sk-test-never-used"}) as served:
        yield served.client


def _offered(client: httpx.Client) -> tuple[set[str], str]:
    sid = client.post("/sessions", json={}).json()["id"]
    context = client.get(f"/sessions/{sid}/context").json()["context"]
    tools = {tool["name"] for tool in context["request"]["tools"]}
    preset = client.get(f"/sessions/{sid}").json()["permission_preset"]
    return tools, preset


def test_serve_without_workspaces_offers_no_file_or_command_tool(tmp_path: Path) -> None:
    (tmp_path / "server-file.txt").write_text("the server's own")
    with _serve(tmp_path) as client:
        tools, preset = _offered(client)
    assert not tools & BUILTIN
    assert preset == "read-only"


def test_serve_with_workspaces_offers_the_tools_under_its_preset(tmp_path: Path) -> None:
    with _serve(tmp_path, "--workspaces", "spaces", "--preset", "workspace-write") as client:
        tools, preset = _offered(client)
    assert tools >= BUILTIN
    assert preset == "workspace-write"
    assert (tmp_path / "spaces" / "local").is_dir()


def _tool_runtime(tmp_path: Path, model: Any) -> Any:
    """A runtime with the built-in tools and ``model``, its store in ``tmp_path``."""
    import agentsession as ags

    return ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=model,
        tools=ags.builtin_tools(),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    )


def _alice_at(runtime: Any, root: Path) -> httpx.AsyncClient:
    """ALICE's client of an in-process server of ``runtime`` with workspaces under ``root``."""
    import agentsession as ags

    app = ags.server.create_app(runtime, workspaces=root, tokens=[ALICE])
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://localhost", headers=_as(ALICE)
    )


async def test_a_link_under_the_root_is_never_a_workspace(tmp_path: Path) -> None:
    """A link planted under the root (by a command run without a sandbox, say) would make a
    session work wherever it points: a named workspace that is a link is refused, and so is a
    session's own folder replaced by one; nothing outside is recorded, listed or read."""
    import os

    import agentsession as ags

    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s3cret")
    model = ags.ScriptedModel([[ags.ToolCall("list_files", {"path": "."})], "done"] * 3)
    runtime = _tool_runtime(tmp_path, model)
    async with _alice_at(runtime, root) as client:
        own = (await client.post("/sessions", json={})).json()["id"]
        area = next(root.iterdir())
        os.symlink(outside, area / "evil")
        linked = await client.post("/sessions", json={"workspace": "evil"})
        # The session's own folder swapped for a link before its next turn.
        (area / own).rmdir()
        os.symlink(outside, area / own)
        turn = await client.post(f"/sessions/{own}/prompt", json={"text": "list"})
        sessions = (await client.get("/sessions")).json()["sessions"]
    await runtime.close()
    assert linked.status_code == 400 and "link" in linked.json()["error"]["message"]
    assert turn.status_code == 400 and "link" in turn.json()["error"]["message"]
    assert str(outside) not in turn.text
    assert [s["id"] for s in sessions] == [own], "the refused workspace made no session"
    assert not model.requests, "no turn ran in the linked folder"


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("", "empty value"),
        ("  ", "empty value"),
        ("{tmp}/missing/ws", "does not exist"),
        ("{tmp}/a-file", "not a folder"),
    ],
)
def test_serve_refuses_a_workspace_root_it_would_guess(
    tmp_path: Path, given: str, said: str
) -> None:
    """An empty ``--workspaces`` (an unset variable) would put every workspace under the
    server's own folder, and a missing parent is a typo: both are refused before serving, and
    no folder is made."""
    from ..cli_helpers import assert_clean_error
    from ..cli_inprocess import cli_here

    (tmp_path / "a-file").write_text("x")
    argv = ["--db", str(tmp_path / "w.db"), "--model", "scripted:demo", "serve", "--no-auth"]
    result = cli_here(tmp_path, *argv, "--workspaces", given.format(tmp=tmp_path))
    assert result.code == 2
    assert_clean_error(result, said)
    assert not (tmp_path / "missing").exists() and "serving" not in result.err


def _system(client: httpx.Client, sid: str) -> str:
    """Everything the System Context of the session's next request says."""
    context = client.get(f"/sessions/{sid}/context").json()["context"]
    return "\n".join(text for _, text in context["request"]["system"])


@pytest.mark.parametrize("workspaces", [False, True])
def test_the_servers_own_instruction_files_reach_no_session(
    tmp_path: Path, workspaces: bool
) -> None:
    """``serve`` started in a repository (its own checkout, say) with an ``AGENTS.md``: no
    session's model — nor a client asking ``/context`` — gets that file, or is told whether
    the server's folder is a repository, also when the workspaces lie inside it. A session's
    own folder's file is read."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("the operator's notes: the staging password is s3cret")
    options = ("--workspaces", "spaces") if workspaces else ()
    with _serve(tmp_path, *options) as client:
        created = client.post("/sessions", json={"workspace": "site"} if workspaces else {})
        sid = created.json()["id"]
        if workspaces:
            (tmp_path / "spaces" / "local" / "site" / "AGENTS.md").write_text("site rules")
        system = _system(client, sid)
    assert "s3cret" not in system
    assert "git repository" not in system
    if workspaces:
        assert "site rules" in system


async def test_a_named_workspace_replaced_by_a_link_is_refused_not_swapped(tmp_path: Path) -> None:
    """A named workspace whose folder became a link made the session work in a fresh, empty
    folder of its own while it still showed the name; it is a 400 (as the session's own folder
    replaced by a link is), and nothing is read where the link points."""
    import os

    import agentsession as ags

    root, outside = tmp_path / "ws", tmp_path / "outside"
    outside.mkdir()
    model = ags.ScriptedModel([[ags.ToolCall("list_files", {"path": "."})], "done"] * 2)
    runtime = _tool_runtime(tmp_path, model)
    async with _alice_at(runtime, root) as client:
        sid = (await client.post("/sessions", json={"workspace": "site"})).json()["id"]
        site = next(root.iterdir()) / "site"
        site.rmdir()
        os.symlink(outside, site)
        turn = await client.post(f"/sessions/{sid}/prompt", json={"text": "list"})
    await runtime.close()
    assert turn.status_code == 400 and "link" in turn.json()["error"]["message"]
    assert not model.requests, "no turn ran elsewhere"
    assert not (site.parent / sid).exists(), "no folder of its own was made in its place"


async def test_a_fork_works_in_its_sources_named_workspace_or_in_its_own_folder(
    tmp_path: Path,
) -> None:
    """As documented: a fork of a session in a named workspace works there; a fork of a session
    in its own folder gets a folder of its own (the source's files stay the source's)."""
    import agentsession as ags

    root = tmp_path / "ws"
    call = [ags.ToolCall("list_files", {"path": "."})]
    model = ags.ScriptedModel(["hello", "hello", call, "done", call, "done"])
    runtime = _tool_runtime(tmp_path, model)
    seen = {}
    async with _alice_at(runtime, root) as client:
        for name in ("site", None):
            body = {"workspace": name} if name else {}
            sid = (await client.post("/sessions", json=body)).json()["id"]
            await client.post(f"/sessions/{sid}/prompt", json={"text": "hi"})
            (next(root.iterdir()) / (name or sid) / "notes.txt").write_text("the source's")
        sessions = (await client.get("/sessions")).json()["sessions"]
        for info in sessions:
            fork = (await client.post(f"/sessions/{info['id']}/fork", json={})).json()["id"]
            turn = await client.post(f"/sessions/{fork}/prompt", json={"text": "list"})
            described = (await client.get(f"/sessions/{info['id']}")).json()
            seen[described["workspace"]] = "notes.txt" in turn.text
    await runtime.close()
    assert seen == {"site": True, None: False}
