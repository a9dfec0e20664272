"""The deployment samples in ``deploy/`` say what the program accepts: the systemd unit's and the
container's command lines parse with the real command line (every option exists, every value is
accepted), the proxies send to the port the server listens on and keep event streams unbuffered,
and every route a sample checks is one the server has. ``docs/server.md`` names every sample."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from agentsession.cli.app import build_parser

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SAMPLES = ("agentsession.service", "Containerfile", "Caddyfile", "nginx.conf", "postgres-roles.sql")


def _parsed(argv: list[str]) -> dict[str, object]:
    """``argv`` (after the program's name) as the command line parses it; fails on any error."""
    try:
        return vars(build_parser().parse_args(argv))
    except SystemExit as exc:  # argparse's way of refusing
        raise AssertionError(f"the command line refuses {argv}") from exc


def _unit_command() -> list[str]:
    unit = (DEPLOY / "agentsession.service").read_text()
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    words = shlex.split(line.removeprefix("ExecStart="))
    assert words[0].endswith("/agentsession")
    return [w.replace("${CREDENTIALS_DIRECTORY}", "/run/credentials/agentsession") for w in words]


def _container_command() -> list[str]:
    text = (DEPLOY / "Containerfile").read_text()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))  # type: ignore[union-attr]
    assert entry[0] == "agentsession"
    return [*entry, *cmd]


def test_every_sample_exists_and_the_docs_name_it() -> None:
    docs = (ROOT / "docs" / "server.md").read_text()
    for name in SAMPLES:
        assert (DEPLOY / name).is_file(), name
        assert f"deploy/{name}" in docs, name


@pytest.mark.parametrize("source", ["unit", "container"])
def test_the_sample_command_lines_parse_with_the_real_options(source: str) -> None:
    words = _unit_command() if source == "unit" else _container_command()
    args = _parsed(words[1:])
    assert words[1] == "serve"
    assert args["token_file"], "a sample keeps its token in a file"
    assert not args["token"], "no token on a command line (process listings show it)"
    assert args["workspaces"] == "/srv/agentsession/workspaces"
    assert args["preset"] in ("read-only", "workspace-write")
    assert args["allowed_host"] == ["agents.example.com"]
    assert isinstance(args["port"], int)
    if source == "unit":
        assert args["host"] == "127.0.0.1"  # behind the proxy on the same machine


def test_the_proxies_reach_the_units_port_and_do_not_buffer_streams() -> None:
    port = _parsed(_unit_command()[1:])["port"]
    caddy = (DEPLOY / "Caddyfile").read_text()
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert re.search(rf"reverse_proxy 127\.0\.0\.1:{port}\b", caddy)
    assert "flush_interval -1" in caddy
    assert re.search(rf"server 127\.0\.0\.1:{port}\b", nginx)
    assert "proxy_buffering off;" in nginx and "proxy_set_header Host $host;" in nginx
    # Both serve the name the unit allows, so the server's Host check lets them through.
    allowed = _parsed(_unit_command()[1:])["allowed_host"]
    assert isinstance(allowed, list)
    site = next(x for x in caddy.splitlines() if x.strip() and not x.startswith("#"))
    for name in allowed:
        assert site == f"{name} {{" and f"server_name {name};" in nginx


def test_the_routes_the_samples_check_exist() -> None:
    from agentsession.server import create_app

    checked = set()
    for name in ("Containerfile", "Caddyfile", "nginx.conf"):
        checked |= set(re.findall(r"(/(?:readyz|healthz))\b", (DEPLOY / name).read_text()))
    assert checked >= {"/readyz"}
    import agentsession as ags

    app = create_app(ags.Runtime(store=ags.MemoryStore(), model=ags.ScriptedModel([])))
    paths = {getattr(route, "path", None) for route in app.routes}
    assert checked <= paths


def test_following_the_samples_comments_gives_what_they_need() -> None:
    """The comments are the install steps: Podman keeps a HEALTHCHECK only in the docker image
    format (its default drops it), and the unit runs as a user and writes to a folder that its
    steps make (systemd does not start a unit whose ReadWritePaths= is missing)."""
    container = (DEPLOY / "Containerfile").read_text()
    assert "HEALTHCHECK" in container
    build = next(x for x in container.splitlines() if "podman build" in x)
    assert "--format docker" in build
    unit = (DEPLOY / "agentsession.service").read_text()
    steps = "\n".join(x for x in unit.splitlines() if x.startswith("#"))
    user = re.search(r"^User=(\S+)$", unit, re.M).group(1)  # type: ignore[union-attr]
    assert re.search(rf"useradd .*\b{user}$", steps, re.M), "the unit's user is made"
    for folder in re.findall(r"^ReadWritePaths=(.+)$", unit, re.M):
        assert f"install -d -o {user}" in steps and folder in steps, folder
    program = _unit_command()[0]
    venv = program.removesuffix("/bin/agentsession")
    assert f"venv {venv}" in steps, "the unit's program is installed where it runs it"
