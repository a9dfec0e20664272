"""Running the command line in a new process, and what every failure must look like."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

#: Seconds a command may take: a bound for a hung one, never a measure. A loaded machine took
#: more than 60 to start a project's MCP server on top of the command line.
TIMEOUT = 300
VENDOR_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
SCRIPT = shutil.which("agentsession", path=str(Path(sys.executable).parent))


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]


def cli(
    cwd: Path,
    *args: str,
    stdin: str = "",
    module: bool = False,
    env: dict[str, str] | None = None,
) -> Outcome:
    """Run the CLI in a new process, with no model or database configured in the environment.

    ``env`` adds variables; the user's own configuration folder is replaced by one in ``cwd``.
    """
    # A vendor key would make a set key's default model answer: tests never reach a provider.
    unset = ("AGENTSESSION_MODEL", "AGENTSESSION_DB", "AGENTSESSION_CONFIG", *VENDOR_KEYS)
    base = {k: v for k, v in os.environ.items() if k not in unset}
    env = {
        **base,
        "PYTHONIOENCODING": "utf-8",
        "XDG_CONFIG_HOME": str(cwd / ".config"),
        **(env or {}),
    }
    if module or SCRIPT is None:
        command = [sys.executable, "-m", "agentsession", *args]
    else:
        command = [SCRIPT, *args]
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=TIMEOUT,
        check=False,
    )
    return Outcome(done.returncode, done.stdout, done.stderr)


def assert_clean_error(result: Outcome, *fragments: str) -> str:
    """A non-zero exit with exactly one ``error: ...`` line on stderr and no traceback."""
    assert result.code != 0, result
    assert "Traceback" not in result.out + result.err, result.err
    errors = [line for line in result.err_lines if line.startswith("error: ")]
    assert len(errors) == 1, result.err
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    return errors[0]


def session_id_of(result: Outcome) -> str:
    ids = [line.split()[1] for line in result.err_lines if line.startswith("session ")]
    assert len(ids) == 1, result.err
    return ids[0]
