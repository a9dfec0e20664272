"""Every script in examples/ runs, offline, and prints what its docs page says it prints.

Each script is run as a user runs it (``python examples/NAME.py``, in a fresh process, from a
folder of its own, with its own user folders) and its output is checked line by line against
patterns: the parts that depend on the clock or the machine (token counts, prices) are
patterns, the rest is literal. A new script needs an entry here, and a place on the docs site.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

EXPECTED: dict[str, list[str]] = {
    "first_session.py": [
        r"reply: Hello! How can I help\? \(end_turn\)",
        r"committed: admission, log entries \d+-\d+",
        r"committed: response, log entries \d+-\d+",
        r"reply: Paris\.",
        r"reopened with \['user', 'assistant', 'user', 'assistant'\]",
        r"reply: About 2\.1 million\.",
        r"sessions in the file: 1",
    ],
    "tools_and_approvals.py": [
        r"preset: workspace-write",
        r"reply: Three words\.",
        r"stopped: approval_required",
        r"asks: deploy\(\{'target': 'staging'\}\) because .*workspace-write.*",
        r"reply: Deployed to staging\. \| ran: \['staging'\]",
        r"reply: Production was not deployed: the user said no\. \| ran: \['staging'\]",
        r"tool result: Permission denied by preset 'read-only': save_note writes files.*",
        r"reply: I may not write under read-only\.",
    ],
    "skills.py": [
        r"skills: dice, release-notes",
        r"reply: ## 2\.1\.0 \(2026-12-06\)",
        r"saved with turn 0 -> \['release-notes'\]",
        r"the model got the skill in front of the message: True",
        r"reply: A 4\.",
        r"tools of the last request: \['load_skill', 'roll'\]",
        r"system sections: \[.*'core\.skills\.catalog', 'core\.skills\.loaded\.dice'\]",
        r'load_skill result: \{"contextChanged": .*',
    ],
    "context_component.py": [
        r"system prompt: CI: the build is passing\.",
        r"told mid-conversation: CI: the build is now failing\.",
        r"while unavailable: \[\]",
        r"after removal: This context no longer applies; disregard what it said before\.",
        r"  after 1 messages: plugin\.ci\.status = CI: the build is passing\.",
        r"  after 3 messages: plugin\.ci\.status = CI: the build is failing\.",
        r"  after 7 messages: plugin\.ci\.status = None",
    ],
    "inspection_and_cost.py": [
        r"turns: \['answered', 'answered', 'answered'\]",
        r"epochs: \[\(0, 'start'\)\]",
        r"request 1: \d+ tokens, 0 repeat the previous prefix, exact=True, cache: first",
        r"request 2: \d+ tokens, \d+ repeat the previous prefix, exact=True, cache: hit",
        r"request 3: \d+ tokens, \d+ repeat the previous prefix, exact=True, cache: hit",
        r"cost: 3 requests, \$0\.\d{6} \(\['example-model'\]\)",
        r"system sections: \['core\.agent', 'core\.date', 'core\.permissions'\]",
        r"anthropic body keys: \['max_tokens', 'messages', 'model', 'system'\]",
        r'its last message: \{"role": "user", "content": .*One more thing\..*',
    ],
    "server.py": [
        r"created: 201 over HTTP",
        r"  entry seq=0: user",
        r"  entry seq=1: epoch",
        r"  entry seq=2: system_prompt_checkpoint",
        r"  entry seq=3: dispatch",
        r"  entry seq=4: assistant",
        r"  finished: Hello over HTTP\.",
        r"waiting: restart \{'service': 'web'\}",
        r"resumed: Restarted web\.",
        r"sessions: \['over HTTP'\]",
    ],
    "stores.py": [
        r"exported 8 log entries",
        r"imported: True \['Pick a colour\.', 'Blue\.'\]",
        r"same bytes after the round trip: True",
        r"branch: \['Pick a colour\.', 'Blue\.', 'Not blue: another one\?'\]",
        r"branch reply: Red, then\.",
        r"stored: 4 messages, next seq 8",
        r"stored: 4 messages, next seq 8",
    ],
    "dbos_worker.py": [
        r"turn 1: Order 42 shipped on Tuesday\. \(end_turn, last seq \d+\)",
        r"enqueued over HTTP: 202",
        r"turn 2: You're welcome\. \(end_turn, last seq \d+\)",
        r"turn 3: approval_required, waiting \['refund-42'\]",
        r"turn 3 resumed: Order 42 is refunded\. \(end_turn\)",
        r"tool runs: \['42'\], refunds: \['42'\]",
        r"transcript: \['user', 'assistant', 'tool', 'assistant', 'user', 'assistant', 'user',"
        r" 'assistant', 'tool', 'assistant'\]",
    ],
}
# What a script needs beyond the package and its dependencies.
NEEDS = {"server.py": ("starlette", "httpx"), "dbos_worker.py": ("dbos", "starlette", "httpx")}


def test_every_script_has_its_expected_output() -> None:
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    assert scripts == sorted(EXPECTED)


def test_every_script_is_shown_on_the_docs_site() -> None:
    shown = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))
    for name in EXPECTED:
        assert f"<!-- show: examples/{name} -->" in shown, f"examples/{name} is on no page"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_example_runs_offline_and_prints_what_it_promises(name: str, tmp_path: Path) -> None:
    for module in NEEDS.get(name, ()):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"examples/{name} needs {module} (the server extra and httpx)")
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "PYTHONWARNINGS": "error",
    }
    # No provider may be reached: the keys a real model would read are not there.
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        env.pop(key, None)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    printed = done.stdout.splitlines()
    assert len(printed) == len(EXPECTED[name]), printed
    for line, pattern in zip(printed, EXPECTED[name], strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    assert not list(tmp_path.glob("*.db")), "an example left a database in the folder it ran in"
