"""The README's Python example works when pasted, and prints what its comments promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    example = blocks[0]
    assert len(example.strip().splitlines()) <= 21
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    promised = re.findall(r"#\s*(.+)$", example, re.M)
    printed = done.stdout.splitlines()
    for line in printed:
        assert any(p.strip() == line for p in promised), (line, promised)
    assert printed == [
        "2 + 40 = 42",
        "['user', 'assistant', 'tool', 'assistant']",
        "4 messages stored",
    ]
