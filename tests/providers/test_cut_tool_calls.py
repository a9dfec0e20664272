"""A tool call the model did not finish never runs, on any wire format.

Replies come through the real SDKs from a loopback server: a reply stopped by the output limit
while a call's arguments were still arriving, arguments that are not a JSON object, and
streams cut at any byte. The call is recorded with an error result that says why it did not run;
a tool that runs always gets exactly the arguments the model completed.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from provider_fakes import LocalServer, Reply, serve, sse
from vendor_replies import KEYS, anthropic_text_stream, chat_chunk, gem_chunk

import agentsession as ags
from agentsession.log import AssistantEntry, ToolResultEntry

ARGS: dict[str, Any] = {"items": [1, 2, 3, 4], "count": 1500, "note": "all of it"}
ARGS_JSON = json.dumps(ARGS)
FORMATS = ["openai-chat", "openai-responses", "anthropic", "gemini"]


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


def anthropic_call(partial: str, stop: str) -> list[str]:
    """An Anthropic stream whose one ``tool_use`` block carries ``partial`` as its input JSON."""
    start: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    block = {"type": "tool_use", "id": "toolu_1", "name": "probe", "input": {}}
    pieces = [partial[i : i + 7] for i in range(0, len(partial), 7)]
    return [
        sse({"type": "message_start", "message": start}, "message_start"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": block},
            "content_block_start",
        ),
        *(
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
                "content_block_delta",
            )
            for piece in pieces
        ),
        *(
            [sse({"type": "content_block_stop", "index": 0}, "content_block_stop")]
            if stop != "max_tokens"
            else []
        ),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def chat_call(arguments: str, finish: str) -> list[str]:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "probe"}}
    return [
        chat_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
        chat_chunk({}, finish=finish),
        "data: [DONE]\n\n",
    ]


def responses_call(arguments: str, cut: bool) -> list[str]:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "probe",
        "arguments": arguments,
        "status": "incomplete" if cut else "completed",
    }
    response: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1",
        "status": "incomplete" if cut else "completed",
        "output": [item],
        "usage": {
            "input_tokens": 10,
            "output_tokens": 20,
            "total_tokens": 30,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    if cut:
        response["incomplete_details"] = {"reason": "max_output_tokens"}
    end = "response.incomplete" if cut else "response.completed"
    created = {**response, "status": "in_progress", "output": []}
    created.pop("incomplete_details", None)
    return [
        sse(
            {"type": "response.created", "sequence_number": 0, "response": created},
            "response.created",
        ),
        sse(
            {
                "type": "response.output_item.done",
                "output_index": 0,
                "sequence_number": 1,
                "item": item,
            },
            "response.output_item.done",
        ),
        sse({"type": end, "sequence_number": 2, "response": response}, end),
    ]


def gemini_call(arguments: dict[str, Any], finish: str) -> list[str]:
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 20, "totalTokenCount": 30}
    call = {"functionCall": {"id": "call_1", "name": "probe", "args": arguments}}
    return [gem_chunk([call], usage, finish)]


def text_reply(fmt: str, text: str) -> list[str]:
    match fmt:
        case "openai-chat":
            return [
                chat_chunk({"role": "assistant", "content": text}),
                chat_chunk({}, finish="stop"),
                "data: [DONE]\n\n",
            ]
        case "openai-responses":
            message = {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
            response = {
                "id": "resp_2",
                "object": "response",
                "created_at": 1,
                "model": "gpt-4.1",
                "status": "completed",
                "output": [message],
            }
            return [
                sse(
                    {"type": "response.completed", "sequence_number": 0, "response": response},
                    "response.completed",
                )
            ]
        case "anthropic":
            return anthropic_text_stream(text, "msg_2")
        case _:
            return [gem_chunk([{"text": text}], None, "STOP")]


def model_for(fmt: str, server: LocalServer) -> Any:
    match fmt:
        case "openai-chat":
            return ags.get_model("openai-chat:gpt-4.1", base_url=server.url + "/v1")
        case "openai-responses":
            return ags.get_model("openai:gpt-4.1", base_url=server.url + "/v1")
        case "anthropic":
            return ags.get_model("anthropic:claude-opus-4-8", base_url=server.url)
        case _:
            return ags.get_model("gemini:gemini-2.5-pro", base_url=server.url)


class Probe:
    """A tool that records the arguments of every run."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

        @ags.tool
        def probe(items: list[int] | None = None, count: int = 0, note: str = "") -> str:
            """Probe."""
            self.runs.append({"items": items, "count": count, "note": note})
            return "probed"

        self.tool = probe


async def run_turn(
    fmt: str, server: LocalServer, store: ags.Store, replies: list[Reply], retries: int = 0
) -> tuple[Probe, list[ags.Event] | Exception, list[Any]]:
    probe = Probe()
    model = model_for(fmt, server)
    server.reply(*replies)
    runtime = ags.Runtime(
        store=store,
        model=model,
        tools=[probe.tool],
        config=ags.Config(retry_base_delay=0, provider_retries=retries, titles=False),
    )
    outcome: list[ags.Event] | Exception
    try:
        session = await runtime.create_session()
        try:
            outcome = [e async for e in session.stream("probe it")]
        except ags.ProviderError as exc:
            outcome = exc
        entries = [r.entry for r in await session.log()]
    finally:
        await model.aclose()
        await runtime.close()
    return probe, outcome, entries


def finished(outcome: list[ags.Event] | Exception) -> ags.PromptResult:
    assert isinstance(outcome, list)
    last = outcome[-1]
    assert isinstance(last, ags.TurnFinished)
    return last.result


def results(entries: list[Any]) -> list[ToolResultEntry]:
    return [e for e in entries if isinstance(e, ToolResultEntry)]


def cut_reply(fmt: str, fraction: int) -> list[str]:
    """The probe call stopped by the output limit after ``fraction`` characters of its JSON."""
    partial = ARGS_JSON[:fraction]
    match fmt:
        case "openai-chat":
            return chat_call(partial, "length")
        case "openai-responses":
            return responses_call(partial, cut=True)
        case "anthropic":
            return anthropic_call(partial, "max_tokens")
        case _:
            keys = list(ARGS)[: max(0, min(len(ARGS) - 1, fraction // 20))]
            return gemini_call({k: ARGS[k] for k in keys}, "MAX_TOKENS")


# --- item 1: the output limit cut the call; item 8: the message says so --------------------


async def test_anthropic_tool_call_cut_by_max_tokens_never_runs(
    server: LocalServer, tmp_path: Path
) -> None:
    # '{"items": [1, 2, 3, 4], "count": 15' -- the SDK's partial parser would make count 15
    partial = ARGS_JSON[: ARGS_JSON.index("1500") + 2]
    probe, outcome, entries = await run_turn(
        "anthropic",
        server,
        ags.SQLiteStore(tmp_path / "s.db"),
        [Reply(sse=anthropic_call(partial, "max_tokens"))],
    )
    result = finished(outcome)
    assert probe.runs == []
    assert result.stop_reason == "max_tokens"
    (stored,) = results(entries)
    assert stored.is_error and "output limit" in stored.content and "not run" in stored.content
    (assistant,) = [e for e in entries if isinstance(e, AssistantEntry)]
    assert assistant.tool_calls[0].arguments == {}  # the fragment's guess is not kept
    assert len(server.requests) == 1  # the turn ends: the same request could be cut again


@pytest.mark.parametrize("raw", ["[1, 2]", "null", '"text"'])
async def test_anthropic_input_that_is_not_an_object_never_runs(
    raw: str, server: LocalServer, tmp_path: Path
) -> None:
    probe, outcome, entries = await run_turn(
        "anthropic",
        server,
        ags.SQLiteStore(tmp_path / "s.db"),
        [Reply(sse=anthropic_call(raw, "tool_use")), Reply(sse=text_reply("anthropic", "ok"))],
    )
    assert finished(outcome).text == "ok"  # the model read the error and answered
    assert probe.runs == []
    (stored,) = results(entries)
    assert stored.is_error and "not a JSON object" in stored.content
    sent = server.requests[1].json["messages"][-1]["content"][0]
    assert sent["type"] == "tool_result" and sent["is_error"] is True


async def test_openai_chat_call_cut_by_length_says_the_output_limit_cut_it(
    server: LocalServer, tmp_path: Path
) -> None:
    probe, outcome, entries = await run_turn(
        "openai-chat",
        server,
        ags.SQLiteStore(tmp_path / "s.db"),
        [Reply(sse=chat_call(ARGS_JSON[:30], "length"))],
    )
    result = finished(outcome)  # not a "malformed tool-call arguments" provider error
    assert result.stop_reason == "max_tokens" and probe.runs == []
    (stored,) = results(entries)
    assert "output limit" in stored.content and "malformed" not in stored.content
    assert "again" in stored.content  # the same request may be cut the same way


async def test_malformed_chat_arguments_are_an_error_result_not_a_failed_turn(
    server: LocalServer, tmp_path: Path
) -> None:
    probe, outcome, entries = await run_turn(
        "openai-chat",
        server,
        ags.SQLiteStore(tmp_path / "s.db"),
        [
            Reply(sse=chat_call("{not json", "tool_calls")),
            Reply(sse=text_reply("openai-chat", "ok")),
        ],
    )
    assert finished(outcome).text == "ok" and probe.runs == []
    (stored,) = results(entries)
    assert stored.is_error and "not valid JSON" in stored.content


# --- the property: no tool runs with arguments the model did not complete --------------------


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    fmt=st.sampled_from(FORMATS),
    mode=st.sampled_from(["limit", "drop"]),
    offset=st.integers(min_value=0, max_value=10_000),
)
# The edges every run tries: nothing sent at all, and (drop) everything but the last byte.
@example(fmt="openai-chat", mode="drop", offset=0)
@example(fmt="anthropic", mode="drop", offset=0)
@example(fmt="openai-chat", mode="drop", offset=-1)
@example(fmt="openai-responses", mode="limit", offset=0)
def test_no_tool_runs_with_arguments_the_model_did_not_complete(
    fmt: str, mode: str, offset: int
) -> None:
    async def main() -> tuple[Probe, list[ags.Event] | Exception, list[Any]]:
        for server in serve():
            if mode == "limit":
                replies = [Reply(sse=cut_reply(fmt, offset % (len(ARGS_JSON) + 1)))]
            else:
                # the connection drops at a byte of the stream, before its last (a drop after
                # the whole reply is no drop for a client that stops reading at its end marker);
                # the retry gets the whole reply
                whole = "".join(_whole_call(fmt))
                replies = [
                    Reply(sse=[whole[: offset % len(whole)]], cut=True),
                    Reply(sse=_whole_call(fmt)),
                ]
            replies.append(Reply(sse=text_reply(fmt, "done")))
            return await run_turn(fmt, server, ags.MemoryStore(), replies, retries=1)
        raise AssertionError("unreachable")

    probe, outcome, entries = asyncio.run(main())
    for ran in probe.runs:
        assert ran == ARGS
    if mode == "limit":
        assert probe.runs == []
        assert finished(outcome).stop_reason == "max_tokens"
        assert all(r.is_error and "output limit" in r.content for r in results(entries))
    else:
        assert probe.runs == [ARGS]  # once, with exactly what the model completed
        assert finished(outcome).text == "done"


def _whole_call(fmt: str) -> list[str]:
    match fmt:
        case "openai-chat":
            return chat_call(ARGS_JSON, "tool_calls")
        case "openai-responses":
            return responses_call(ARGS_JSON, cut=False)
        case "anthropic":
            return anthropic_call(ARGS_JSON, "tool_use")
        case _:
            return gemini_call(ARGS, "STOP")


# --- the property: cut JSON never runs, whatever the stop reason says --------------------------

STOPS: dict[str, list[str]] = {
    "openai-chat": ["tool_calls", "stop", "length", "content_filter", "function_call", "mystery"],
    "openai-responses": ["completed", "max_output_tokens", "content_filter", "mystery"],
    "anthropic": [
        "tool_use",
        "end_turn",
        "refusal",
        "pause_turn",
        "max_tokens",
        "stop_sequence",
        "model_context_window_exceeded",
        "mystery",
    ],
    "gemini": ["STOP", "MAX_TOKENS", "SAFETY", "OTHER", "MYSTERY"],
}


def responses_stopped(arguments: str, stop: str) -> list[str]:
    """``responses_call`` ending ``completed``, or ``incomplete`` for the reason ``stop``."""
    events = responses_call(arguments, cut=stop != "completed")
    if stop in ("completed", "max_output_tokens"):
        return events
    last = json.loads(events[-1].split("data: ", 1)[1])
    last["response"]["incomplete_details"] = {"reason": stop}
    return [*events[:-1], sse(last, last["type"])]


def cut_with_stop(fmt: str, offset: int, stop: str) -> list[str]:
    """The probe call's JSON cut after ``offset`` bytes, the reply ended with ``stop``."""
    partial = ARGS_JSON[:offset]
    match fmt:
        case "openai-chat":
            return chat_call(partial, stop)
        case "openai-responses":
            return responses_stopped(partial, stop)
        case "anthropic":
            return anthropic_call(partial, stop)
        case _:
            # Gemini sends arguments as an object inside the chunk's JSON: that JSON is cut
            chunk = gemini_call(ARGS, stop)[0].removesuffix("\r\n\r\n")
            cut = len("data: ") + offset % (len(chunk) - len("data: "))
            return [chunk[:cut] + "\r\n\r\n"]


@settings(
    max_examples=24,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fmt=st.sampled_from(FORMATS), offset=st.integers(min_value=1), data=st.data())
@example(fmt="anthropic", offset=ARGS_JSON.index("1500") + 3, data=None)  # count 150
@example(fmt="anthropic", offset=ARGS_JSON.index("3, 4"), data=None)  # a list cut short
def test_cut_json_never_runs_whatever_the_stop_reason(
    fmt: str, offset: int, data: st.DataObject | None
) -> None:
    offset = 1 + (offset - 1) % (len(ARGS_JSON) - 1)  # from the first byte to all but the last
    stops = STOPS[fmt]
    chosen = stops if data is None else [data.draw(st.sampled_from(stops), label="stop")]
    for stop in chosen:

        async def main(stop: str = stop) -> tuple[Probe, list[ags.Event] | Exception, list[Any]]:
            for server in serve():
                replies = [
                    Reply(sse=cut_with_stop(fmt, offset, stop)),
                    Reply(sse=text_reply(fmt, "done")),
                ]
                return await run_turn(fmt, server, ags.MemoryStore(), replies)
            raise AssertionError("unreachable")

        probe, outcome, entries = asyncio.run(main())
        assert probe.runs == [], (stop, offset)
        if isinstance(outcome, list):
            assert isinstance(outcome[-1], ags.TurnFinished)
            refused = results(entries)
            assert refused and all(r.is_error and "not run" in r.content for r in refused)


ABNORMAL = {
    "openai-chat": ["length", "content_filter", "mystery"],
    "openai-responses": ["max_output_tokens", "content_filter", "mystery"],
    "anthropic": ["refusal", "pause_turn", "max_tokens", "mystery"],
}


@pytest.mark.parametrize(
    ("fmt", "stop"), [(fmt, stop) for fmt, stops in ABNORMAL.items() for stop in stops]
)
async def test_no_argument_text_in_a_reply_that_did_not_end_normally_never_runs(
    fmt: str, stop: str, server: LocalServer
) -> None:
    # Nothing of the JSON arrived: a call without arguments only when the reply ended normally.
    probe, _, entries = await run_turn(
        fmt,
        server,
        ags.MemoryStore(),
        [Reply(sse=cut_with_stop(fmt, 0, stop)), Reply(sse=text_reply(fmt, "done"))],
    )
    assert probe.runs == []
    assert all(r.is_error and "not run" in r.content for r in results(entries))
    assert results(entries)


async def test_an_anthropic_tool_block_that_never_closed_never_runs(server: LocalServer) -> None:
    events = anthropic_call(ARGS_JSON, "tool_use")
    unclosed = [e for e in events if "content_block_stop" not in e]
    probe, _, entries = await run_turn(
        "anthropic",
        server,
        ags.MemoryStore(),
        [Reply(sse=unclosed), Reply(sse=text_reply("anthropic", "done"))],
    )
    assert probe.runs == []
    (stored,) = results(entries)
    assert "never closed" in stored.content
