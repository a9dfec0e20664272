"""Running a test's child process without root, so file modes bind it as they bind a user."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest


def unprivileged() -> list[str]:
    """A command prefix that runs as ``nobody`` under root, ``[]`` otherwise.

    Skips the test when root cannot drop its rights (no ``setpriv``), or when ``nobody`` cannot
    import this checkout (one inside a private folder, e.g. a clone in a 0700 temporary
    directory): that is the machine, not the behaviour under test.
    """
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is missing: cannot drop root for this test")
    prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import agentsession"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd="/",
    )
    if probe.returncode != 0:
        pytest.skip(f"the unprivileged user cannot import this checkout: {probe.stderr[-200:]}")
    return prefix
