"""The README's Python example works when pasted, and prints what its comments promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

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
        timeout=300,
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


def test_readme_approval_snippet_answers_every_call(tmp_path: Path) -> None:
    """The approval snippet, as pasted, answers a turn whose calls are asked one at a time."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (snippet,) = [b for b in blocks if "approval_required" in b]
    body = "\n".join("        " + line for line in snippet.splitlines())
    script = tmp_path / "approvals.py"
    script.write_text(
        f"""
import asyncio
import agentsession as ags

ran = []

@ags.tool(effect="execute")
def run_command(command: str) -> str:
    \"\"\"Run a command.\"\"\"
    ran.append(command)
    return "ok"

calls = [ags.ToolCall("run_command", {{"command": c}}) for c in ("pytest -x", "pytest")]
model = ags.ScriptedModel([calls, "The tests pass."])

async def main() -> None:
    async with ags.Runtime(store=ags.MemoryStore(), model=model, tools=[run_command]) as runtime:
        session = await runtime.create_session()
{body}
        print(result.stop_reason, result.text, ran)

asyncio.run(main())
""",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["end_turn The tests pass. ['pytest -x', 'pytest']"]


_PRELUDE = """
import asyncio
import agentsession as ags

def read_ci_status() -> str:
    return "Build status: green."

async def main() -> None:
    model = ags.ScriptedModel(REPLIES)
    runtime = first = ags.Runtime(store=ags.MemoryStore(), model=model)
    session = await runtime.create_session()
    await session.prompt("hello")
{body}
    if runtime is not first:
        await runtime.close()
    await first.close()
    outcomes = [m.content for m in session.messages if m.role == "tool"]
    print("RESULTS", outcomes)

asyncio.run(main())
"""

_SCRIPTS = {
    "ags.Skill(": (
        '["hi", [ags.ToolCall("load_skill", {"name": "pdf"})],'
        ' [ags.ToolCall("extract_text", {"path": "report.pdf"})], "A summary.",'
        ' [ags.ToolCall("extract_text", {"path": "appendix.pdf"})], "The appendix."]'
    ),
}


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def _snippets() -> list[str]:
    """Every block but the first example and the approval snippet (tested above)."""
    return [b for b in _blocks()[1:] if "approval_required" not in b]


def test_every_python_block_of_the_readme_is_run_here() -> None:
    assert len(_snippets()) + 2 == len(_blocks()) and len(_snippets()) >= 4


@pytest.mark.parametrize("number", range(len(_snippets())))
def test_readme_snippet_runs_offline(number: int, tmp_path: Path) -> None:
    snippet = _snippets()[number]
    replies = next((r for marker, r in _SCRIPTS.items() if marker in snippet), '["hi", "ok"]')
    body = "\n".join("    " + line for line in snippet.splitlines())
    script = tmp_path / "snippet.py"
    script.write_text(_PRELUDE.replace("REPLIES", replies).replace("{body}", body), "utf-8")
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, snippet + done.stderr
    assert "Unknown tool" not in done.stdout, snippet + done.stdout
    if "ags.Skill(" in snippet:
        assert "(the text of report.pdf)" in done.stdout
        assert "(the text of appendix.pdf)" in done.stdout
