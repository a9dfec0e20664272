"""The examples at the end of every ``--help`` of the command line.

Kept apart from the parser so the parser reads as the list of options, and so a test can check
that every command has examples.
"""

from __future__ import annotations

__all__ = ["EXAMPLES", "examples"]

EXAMPLES: dict[str | None, tuple[str, ...]] = {
    None: (
        "agentsession                                  # chat (on a terminal)",
        'agentsession run "what does this repo do?"',
        'git diff | agentsession run "write a commit message"',
        "agentsession -c chat                          # continue this folder's last session",
        "agentsession -m local:qwen3 run hi            # a provider of the config file",
        "agentsession sessions; agentsession show 3f2a9c1d",
        "exit codes: 0 ok, 1 failure, 2 usage, 130 interrupted (see docs/cli.md)",
    ),
    "run": (
        'agentsession run "explain this error"',
        'cat notes.md | agentsession run "summarise:"   # prompt, blank line, the notes',
        "agentsession run - < prompt.txt                # standard input is the prompt",
        'agentsession run -c "and now the tests"        # continue this folder\'s last session',
        'agentsession run --resume 3f2a9c1d "go on"',
    ),
    "chat": (
        "agentsession chat",
        "agentsession chat -c                           # show the last turns, then go on",
        "agentsession chat --resume                     # pick a session from a list",
        'agentsession chat -m anthropic:claude-sonnet-5-5 -s "Be terse."',
    ),
    "retry": ("agentsession retry", "agentsession retry 3f2a9c1d"),
    "sessions": ("agentsession sessions", "agentsession sessions --json | jq .id"),
    "show": ("agentsession show 3f2a9c1d", "agentsession show 3f2a --json"),
    "info": ("agentsession info", "agentsession info --json"),
    "models": ("agentsession models", "agentsession models --json"),
    "context": ("agentsession context 3f2a9c1d", "agentsession context 3f2a9c1d --step 2 --full"),
    "request": (
        "agentsession request 3f2a9c1d",
        "agentsession request 3f2a9c1d --step 1 --format anthropic-messages",
    ),
    "report": ("agentsession report 3f2a9c1d -o report.html", "agentsession report --all"),
    "skills": ("agentsession skills", "agentsession skills --skills-dir ~/my-skills"),
    "export": ("agentsession export 3f2a9c1d -o s.jsonl", "agentsession export 3f2a > s.jsonl"),
    "import": ("agentsession import s.jsonl", "agentsession import --copy - < s.jsonl"),
    "delete": ("agentsession delete 3f2a9c1d", "agentsession delete -y 3f2a9c1d"),
    "rename": ("agentsession rename 3f2a9c1d release notes draft",),
    "fork": ("agentsession fork 3f2a9c1d", "agentsession fork 3f2a9c1d --at 12"),
}


def examples(command: str | None) -> str:
    """The ``examples:`` block of ``command``'s help (``None``: the top-level help)."""
    lines = EXAMPLES.get(command, ())
    return "examples:\n" + "\n".join(f"  {line}" for line in lines) if lines else ""
