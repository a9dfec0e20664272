"""The built-in ``run_command`` tool: a shell command in the project, bounded, and sandboxed.

The command runs ``bash -c`` (or ``sh``) in the project folder with the text as given, stdin
empty, in its own process group, killed on timeout, on cancellation and when the shell ends: no
process it started outlives the call. Its output keeps its head and tail. How it runs follows the
call's ``ToolContext`` (set by the session from the preset and ``Config.sandbox``): inside
bubblewrap (``sandbox`` module) with the project the only writable place and no network unless the
preset allows it; with the environment reduced to an allowlist; or, under a preset that lets tools
act anywhere, as the application itself runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal

from . import ToolOutcome, tool
from .context import ToolContext
from .protected import sandbox_read_only
from .sandbox import probe, reduced_environment, sandboxed_argv

__all__ = ["COMMAND_MAX_TIMEOUT", "COMMAND_OUTPUT_BYTES", "COMMAND_TIMEOUT", "run_command"]

COMMAND_TIMEOUT = 120.0
COMMAND_MAX_TIMEOUT = 600.0
COMMAND_OUTPUT_BYTES = 30_000
_PIECE = 64 * 1024
_DRAIN_GRACE = 1.0


class _Output:
    """Head and tail of a byte stream, with the total, in bounded memory."""

    def __init__(self, limit: int) -> None:
        self.half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        head = bytes(self.head).decode("utf-8", "replace")
        omitted = self.total - len(self.head) - len(self.tail)
        if omitted <= 0:
            return head + bytes(self.tail).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        return f"{head}\n[... {omitted:,} bytes of output omitted ...]\n{tail}"


async def _pump(stream: asyncio.StreamReader, output: _Output) -> None:
    while chunk := await stream.read(_PIECE):
        output.add(chunk)


async def _exited(process: asyncio.subprocess.Process, reader: asyncio.Task[None]) -> None:
    """Until the shell itself has ended.

    ``process.wait()`` would also wait for every holder of the output pipe to close it, which a
    background job may never do; the exit status is there as soon as the shell ends.
    """
    while process.returncode is None:
        if reader.done():  # end of output usually means the end of the shell: look again soon
            await asyncio.sleep(0.01)
        else:
            await asyncio.wait({reader}, timeout=0.05)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _argv(command: str, context: ToolContext) -> list[str] | ToolOutcome:
    """The command line to start: the shell, wrapped in the sandbox when the call needs it."""
    shell = [shutil.which("bash") or "/bin/sh", "-c", command]
    if context.sandbox != "bwrap":
        return shell
    found = probe()
    if not found.works:  # it worked when the runtime was made; never run unsandboxed instead
        return ToolOutcome(f"Not run: the command sandbox cannot start ({found.problem}).", True)
    # .git/, .mcp.json, .agentsession/ and the hooks folder stay read-only unless the user
    # approved this very call to change them (``write_protected``, asked by the gate).
    read_only = [
        path
        for path in sandbox_read_only(context.project_dir)
        if str(path) not in context.approved_protected
    ]
    return sandboxed_argv(
        found.prefix,
        shell,
        project=context.project_dir,
        readable=context.readable,
        network=context.network,
        environ=reduced_environment(os.environ),
        read_only=read_only,
    )


@tool(effect="execute", timeout=COMMAND_MAX_TIMEOUT + 60)
async def run_command(
    command: str,
    timeout_seconds: float = COMMAND_TIMEOUT,
    write_protected: bool = False,
    *,
    context: ToolContext,
) -> ToolOutcome:
    """Run a shell command in the project folder and return its output and exit code.

    Args:
        command: The command line, run by bash (or sh) exactly as written; stdin is empty.
        timeout_seconds: Seconds before the command and everything it started are killed
            (up to 600).
        write_protected: In the sandbox, .git/, .mcp.json and .agentsession/ are read-only; set
            this only when the command must change them (git commit, git checkout): the user is
            asked to approve this call with them writable.
        context: Supplied by the runtime for each call.
    """
    seconds = min(max(timeout_seconds, 1.0), COMMAND_MAX_TIMEOUT)
    argv = _argv(command, context)
    if isinstance(argv, ToolOutcome):
        return argv
    output = _Output(COMMAND_OUTPUT_BYTES)
    environment = reduced_environment(os.environ) if context.clean_environment else None
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=context.project_dir,
        env=environment,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    assert process.stdout is not None
    reader = asyncio.create_task(_pump(process.stdout, output))
    timed_out = False
    try:
        try:
            async with asyncio.timeout(seconds):
                await _exited(process, reader)
        except TimeoutError:
            timed_out = True
        # Output still in the pipe after the shell ended; a background job holding it open
        # does not get to keep the call waiting.
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE)
    finally:
        _kill_group(process.pid)
        await asyncio.wait({reader}, timeout=_DRAIN_GRACE)
        reader.cancel()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_DRAIN_GRACE):
                await _exited(process, reader)
    return _command_result(output.text(), process.returncode, timed_out, seconds)


def _command_result(text: str, code: int | None, timed_out: bool, seconds: float) -> ToolOutcome:
    body = text if text else "(no output)"
    if not body.endswith("\n"):
        body += "\n"
    if timed_out:
        status = (
            f"[timed out after {seconds:g} second{'' if seconds == 1 else 's'}; the command and "
            "every process it started "
            "were killed]"
        )
    elif code is not None and code < 0:
        status = f"[killed by signal {-code}]"
    else:
        status = f"[exit code: {code}]"
    return ToolOutcome(body + status, timed_out or code != 0)
