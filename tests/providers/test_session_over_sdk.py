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
        await model.aclose()


def chunk(
    delta: dict[str, Any] | None, usage: dict[str, Any] | None = None, finish: str | None = None
) -> str:
    from provider_fakes import sse

    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return sse(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1",
            "choices": choices,
            "usage": usage,
        }
    )


async def test_streamed_turn_through_session_events(server: LocalServer, tmp_path: Path) -> None:
    @ags.tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    call = {"index": 0, "id": "call_a", "type": "function"}
    server.reply(
        Reply(
            sse=[
                chunk({"role": "assistant", "content": "Let me "}),
                chunk({"content": "look."}),
                chunk(
                    {"tool_calls": [{**call, "function": {"name": "read_file", "arguments": ""}}]}
                ),
                chunk(
                    {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"a.txt"}'}}]}
                ),
                chunk({}, finish="tool_calls"),
                chunk(None, usage),
                "data: [DONE]\n\n",
            ]
        ),
        Reply(
            sse=[
                chunk({"role": "assistant", "content": "It says "}),
                chunk({"content": "hello."}, finish="stop"),
                chunk(None, usage),
                "data: [DONE]\n\n",
            ]
        ),
    )
    model = ags.get_model("openai-chat:gpt-4.1", base_url=server.url, api_key="test")
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        tools=[read_file],
    )
    try:
        session = await runtime.create_session()
        events = [e async for e in session.stream("what is in a.txt?")]
        deltas = [e.text for e in events if isinstance(e, ags.TextDelta)]
        assert deltas == ["Let me ", "look.", "It says ", "hello."]
        started = [e for e in events if isinstance(e, ags.ToolCallStarted)]
        assert [(e.call.name, e.call.arguments, e.call.id) for e in started] == [
            ("read_file", {"path": "a.txt"}, "call_a")
        ]
        assert isinstance(events[-1], ags.TurnFinished)
        assert events[-1].result.text == "It says hello."
        assistant = session.messages[1]
        assert isinstance(assistant, ags.AssistantMessage)
        assert assistant.content == "Let me look." and assistant.tool_calls[0].id == "call_a"
        second = server.requests[1].json
        assert second["messages"][-1] == {
            "role": "tool",
            "tool_call_id": "call_a",
            "content": "contents of a.txt",
        }
        assert second["stream"] is True
    finally:
        await runtime.close()
        await model.aclose()
