"""Whole sessions over the real OpenAI SDK against a local server that misbehaves on purpose.

Local OpenAI-compatible servers repeat tool-call ids (``call_1`` every turn) or send none, cut
streams, answer a stream request with a plain body, end a stream without its finish reason, or
stop at the output limit. None of that may leave a session stuck or store a broken reply as a
finished answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply
from vendor_replies import CHAT_FULL, chat_chunk

import agentsession as ags
from agentsession.log import AssistantEntry, ProviderFailed


@ags.tool
def look(what: str) -> str:
    """Look at something."""
    return f"saw {what}"


def call_stream(call_id: str | None, name: str = "look", args: str = '{"what":"x"}') -> list[str]:
    call: dict[str, Any] = {"index": 0, "type": "function", "function": {"name": name}}
    if call_id is not None:
        call["id"] = call_id
    return [
        chat_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": args}}]}),
        chat_chunk({}, finish="tool_calls"),
        "data: [DONE]\n\n",
    ]


def text_stream(text: str, finish: str = "stop") -> list[str]:
    return [
        chat_chunk({"role": "assistant", "content": text}),
        chat_chunk({}, finish=finish),
        "data: [DONE]\n\n",
    ]


async def close(runtime: ags.Runtime) -> None:
    model = runtime.model
    assert isinstance(model, ags.providers.OpenAIChatModel)
    await model.aclose()
    await runtime.close()


def runtime_for(server: LocalServer, tmp_path: Path, **config: Any) -> ags.Runtime:
    model = ags.get_model(f"openai-compatible:{server.url}/v1#local-model")
    return ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        tools=[look],
        config=ags.Config(retry_base_delay=0, titles=False, **config),
    )


async def test_repeated_and_missing_call_ids_never_break_a_later_turn(
    server: LocalServer, tmp_path: Path
) -> None:
    runtime = runtime_for(server, tmp_path)
    try:
        session = await runtime.create_session()
        for turn in range(3):
            server.reply(
                Reply(sse=call_stream("call_1")),  # the same id every turn
                Reply(sse=call_stream(None)),  # no id at all
                Reply(sse=text_stream(f"answer {turn}")),
            )
            assert (await session.prompt(f"turn {turn}")).text == f"answer {turn}"
        ids = [
            c.id
            for r in await session.log()
            if isinstance(r.entry, AssistantEntry)
            for c in r.entry.tool_calls
        ]
        assert len(ids) == 6 and len(set(ids)) == 6 and all(ids)
        # Every request the server got pairs each result with its own call.
        for captured in server.requests:
            messages = captured.json["messages"]
            calls = [c["id"] for m in messages for c in m.get("tool_calls") or []]
            results = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
            assert len(calls) == len(set(calls)) and sorted(calls) == sorted(results)
    finally:
        await close(runtime)


@pytest.mark.parametrize(
    "broken",
    [
        Reply(body=CHAT_FULL),  # a complete body where a stream was asked for
        Reply(sse=[chat_chunk({"role": "assistant", "content": "Half an ans"})]),  # no end
    ],
    ids=["not-a-stream", "no-terminator"],
)
async def test_a_broken_reply_is_an_error_never_a_finished_turn(
    broken: Reply, server: LocalServer, tmp_path: Path
) -> None:
    runtime = runtime_for(server, tmp_path, provider_retries=0)
    try:
        session = await runtime.create_session()
        server.reply(broken)
        with pytest.raises(ags.ProviderError):
            await session.prompt("hello")
        entries = [r.entry for r in await session.log()]
        assert not any(isinstance(e, AssistantEntry) for e in entries)  # nothing partial stored
        assert isinstance(entries[-1], ProviderFailed)
        server.reply(Reply(sse=text_stream("a whole answer")))
        assert (await session.retry()).text == "a whole answer"
        assert server.requests[0].raw == server.requests[1].raw  # the same bytes again
    finally:
        await close(runtime)


async def test_a_stream_cut_mid_way_is_retried_and_its_text_discarded(
    server: LocalServer, tmp_path: Path
) -> None:
    runtime = runtime_for(server, tmp_path, provider_retries=1)
    try:
        session = await runtime.create_session()
        cut = [chat_chunk({"role": "assistant", "content": "Partial"})]
        server.reply(Reply(sse=cut, cut=True), Reply(sse=text_stream("Complete")))
        events = [e async for e in session.stream("hello")]
        retries = [e for e in events if isinstance(e, ags.ProviderRetry)]
        assert len(retries) == 1 and retries[0].discarded == len("Partial")
        finished = events[-1]
        assert isinstance(finished, ags.TurnFinished) and finished.result.text == "Complete"
        stored = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        assert [e.content for e in stored] == ["Complete"]
    finally:
        await close(runtime)


async def test_a_reply_cut_by_the_output_limit_says_so(server: LocalServer, tmp_path: Path) -> None:
    runtime = runtime_for(server, tmp_path)
    try:
        session = await runtime.create_session()
        server.reply(Reply(sse=text_stream("The answer is", finish="length")))
        events = [e async for e in session.stream("hello")]
        finished = events[-1]
        assert isinstance(finished, ags.TurnFinished)
        assert finished.result.stop_reason == "max_tokens"
        assert finished.result.text == "The answer is"
        server.reply(Reply(sse=text_stream("next")))
        assert (await session.prompt("go on")).stop_reason == "end_turn"
    finally:
        await close(runtime)


async def test_a_rate_limit_waits_as_long_as_the_server_asks(
    server: LocalServer, tmp_path: Path
) -> None:
    runtime = runtime_for(server, tmp_path, provider_retries=1)
    try:
        session = await runtime.create_session()
        limited = Reply(429, {"error": {"message": "slow down"}}, headers={"retry-after": "0.2"})
        server.reply(limited, Reply(sse=text_stream("ok")))
        events = [e async for e in session.stream("hello")]
        (retry,) = [e for e in events if isinstance(e, ags.ProviderRetry)]
        assert retry.delay == pytest.approx(0.2, abs=0.05)
        assert json.loads(server.requests[0].raw) == json.loads(server.requests[1].raw)
    finally:
        await close(runtime)
