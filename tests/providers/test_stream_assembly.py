"""Streams assembled as the vendor meant them, or refused with a clear error.

Chat Completions streams whose tool-call pieces carry no ``index`` (Gemini's OpenAI endpoint is
reported to send them) are assembled by call id and order, never merged into one call; a stream
mixing both forms is a ``ProviderError``. A Responses stream's text deltas must add up to the
final response's text.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply
from vendor_replies import KEYS, RESP_STREAM, VENDORS, chat_chunk, run

import agentsession as ags


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


def piece(
    call_id: str | None, name: str | None, args: str, index: int | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"arguments": args}}
    if name is not None:
        call["function"]["name"] = name
    if call_id is not None:
        call["id"] = call_id
    if index is not None:
        call["index"] = index
    return call


def chat_stream(*pieces: dict[str, Any]) -> list[str]:
    return [
        chat_chunk({"role": "assistant", "content": None}),
        *(chat_chunk({"tool_calls": [p]}) for p in pieces),
        chat_chunk({}, finish="tool_calls"),
        "data: [DONE]\n\n",
    ]


@pytest.mark.parametrize(
    "pieces",
    [
        # each call's pieces repeat its id
        [
            piece("call_a", "add", '{"a": 1,'),
            piece("call_b", "add", '{"a": 2,'),
            piece("call_a", None, ' "b": 3}'),
            piece("call_b", None, ' "b": 4}'),
        ],
        # the id and name come once, the argument pieces after them carry neither
        [
            piece("call_a", "add", ""),
            piece(None, None, '{"a": 1, "b": 3}'),
            piece("call_b", "add", ""),
            piece(None, None, '{"a": 2,'),
            piece(None, None, ' "b": 4}'),
        ],
    ],
    ids=["ids-repeated", "ids-once"],
)
async def test_chat_pieces_without_index_are_assembled_by_id_and_order(
    pieces: list[dict[str, Any]], server: LocalServer
) -> None:
    server.reply(Reply(sse=chat_stream(*pieces)))
    _, done = await run(VENDORS["openai-chat"].model(server))
    calls = [(c.id, c.name, c.arguments) for c in done.message.tool_calls]
    assert calls == [("call_a", "add", {"a": 1, "b": 3}), ("call_b", "add", {"a": 2, "b": 4})]
    assert done.unusable_calls == ()


async def test_chat_calls_without_index_or_id_start_a_new_call_by_name(
    server: LocalServer,
) -> None:
    server.reply(
        Reply(sse=chat_stream(piece(None, "add", '{"a": 1}'), piece(None, "add", '{"a": 2}')))
    )
    _, done = await run(VENDORS["openai-chat"].model(server))
    assert [(c.name, c.arguments) for c in done.message.tool_calls] == [
        ("add", {"a": 1}),
        ("add", {"a": 2}),
    ]
    assert len({c.id for c in done.message.tool_calls}) == 2


async def test_chat_pieces_mixing_index_and_none_are_a_provider_error(
    server: LocalServer,
) -> None:
    server.reply(
        Reply(sse=chat_stream(piece("call_a", "add", '{"a": 1}', 0), piece("call_b", "add", "{}")))
    )
    with pytest.raises(ags.ProviderError, match="with and without an index"):
        await run(VENDORS["openai-chat"].model(server))


def _with_delta(events: list[str], text: str) -> list[str]:
    """``RESP_STREAM`` with its second text delta replaced by ``text``."""
    out = []
    for event in events:
        head, _, data = event.partition("data: ")
        body = json.loads(data)
        if body["type"] == "response.output_text.delta" and body["delta"] == " there":
            body["delta"] = text
            event = f"{head}data: {json.dumps(body)}\n\n"
        out.append(event)
    return out


async def test_responses_streamed_text_that_is_not_the_final_text_is_an_error(
    server: LocalServer,
) -> None:
    server.reply(Reply(sse=_with_delta(RESP_STREAM, " thereabouts")))
    with pytest.raises(ags.ProviderError, match="streamed text"):
        await run(VENDORS["openai-responses"].model(server))


async def test_responses_streamed_text_matching_the_final_text_passes(
    server: LocalServer,
) -> None:
    server.reply(Reply(sse=RESP_STREAM))
    events, done = await run(VENDORS["openai-responses"].model(server))
    deltas = "".join(e.text for e in events if isinstance(e, ags.providers.ModelTextDelta))
    assert deltas == done.message.content == "Hello there"


async def test_responses_final_text_without_deltas_reaches_the_caller_once(
    server: LocalServer,
) -> None:
    quiet = [e for e in RESP_STREAM if "output_text.delta" not in e]
    server.reply(Reply(sse=quiet))
    events, done = await run(VENDORS["openai-responses"].model(server))
    deltas = [e.text for e in events if isinstance(e, ags.providers.ModelTextDelta)]
    assert deltas == ["Hello there"] == [done.message.content]
