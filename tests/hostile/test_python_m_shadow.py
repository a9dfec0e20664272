"""``python -m agentsession`` runs nothing from the current folder.

``python -m`` puts the current folder first on ``sys.path``: before this change a model-written
``platformdirs.py`` in the project ran, with the user's keys, at the user's next
``python -m agentsession`` there. Now ``import agentsession`` loads only the standard library, and
``__main__`` starts again with ``-P`` when the folder is on the path. The control imports the
command line from the same folder without ``__main__``'s care, and the shadow runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TIMEOUT = 120


@pytest.fixture
def shadowed(tmp_path: Path) -> Path:
    """A folder whose ``platformdirs.py`` leaves a marker and exits 3 when imported."""
    folder = tmp_path / "project"
    folder.mkdir()
    marker = tmp_path / "SHADOW-RAN"
    (folder / "platformdirs.py").write_text(
        f"import sys\nopen({str(marker)!r}, 'w').write('ran')\nsys.exit(3)\n"
    )
    return folder


def run(folder: Path, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    home = folder.parent / "home"
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CONFIG_HOME": str(home / "config"),
        **extra,
    }
    env.pop("PYTHONSAFEPATH", None)
    return subprocess.run(
        [sys.executable, *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("pythonpath", ["", "."], ids=["plain", "PYTHONPATH=."])
def test_python_m_agentsession_does_not_import_from_the_current_folder(
    shadowed: Path, pythonpath: str
) -> None:
    extra = {"PYTHONPATH": pythonpath} if pythonpath else {}
    done = run(shadowed, "-m", "agentsession", "sessions", **extra)
    assert not (shadowed.parent / "SHADOW-RAN").exists(), done.stderr
    assert done.returncode == 0, done.stderr
    assert "no sessions yet" in done.stdout + done.stderr


def test_control_the_same_folder_on_the_path_runs_the_shadow(shadowed: Path) -> None:
    done = run(shadowed, "-c", "from agentsession.cli import main; main(['sessions'])")
    assert (shadowed.parent / "SHADOW-RAN").exists()
    assert done.returncode == 3


def test_import_agentsession_loads_only_the_standard_library(tmp_path: Path) -> None:
    code = (
        "import json, sys\n"
        "import agentsession as ags\n"
        "outside = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'agentsession', '__main__', '_distutils_hack'})\n"
        "print(json.dumps(outside))\n"
        "from agentsession import Runtime, ScriptedModel\n"
        "print(Runtime.__module__, ags.Config.__name__,"
        " len(ags.__all__) == len(set(ags.__all__)))\n"
    )
    done = run(tmp_path, "-c", code)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert json.loads(first) == []
    assert second == "agentsession.runtime Config True"


def test_nothing_the_package_imports_before_starting_again_comes_from_the_folder(
    tmp_path: Path,
) -> None:
    # ``from __future__ import annotations`` in ``agentsession/__init__.py`` imported the module
    # ``__future__`` from the folder first on the path, before ``__main__`` could start again:
    # a ``__future__.py`` the model wrote ran. Every standard module Python has not loaded by
    # then is shadowed here; ``runpy`` and what it loads are Python's own (documented).
    folder = tmp_path / "project"
    folder.mkdir()
    marker = tmp_path / "SHADOW-RAN"
    python_s_own = (  # what Python has loaded when ``-m`` hands over: its start and runpy
        "import sys; import runpy; print(' '.join(sys.modules))"
    )
    preloaded = set(run(folder, "-P", "-c", python_s_own).stdout.split())
    assert "runpy" in preloaded
    shadows = ["__future__", "typing", "enum", "json", "argparse", "asyncio", "platformdirs"]
    for name in shadows:
        if name not in preloaded:
            (folder / f"{name}.py").write_text(
                f"open({str(marker)!r}, 'a').write({name!r} + ' ')\n"
            )
    done = run(folder, "-m", "agentsession", "--version")
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 0, done.stderr
