"""No host socket is reachable from a sandboxed command.

A read-only mount does not stop ``connect()``: before this change a sandboxed command reached a
listener anywhere on the file system (an ssh or gpg agent, D-Bus, docker, PostgreSQL's local
socket) and, through the shared network namespace, in the abstract namespace. Now the sandbox
puts an empty tmpfs over ``/run``, ``/var/run``, ``$XDG_RUNTIME_DIR`` (``/tmp`` was private
already), ``/dev/null`` over every other listening socket outside the project, and a network
namespace of its own over the abstract ones when the preset has no network. Each listener below is
reached by the same command under ``full-access`` (the control), and never from the sandbox.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentsession.tools.sandbox import probe, reduced_environment, sandboxed_argv

from ..scenario import make_project
from .commands import Make, needs_bwrap, run_approved

CONNECT = (
    "python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); "
    's.connect(sys.argv[1].replace("@", "\\0", 1)); s.sendall(b"secret"); '
    'print("connected")\' {address}'
)
NETWORKED = {"read": "allow", "write_project": "allow", "execute": "ask", "network": "allow"}


class Listener:
    """A unix socket server that records what each connection sent."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.got: list[bytes] = []
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(address.replace("@", "\0", 1) if address.startswith("@") else address)
        self.server.listen()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            with connection:
                self.got.append(connection.recv(100))

    def close(self) -> None:
        self.server.shutdown(socket.SHUT_RDWR)
        self.server.close()
        self.thread.join(timeout=30)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    return make_project(tmp_path)


Where = Callable[[], str]


def in_folder(root: str, name: str) -> Iterator[str]:
    """A socket path in ``root`` (created if missing, and then removed again)."""
    made = not os.path.isdir(root)
    try:
        os.makedirs(root, mode=0o755, exist_ok=True)
    except OSError as exc:
        pytest.skip(f"cannot create {root} here: {exc}")
    path = os.path.join(root, name)
    try:
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if made:  # only when empty: another run may have put its own socket there meanwhile
            with contextlib.suppress(OSError):
                os.rmdir(root)


@pytest.fixture(params=["run", "xdg_runtime_dir", "postgresql", "elsewhere", "abstract"])
def listener(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Listener]:
    tag = uuid.uuid4().hex[:12]
    places: dict[str, Callable[[], Iterator[str]]] = {
        "run": lambda: in_folder(f"/run/agentsession-test-{tag}", "bus.sock"),
        "xdg_runtime_dir": lambda: in_folder(f"/var/tmp/agentsession-xdg-{tag}", "ssh-agent"),
        "postgresql": lambda: in_folder(
            "/var/run/postgresql", f".s.PGSQL.{40000 + int(tag, 16) % 20000}"
        ),
        "elsewhere": lambda: in_folder(f"/var/tmp/agentsession-agent-{tag}", "agent.sock"),
        "abstract": lambda: iter([f"@agentsession-test-{tag}"]),
    }
    paths = places[request.param]()
    address = next(paths)
    if request.param == "xdg_runtime_dir":
        monkeypatch.setenv("XDG_RUNTIME_DIR", os.path.dirname(address))
    served = Listener(address)
    yield served
    served.close()
    for _ in paths:  # the generator's clean-up
        pass


@needs_bwrap
async def test_a_sandboxed_command_reaches_no_host_socket(
    make_runtime: Make, project: Path, listener: Listener
) -> None:
    ran = await run_approved(
        make_runtime, project, CONNECT.format(address=listener.address) + "; echo command-ran"
    )
    assert "command-ran" in ran.text  # the sandbox itself started
    assert "connected" not in ran.text
    assert listener.got == []


async def test_control_full_access_reaches_the_same_socket(
    make_runtime: Make, project: Path, listener: Listener
) -> None:
    ran = await run_approved(
        make_runtime, project, CONNECT.format(address=listener.address), preset="full-access"
    )
    assert "connected" in ran.text
    assert listener.got == [b"secret"]


@needs_bwrap
async def test_with_network_allowed_file_system_sockets_stay_out_of_reach(
    make_runtime: Make, project: Path, listener: Listener
) -> None:
    ran = await run_approved(
        make_runtime,
        project,
        CONNECT.format(address=listener.address),
        "networked",
        presets={"networked": NETWORKED},
    )
    if listener.address.startswith("@"):
        # Decided and documented: network on means the host's network namespace, and abstract
        # sockets belong to it (docs/security.md, "Not promised").
        assert "connected" in ran.text
    else:
        assert "connected" not in ran.text
        assert listener.got == []


@needs_bwrap
async def test_a_socket_inside_the_project_stays_usable(make_runtime: Make, project: Path) -> None:
    served = Listener(str(project / "app.sock"))
    try:
        ran = await run_approved(make_runtime, project, CONNECT.format(address=served.address))
    finally:
        served.close()
    assert "connected" in ran.text


@needs_bwrap
def test_a_socket_in_a_readable_skill_folder_is_masked_too(tmp_path: Path) -> None:
    skill = tmp_path / "skill"
    skill.mkdir()
    served = Listener(str(skill / "agent.sock"))
    project = make_project(tmp_path)
    argv = sandboxed_argv(
        probe().prefix,
        ["sh", "-c", CONNECT.format(address=served.address) + f"; cat {skill}/SKILL.md"],
        project=project,
        readable=[skill],
        network=False,
        environ=reduced_environment(os.environ),
    )
    (skill / "SKILL.md").write_text("readable")
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    finally:
        served.close()
    assert "readable" in done.stdout  # the folder itself is there
    assert "connected" not in done.stdout
    assert served.got == []


@needs_bwrap
def test_a_socket_bound_through_a_symlink_to_a_masked_folder_leaves_commands_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL on Debian binds /var/run/postgresql/.s.PGSQL.5432, and /var/run is a symlink to
    # /run: /proc/net/unix names the socket by the path it was bound at. Masking that path under
    # the tmpfs over /run made bwrap fail before the command ran (every command, any command).
    # Here the masked folder is $XDG_RUNTIME_DIR, reached through an absolute symlink beside it
    # (outside /tmp, which the sandbox replaces).
    for top in in_folder(f"/var/tmp/agentsession-linked-{uuid.uuid4().hex[:12]}", "x"):
        base = Path(top).parent
        real = base / "runtime-dir"
        (real / "postgresql").mkdir(parents=True)
        linked = base / "linked"
        linked.symlink_to(real)
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(real))
        served = Listener(str(linked / "postgresql" / ".s.PGSQL.5432"))
        argv = sandboxed_argv(
            probe().prefix,
            ["sh", "-c", CONNECT.format(address=served.address) + "; echo command-ran"],
            project=make_project(tmp_path),
            readable=[],
            network=False,
            environ=reduced_environment(os.environ),
        )
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        finally:
            served.close()
            shutil.rmtree(base)
        assert "command-ran" in done.stdout, done.stderr
        assert "connected" not in done.stdout
        assert served.got == []


RELATIVE_LISTENER = """
import os, socket, sys
os.chdir(sys.argv[1])
server = socket.socket(socket.AF_UNIX)
server.bind("app.sock")  # /proc/net/unix names it 'app.sock', not by its full path
server.listen()
print("listening", flush=True)
connection, _ = server.accept()
print("got", connection.recv(100), flush=True)
"""


def relative_listener(folder: str) -> subprocess.Popen[str]:
    """A process listening on ``app.sock`` in ``folder``, bound by that relative name."""
    return subprocess.Popen(
        ["python3", "-c", RELATIVE_LISTENER, folder], stdout=subprocess.PIPE, text=True
    )


@pytest.mark.parametrize(
    "preset", [pytest.param("workspace-write", marks=needs_bwrap), "full-access"]
)
async def test_a_socket_bound_by_a_relative_path_is_masked_too(
    make_runtime: Make, project: Path, preset: str
) -> None:
    for path in in_folder(f"/var/tmp/agentsession-relative-{uuid.uuid4().hex[:12]}", "app.sock"):
        listener = relative_listener(os.path.dirname(path))
        try:
            assert listener.stdout is not None
            assert listener.stdout.readline() == "listening\n"
            ran = await run_approved(
                make_runtime,
                project,
                CONNECT.format(address=path) + "; echo command-ran",
                preset,
            )
        finally:
            listener.kill()
            got = listener.communicate(timeout=30)[0]
        assert "command-ran" in ran.text
        if preset == "full-access":  # the control: the same command reaches it
            assert "connected" in ran.text and "secret" in got
        else:
            assert "connected" not in ran.text and "secret" not in got
