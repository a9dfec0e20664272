"""A whole session over a real SDK client pointed at a loopback server.

A provider that times out: the retries inside the step resend the same bytes, the admitted
context stays durable, and ``session.retry()`` later sends exactly those bytes again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply

import agentsession as ags
from agentsession.log import Dispatch, ProviderFailed


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
            }
        ],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 3,
            "total_tokens": 123,
            "prompt_tokens_details": {"cached_tokens": 100},
        },
    }


async def test_timeout_keeps_admitted_context_for_retry(
    server: LocalServer, tmp_path: Path
) -> None:
    model = ags.get_model(
        "openai-chat:gpt-4.1", base_url=server.url, api_key="test", timeout=0.3, streaming=False
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(provider_retries=1, retry_base_delay=0),
    )
    try:
        session = await runtime.create_session()
        slow = Reply(body=completion("too late"), delay=1.0)
        server.reply(slow, slow)
        with pytest.raises(ags.TransientProviderError):
            await session.prompt("hello")
        assert len(server.requests) == 2
        assert server.requests[0].raw == server.requests[1].raw
        log = [r.entry for r in await session.log()]
        assert [e.kind for e in log] == [
            "user",
            "epoch",
            "system_prompt_checkpoint",
            "dispatch",
            "provider_failed",
        ]
        assert isinstance(log[-1], ProviderFailed)

        server.reply(Reply(body=completion("on time")))
        result = await session.retry()
        assert result.text == "on time"
        assert server.requests[2].raw == server.requests[0].raw
        assistant = (await session.log())[-1].entry
        assert assistant.kind == "assistant"
        assert assistant.usage.input_tokens == 120
        assert assistant.usage.cached_input_tokens == 100
        digests = [r.entry.digest for r in await session.log() if isinstance(r.entry, Dispatch)]
        assert len(set(digests)) == 1
    finally:
        await runtime.close()
        await model.aclose()  # type: ignore[attr-defined]
