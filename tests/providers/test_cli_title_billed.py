"""``agentsession run`` waits for the title its first turn asks a model for, and records it: the
call the provider bills is in ``cost``, under the session's own model (one row, not two).
"""

from __future__ import annotations

import json
from pathlib import Path

from provider_fakes import LocalServer, Reply
from tests.cli_inprocess import cli_here
from vendor_replies import chat_chunk


def _text(text: str, prompt_tokens: int) -> list[str]:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": 0}
    return [
        chat_chunk({"role": "assistant", "content": text}),
        chat_chunk({}, finish="stop"),
        chat_chunk(None, usage=usage),  # the provider's model name, "gpt-4.1", rides along
        "data: [DONE]\n\n",
    ]


def test_run_records_the_title_call_it_makes(server: LocalServer, tmp_path: Path) -> None:
    config = tmp_path / ".config" / "agentsession" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[providers.local]\nbase_url = "{server.url}/v1"\n\n'
        '[prices."local:m"]\ninput = 1.0\ncached_input = 0.1\noutput = 2.0\n',
        encoding="utf-8",
    )
    server.reply(Reply(sse=_text("The answer.", 200)), Reply(sse=_text("A short title", 90)))
    db = tmp_path / "s.db"
    done = cli_here(tmp_path, "--db", str(db), "--model", "local:m", "run", "a question")
    assert done.code == 0, done.err
    assert "The answer." in done.out
    assert len(server.requests) == 2  # the turn and the title
    listed = cli_here(tmp_path, "--db", str(db), "--json", "sessions")
    assert listed.code == 0, listed.err
    (row,) = [json.loads(line) for line in listed.out.splitlines()]
    assert row["title"] == "A short title"
    cost = cli_here(tmp_path, "--db", str(db), "cost", row["id"], "--json")
    assert cost.code == 0, cost.err
    (summary,) = [json.loads(line) for line in cost.out.splitlines()]
    assert summary["requests"] == 2 and summary["estimated"] == 0
    assert list(summary["by_model"]) == ["local:m"]  # the title's call too, in one row
    assert summary["by_model"]["local:m"]["input_tokens"] == 290
    assert summary["total_usd"] > 0
