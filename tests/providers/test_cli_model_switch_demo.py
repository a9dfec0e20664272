"""``/model scripted:demo`` in a chat that began with a provider's model: the demo answers
with what the request offers — the session keeps its own tools, and it asks for none it lacks.
"""

from __future__ import annotations

from pathlib import Path

from provider_fakes import LocalServer
from tests.cli_inprocess import cli_here


def test_switching_a_chat_to_the_demo_model_calls_no_unknown_tool(
    server: LocalServer, tmp_path: Path
) -> None:
    config = tmp_path / ".config" / "agentsession" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[providers.local]\nbase_url = "{server.url}/v1"\n', encoding="utf-8")
    db = tmp_path / "s.db"
    chat = cli_here(
        tmp_path,
        "--db",
        str(db),
        "--model",
        "local:m",
        "chat",
        stdin="/model scripted:demo\ncount my four words\n",
    )
    assert chat.code == 0, chat.err
    assert "Unknown tool" not in chat.out + chat.err
    assert "4 words" in chat.out
    assert server.requests == []  # the provider's model was never asked
