"""The OS sandbox ``run_command`` runs in: bubblewrap, mirroring the permission preset.

Under a preset that does not let tools act anywhere (``workspace-write``, custom presets without
``write_elsewhere``), an allowed or approved command runs inside ``bwrap``: always in a user
namespace with every capability dropped (also when the agent runs as root), the whole file system
read-only, the project bind-mounted writable with its ``.git``, ``.mcp.json`` and
``.agentsession`` read-only (``protected.sandbox_read_only``), a private ``/tmp``, loaded skills'
folders readable, new PID, IPC and UTS namespaces, a new session (no terminal to inject keys
into), an environment reduced to an allowlist (no keys, tokens, secrets or provider settings), and
``--die-with-parent``: nothing the command started outlives the call.

No host socket is reachable: an empty tmpfs over ``/run``, ``/var/run``, ``/var/lock``,
``/dev/shm`` and ``$XDG_RUNTIME_DIR`` (where D-Bus, docker, PostgreSQL and the ssh and gpg agents
listen), ``/dev/null`` over every other listening socket outside the project that
``/proc/net/unix`` names, and — unless the preset allows ``network`` — a network namespace of its
own, which also holds the abstract-namespace sockets. (seccomp cannot see the address ``connect``
is given, so the file system does this job.) ``full-access`` runs commands without any of it, as
the preset says, and the permissions text tells the model which it is.

``Config.sandbox``: ``"auto"`` uses bubblewrap when it is installed *and can make a user namespace
without capabilities here*, else runs commands unsandboxed, each only after an approval that says
so; ``"bwrap"`` makes its absence a ``UsageError`` when the runtime is made; ``"none"`` never uses
it. Whether it works is probed once per process and binary by running it.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, TypeAlias

from .._frozen import frozen
from ..errors import UsageError

__all__ = [
    "SANDBOX_SETTINGS",
    "Probe",
    "SandboxMode",
    "listening_sockets",
    "probe",
    "reduced_environment",
    "resolve_sandbox",
    "sandboxed_argv",
]

SandboxMode: TypeAlias = Literal["bwrap", "none"]
SANDBOX_SETTINGS = ("auto", "bwrap", "none")
_LOG = logging.getLogger("agentsession.tools.sandbox")
_PROBE_SECONDS = 30.0
# Names a command may see; everything else (API keys, tokens, cloud and provider settings) stays
# out. A name that merely looks harmless is not enough: values are not inspected.
_ALLOWED = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TERM", "TZ", "SHELL"})
_ALLOWED_PREFIX = "LC_"
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_NAMESPACES = ("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")


@frozen
class Probe:
    """Whether bubblewrap works here: the command prefix to use, or why not."""

    prefix: tuple[str, ...] = ()
    problem: str = ""

    @property
    def works(self) -> bool:
        """Whether commands can run sandboxed."""
        return bool(self.prefix)


# Always a user namespace and no capabilities, also for root: without ``--unshare-user`` a root
# caller keeps every capability inside (remount ``/`` writable, read the agent's ``/proc``,
# ``nsenter`` its namespaces, reach the network). Where no user namespace can be made (a
# container forbidding it, a sysctl) there is no sandbox, and it is not called one.
_ISOLATION = ("--unshare-user", "--cap-drop", "ALL")


@functools.cache
def _probe(binary: str) -> Probe:
    argv = [binary, *_ISOLATION, *_mounts(Path("/"), ()), *_NAMESPACES]
    argv += ["--unshare-net", "--new-session", "--die-with-parent", "--", "true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=_PROBE_SECONDS, check=False, text=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Probe(problem=f"bubblewrap ({binary}) could not be started: {exc}")
    if done.returncode == 0:
        return Probe((binary, *_ISOLATION))
    said = (
        done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "it exited with an error"
    )
    return Probe(
        problem=f"bubblewrap ({binary}) cannot create a user namespace without capabilities "
        f"here: {said}"
    )


def probe() -> Probe:
    """Whether ``bwrap`` on ``PATH`` works here (run once per binary and process)."""
    binary = shutil.which("bwrap")
    if binary is None:
        return Probe(problem="bubblewrap (bwrap) is not installed")
    return _probe(binary)


@functools.cache
def _fell_back(problem: str) -> None:
    _LOG.warning("run_command is not sandboxed: %s", problem)


def resolve_sandbox(setting: str) -> SandboxMode:
    """The sandbox commands use for ``Config.sandbox == setting``.

    ``"bwrap"`` that does not work here is a ``UsageError``; ``"auto"`` falls back to ``"none"``
    with one logged warning per reason.
    """
    if setting == "none":
        return "none"
    found = probe()
    if found.works:
        return "bwrap"
    if setting == "bwrap":
        missing = shutil.which("bwrap") is None
        fix = (
            "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
            if missing
            else "Allow user namespaces here (the sysctls user.max_user_namespaces,"
            " kernel.unprivileged_userns_clone; a container's seccomp or AppArmor profile)"
        )
        raise UsageError(
            f"Config(sandbox='bwrap'): {found.problem.rstrip('.')}. {fix}, or use"
            " sandbox='auto' to run commands unsandboxed, each after an approval saying so"
        )
    _fell_back(found.problem)
    return "none"


def reduced_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a sandboxed command sees: the allowlist, never anything secret-looking."""
    return {
        name: value
        for name, value in environ.items()
        if (name in _ALLOWED or name.startswith(_ALLOWED_PREFIX)) and not _SECRET.search(name)
    }


# Folders where services keep their sockets (D-Bus, docker, PostgreSQL's /var/run/postgresql,
# ssh and gpg agents under $XDG_RUNTIME_DIR): an empty tmpfs over each. A read-only mount does not
# stop connect(), so read-only is not enough.
_SOCKET_FOLDERS = ("/run", "/var/run", "/var/lock", "/dev/shm")


def _masked_folders(environ: Mapping[str, str]) -> list[str]:
    found: list[str] = []
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    for folder in (*_SOCKET_FOLDERS, *([runtime] if os.path.isabs(runtime) else [])):
        real = os.path.realpath(folder)
        if os.path.isdir(real) and not _within(real, found) and real != "/":
            found.append(real)
    return found


def _within(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def listening_sockets() -> list[str]:
    """Absolute paths of the unix sockets bound in this network namespace (``/proc/net/unix``).

    A socket bound by a relative name is found in the folder of the process that holds it.
    """
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            rows = table.read().splitlines()[1:]
    except OSError:
        return []
    found: list[str] = []
    relative: dict[str, str] = {}  # socket inode: the name it was bound by, relative to a folder
    for row in rows:
        fields = row.split(None, 7)
        if len(fields) != 8 or fields[7].startswith("@"):
            continue
        if not fields[7].startswith("/"):
            relative[fields[6]] = fields[7]
        elif fields[7] not in found:
            found.append(fields[7])
    for path in _relative_sockets(relative):
        if path not in found:
            found.append(path)
    return found


def _relative_sockets(names: Mapping[str, str]) -> list[str]:
    """Where sockets bound by a relative name are: in the folder of the process holding each.

    ``/proc/net/unix`` names them as bound (``app.sock``); the process holding the socket
    (``/proc/PID/fd``) is found by its inode and its current folder taken, which is where the
    name was bound unless the process has moved since.
    """
    found: list[str] = []
    if not names:
        return found
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:  # gone, or not ours to read
            continue
        for link in links:
            if link.startswith("socket:[") and link[8:-1] in names:
                found.append(os.path.join(cwd, names[link[8:-1]]))
    return found


def _socket_masks(project: Path, hidden: Sequence[str], shown: Sequence[str]) -> list[str]:
    """``/dev/null`` over each socket outside the project that the sandbox leaves visible.

    ``hidden`` are the folders under an empty tmpfs, ``shown`` the folders bound back into them.
    """
    argv: list[str] = []
    for bound in listening_sockets():
        # The path a socket was bound at may run through a symlink (/var/run is /run): judged and
        # masked where it really is, or a mask inside a tmpfs'd folder would stop bwrap itself.
        folder, name = os.path.split(bound)
        path = os.path.join(os.path.realpath(folder), name)
        if _within(path, [str(project)]) or (_within(path, hidden) and not _within(path, shown)):
            continue
        try:
            if not stat.S_ISSOCK(os.lstat(path).st_mode):
                continue
        except OSError:  # gone, or in another mount namespace
            continue
        argv += ["--ro-bind", "/dev/null", path]
    return argv


def _mounts(
    project: Path,
    readable: Sequence[Path],
    environ: Mapping[str, str] | None = None,
    read_only: Sequence[Path] = (),
) -> list[str]:
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    hidden = ["/tmp"]
    if environ is not None:  # a real command, not the probe
        for masked in _masked_folders(environ):  # a project below one is bound back below
            argv += ["--tmpfs", masked]
            hidden.append(masked)
    for folder in readable:  # loaded skills' folders, which a private /tmp would hide
        argv += ["--ro-bind-try", str(folder), str(folder)]  # a skill may have left since
    if environ is not None:  # after the skills' folders, which could hold a socket too
        argv += _socket_masks(project, hidden, [str(f) for f in readable])
    if project != Path("/"):
        argv += ["--bind", str(project), str(project)]
    pinned: list[Path] = []
    for path in read_only:  # .git/, .mcp.json, .agentsession/ inside the project
        # Each folder between the project and a deeper one (a hooks folder tools/hooks) is bound
        # onto itself, still writable: a mount point cannot be renamed, so `mv tools moved;
        # mkdir -p tools/hooks` cannot put a writable folder where the read-only one was.
        for folder in reversed(path.parents):
            if project in folder.parents and folder not in pinned and not _under(folder, read_only):
                pinned.append(folder)
                argv += ["--bind-try", str(folder), str(folder)]
        argv += ["--ro-bind-try", str(path), str(path)]
    return argv


def _under(path: Path, folders: Sequence[Path]) -> bool:
    return any(path == f or f in path.parents for f in folders)


def sandboxed_argv(
    prefix: Sequence[str],
    argv: Sequence[str],
    *,
    project: Path,
    readable: Sequence[Path],
    network: bool,
    environ: Mapping[str, str],
    read_only: Sequence[Path] = (),
) -> list[str]:
    """``argv`` wrapped in bubblewrap (``prefix`` from ``probe()``), started in ``project``.

    ``environ`` is what the command sees; ``read_only`` are paths in the project mounted
    read-only (protected ones the call was not approved to change).
    """
    mounts = _mounts(project, readable, os.environ, read_only)
    wrapped = [*prefix, *mounts, *_NAMESPACES]
    if not network:
        # A network namespace of its own: no interface but loopback, and none of the host's
        # abstract unix sockets (they belong to a network namespace, not the file system).
        wrapped.append("--unshare-net")
    wrapped += ["--new-session", "--die-with-parent", "--clearenv"]
    for name, value in sorted(environ.items()):
        wrapped += ["--setenv", name, value]
    wrapped += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(project), "--", *argv]
    return wrapped
