"""The OS sandbox ``run_command`` runs in: bubblewrap, mirroring the permission preset.

Under a preset that does not let tools act anywhere (``workspace-write``, custom presets without
``write_elsewhere``), an allowed or approved command runs inside ``bwrap``: the whole file system
read-only, the project bind-mounted writable, a private ``/tmp``, loaded skills' folders readable,
new PID, IPC and UTS namespaces, a new session (no terminal to inject keys into), no network unless
the preset allows ``network``, an environment reduced to an allowlist (no keys, tokens, secrets or
provider settings), and ``--die-with-parent``: when the command's shell ends, the namespace's
first process ends, and the kernel kills everything else in it before ``bwrap`` returns — nothing
the command started outlives the call. ``full-access`` runs commands without it, as the preset
says, and the permissions text tells the model which it is.

``Config.sandbox``: ``"auto"`` uses bubblewrap when it is installed *and works here* (a container
may forbid namespaces); ``"bwrap"`` makes its absence a ``UsageError`` when the runtime is made;
``"none"`` never uses it. Whether it works is probed once per process and binary by running it.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeAlias

from ..errors import UsageError

__all__ = [
    "SANDBOX_SETTINGS",
    "Probe",
    "SandboxMode",
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


@dataclass(frozen=True)
class Probe:
    """Whether bubblewrap works here: the command prefix to use, or why not."""

    prefix: tuple[str, ...] = ()
    problem: str = ""

    @property
    def works(self) -> bool:
        """Whether commands can run sandboxed."""
        return bool(self.prefix)


def _base(binary: str, user_namespace: bool) -> list[str]:
    return [binary, *(["--unshare-user"] if user_namespace else [])]


@functools.cache
def _probe(binary: str) -> Probe:
    problems: list[str] = []
    for user_namespace in (False, True):
        argv = [*_base(binary, user_namespace), *_mounts(Path("/"), ()), *_NAMESPACES]
        argv += ["--unshare-net", "--new-session", "--die-with-parent", "--", "true"]
        try:
            done = subprocess.run(
                argv, capture_output=True, timeout=_PROBE_SECONDS, check=False, text=True
            )
        except (OSError, subprocess.SubprocessError) as exc:
            problems.append(str(exc))
            continue
        if done.returncode == 0:
            return Probe(tuple(_base(binary, user_namespace)))
        problems.append(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "")
    shown = "; ".join(p for p in problems if p) or "it exited with an error"
    return Probe(problem=f"bubblewrap ({binary}) cannot create its namespaces here: {shown}")


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
        raise UsageError(
            f"Config(sandbox='bwrap'): {found.problem}. Install bubblewrap (Debian/Ubuntu: "
            "apt-get install bubblewrap), or use sandbox='auto' to run commands unsandboxed "
            "where it cannot work"
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


def _mounts(project: Path, readable: Sequence[Path]) -> list[str]:
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for folder in readable:  # loaded skills' folders, which a private /tmp would hide
        argv += ["--ro-bind-try", str(folder), str(folder)]  # a skill may have left since
    if project != Path("/"):
        argv += ["--bind", str(project), str(project)]
    return argv


def sandboxed_argv(
    prefix: Sequence[str],
    argv: Sequence[str],
    *,
    project: Path,
    readable: Sequence[Path],
    network: bool,
    environ: Mapping[str, str],
) -> list[str]:
    """``argv`` wrapped in bubblewrap (``prefix`` from ``probe()``), started in ``project``."""
    wrapped = [*prefix, *_mounts(project, readable), *_NAMESPACES]
    if not network:
        wrapped.append("--unshare-net")
    wrapped += ["--new-session", "--die-with-parent", "--clearenv"]
    for name, value in sorted(environ.items()):
        wrapped += ["--setenv", name, value]
    wrapped += ["--setenv", "TMPDIR", "/tmp", "--chdir", str(project), "--", *argv]
    return wrapped
