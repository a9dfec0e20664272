"""A reply holding text that is not valid Unicode never bricks a session, on any wire format.

A lone UTF-16 surrogate (half an emoji's escape pair), or a pair a proxy split between two
stream deltas, in a reply's text, a tool call's arguments or its name comes through the real
SDKs from a loopback server. It is stored as U+FFFD (a split pair joined), counted on the entry;
the next prompt goes out and ``agentsession show`` prints. A log written before replies were
repaired still lowers and shows: repaired on the way out, never rewritten.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from provider_fakes import LocalServer, Reply, serve, sse
from test_cut_tool_calls import model_for, text_reply
from tests.cli_inprocess import run_cli
from vendor_replies import KEYS, chat_chunk, gem_chunk

import agentsession as ags
from agentsession.hygiene import SurrogateJoiner, has_surrogates, repaired, replace_surrogates
from agentsession.log import AssistantEntry
from agentsession.request import AssistantMessage, Request, ToolCall, UserMessage

FORMATS = ["openai-chat", "openai-responses", "anthropic", "gemini"]
TEXT_BLOCK = {"type": "text", "text": ""}
HIGH, LOW, PAIR = "\ud83d", "\ude00", "\U0001f600"


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


@dataclass(frozen=True)
class Damaged:
    """A string with a lone half or a split pair at ``at``; ``pieces`` as deltas carry it."""

    base: str
    at: int
    how: str  # "high" | "low" | "split" | "none"

    @property
    def pieces(self) -> list[str]:
        head, tail = self.base[: self.at], self.base[self.at :]
        match self.how:
            case "high":
                return [head + HIGH, tail]
            case "low":
                return [head, LOW + tail]
            case "none":
                return [head, tail]
            case _:
                return [head + HIGH, LOW + tail]

    @property
    def whole(self) -> str:
        return "".join(self.pieces)

    @property
    def stored(self) -> str:
        """What the log must hold: a split pair joined, a lone half as U+FFFD."""
        return replace_surrogates(self.whole)[0]

    @property
    def lone(self) -> int:
        return 0 if self.how == "split" else 1


def _json_pieces(note: Damaged) -> list[str]:
    """The arguments ``{"note": …}`` as JSON text, cut where the damaged string is cut."""
    first, second = note.pieces
    return ['{"note": "' + first, second + '"}']


def chat_reply(text: Damaged, name: Damaged, note: Damaged) -> list[str]:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name.pieces[0]}}
    return [
        chat_chunk({"role": "assistant", "content": text.pieces[0]}),
        chat_chunk({"content": text.pieces[1]}),
        chat_chunk({"tool_calls": [call]}),
        chat_chunk({"tool_calls": [{"index": 0, "function": {"name": name.pieces[1]}}]}),
        *(
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]})
            for piece in _json_pieces(note)
        ),
        chat_chunk({}, finish="tool_calls"),
        "data: [DONE]\n\n",
    ]


def responses_reply(text: Damaged, name: Damaged, note: Damaged) -> list[str]:
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text.whole, "annotations": []}],
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": name.whole,
        "arguments": "".join(_json_pieces(note)),
        "status": "completed",
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1",
        "status": "completed",
        "output": [message, call],
    }
    deltas = [
        sse(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
                "logprobs": [],
                "sequence_number": n + 1,
            },
            "response.output_text.delta",
        )
        for n, piece in enumerate(text.pieces)
    ]
    return [
        *deltas,
        sse(
            {"type": "response.completed", "sequence_number": 9, "response": response},
            "response.completed",
        ),
    ]


def anthropic_reply(text: Damaged, name: Damaged, note: Damaged) -> list[str]:
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

    def delta(index: int, body: dict[str, Any]) -> str:
        return sse(
            {"type": "content_block_delta", "index": index, "delta": body}, "content_block_delta"
        )

    tool = {"type": "tool_use", "id": "toolu_1", "name": name.whole, "input": {}}
    return [
        sse({"type": "message_start", "message": start}, "message_start"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": TEXT_BLOCK},
            "content_block_start",
        ),
        *(delta(0, {"type": "text_delta", "text": piece}) for piece in text.pieces),
        sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        sse(
            {"type": "content_block_start", "index": 1, "content_block": tool},
            "content_block_start",
        ),
        *(
            delta(1, {"type": "input_json_delta", "partial_json": piece})
            for piece in _json_pieces(note)
        ),
        sse({"type": "content_block_stop", "index": 1}, "content_block_stop"),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 20},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def gemini_reply(text: Damaged, name: Damaged, note: Damaged) -> list[str]:
    usage = {"promptTokenCount": 10, "candidatesTokenCount": 20, "totalTokenCount": 30}
    call = {"functionCall": {"id": "call_1", "name": name.whole, "args": {"note": note.whole}}}
    return [
        gem_chunk([{"text": text.pieces[0]}]),
        gem_chunk([{"text": text.pieces[1]}]),
        gem_chunk([call], usage, "STOP"),
    ]


REPLIES = {
    "openai-chat": chat_reply,
    "openai-responses": responses_reply,
    "anthropic": anthropic_reply,
    "gemini": gemini_reply,
}


@ags.tool
def probe(note: str) -> str:
    """Probe."""
    return f"probed {len(note)}"


def _surrogate_free(value: Any) -> bool:
    return not has_surrogates(json.dumps(value, ensure_ascii=False))


async def _session_with(
    fmt: str, server: LocalServer, db: Path, text: Damaged, name: Damaged, note: Damaged
) -> tuple[str, list[Any]]:
    model = model_for(fmt, server)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        tools=[probe],
        config=ags.Config(retry_base_delay=0, provider_retries=0, titles=False),
    )
    try:
        session = await runtime.create_session()
        server.reply(
            Reply(sse=REPLIES[fmt](text, name, note)),
            Reply(sse=text_reply(fmt, "done")),
            Reply(sse=text_reply(fmt, "still fine")),
        )
        shown = "".join(
            [e.text async for e in session.stream("probe it") if isinstance(e, ags.TextDelta)]
        )
        assert not has_surrogates(shown)
        assert (await session.prompt("and now?")).text == "still fine"
        entries = [r.entry for r in await session.log()]
        return session.id, entries
    finally:
        await model.aclose()
        await runtime.close()


DAMAGE = st.builds(
    Damaged,
    base=st.just("probe"),
    at=st.integers(min_value=0, max_value=5),
    how=st.sampled_from(["high", "low", "split"]),
)
CLEAN = Damaged("probe", 5, "none")


@settings(
    max_examples=16,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    fmt=st.sampled_from(FORMATS),
    where=st.sampled_from(["text", "name", "arguments"]),
    damage=DAMAGE,
)
@example(fmt="anthropic", where="arguments", damage=Damaged("probe", 2, "split"))
@example(fmt="openai-responses", where="text", damage=Damaged("probe", 0, "split"))
@example(fmt="openai-chat", where="name", damage=Damaged("probe", 5, "high"))
@example(fmt="gemini", where="arguments", damage=Damaged("probe", 3, "low"))
def test_a_surrogate_anywhere_in_a_reply_never_bricks_the_session(
    fmt: str, where: str, damage: Damaged
) -> None:
    text = damage if where == "text" else Damaged("Looking", 7, "none")
    name = damage if where == "name" else CLEAN
    note = damage if where == "arguments" else Damaged("all", 3, "none")
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "s.db"
        for server in serve():
            session_id, entries = asyncio.run(_session_with(fmt, server, db, text, name, note))
            # every request the server got after the damaged reply is valid Unicode
            for captured in server.requests:
                assert _surrogate_free(captured.json)
            answered = [e for e in entries if isinstance(e, AssistantEntry)]
            first = answered[0]
            assert first.content == text.stored
            (call,) = first.tool_calls
            assert call.name == name.stored
            assert call.arguments == {"note": note.stored}
            assert first.replaced_surrogates == damage.lone
            shown = run_cli(Path(folder), "--db", str(db), "show", session_id)
            assert shown.code == 0, shown.err
            assert "still fine" in shown.out


# --- a log written before this change ---------------------------------------------------------


def _plant_surrogates(db: Path) -> None:
    """Rewrite the stored reply as an older version stored it: with a lone surrogate."""
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT session_key, seq, data FROM entries").fetchall()
        for key, seq, data in rows:
            if '"answer one"' in data:
                connection.execute(
                    "UPDATE entries SET data = ?, version = 2 WHERE session_key = ? AND seq = ?",
                    (data.replace("answer one", "answer \\ud83d one"), key, seq),
                )


async def test_an_old_log_holding_a_lone_surrogate_still_lowers_and_shows(
    server: LocalServer, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    model = model_for("openai-chat", server)
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, config=ags.Config(titles=False))
    session = await runtime.create_session()
    server.reply(Reply(sse=text_reply("openai-chat", "answer one")))
    await session.prompt("first")
    await model.aclose()
    await runtime.close()
    _plant_surrogates(db)

    model = model_for("openai-chat", server)
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, config=ags.Config(titles=False))
    try:
        session = await runtime.open_session(session.id)
        stored = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        assert stored[0].content == "answer \ud83d one"  # loaded as it was written
        server.reply(Reply(sse=text_reply("openai-chat", "answer two")))
        assert (await session.prompt("second")).text == "answer two"
        sent = server.requests[-1].json["messages"]
        assert {"role": "assistant", "content": "answer \ufffd one"} in sent
        again = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        assert again[0].content == "answer \ud83d one"  # never rewritten in place
    finally:
        await model.aclose()
        await runtime.close()
    shown = run_cli(tmp_path, "--db", str(db), "show", session.id)
    assert shown.code == 0 and "answer \ufffd one" in shown.out
    as_json = run_cli(tmp_path, "--db", str(db), "--json", "show", session.id)
    assert as_json.code == 0 and "\\ud83d" in as_json.out  # lossless, and UTF-8 all the same
    report = run_cli(tmp_path, "--db", str(db), "report", session.id, "-o", str(tmp_path / "r"))
    assert report.code == 0, report.err


# --- the pieces -------------------------------------------------------------------------------


@given(st.text(alphabet=st.sampled_from(["a", "é", HIGH, LOW, PAIR]), max_size=12), st.data())
def test_joined_stream_pieces_equal_the_whole_text_repaired(text: str, data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=4)))
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    joiner = SurrogateJoiner()
    shown = [joiner.feed(p) for p in pieces] + [joiner.finish()]
    assert all(not has_surrogates(s) for s in shown)
    assert "".join(shown) == replace_surrogates(text)[0]


def test_repaired_keeps_a_clean_value_and_counts_each_lone_half() -> None:
    clean = AssistantMessage("hi", (ToolCall("t", {"a": [1, "b"]}, id="c"),))
    assert repaired(clean) == (clean, 0) and repaired(clean)[0] is clean
    dirty = AssistantMessage(
        "x" + HIGH, (ToolCall("t" + LOW, {"k" + HIGH: ["v" + HIGH + LOW, 2]}, id="c"),)
    )
    fixed, count = repaired(dirty)
    assert count == 3
    assert fixed.content == "x\ufffd"
    assert fixed.tool_calls[0].name == "t\ufffd"
    assert fixed.tool_calls[0].arguments == {"k\ufffd": ["v" + PAIR, 2]}


def test_lowering_repairs_a_request_holding_a_lone_surrogate() -> None:
    request = Request(
        (("core.agent", "be" + HIGH),),
        (UserMessage("hi"), AssistantMessage("yes" + LOW)),
    )
    for fmt in ("openai-chat", "openai-responses", "anthropic-messages", "gemini"):
        body = ags.lower(request, fmt)
        text = json.dumps(body, ensure_ascii=False)
        assert not has_surrogates(text) and text.count("\ufffd") == 2


def test_a_server_event_holding_a_lone_surrogate_is_sent_escaped() -> None:
    from agentsession.server.wire import sse_frame

    frame = sse_frame("entry", {"content": "answer " + HIGH + " one"}, 4)
    data = frame.decode("utf-8").split("data: ", 1)[1]
    assert json.loads(data)["content"] == "answer " + HIGH + " one"  # lossless


class _Reasoner:
    """A model whose reply carries replay data holding a lone surrogate."""

    name = "reasoner"
    profile = ags.providers.ModelProfile()

    async def stream(self, request: Request) -> Any:
        data = {"anthropic-messages": {"content": [{"type": "thinking", "thinking": HIGH}]}}
        message = AssistantMessage("fine" + LOW, provider="anthropic", provider_data=data)
        yield ags.providers.ModelDone(message)


async def test_replay_data_holding_a_lone_surrogate_is_dropped_not_altered() -> None:
    runtime = ags.Runtime(
        store=ags.MemoryStore(), model=_Reasoner(), config=ags.Config(titles=False)
    )
    try:
        session = await runtime.create_session()
        assert (await session.prompt("hi")).text == "fine\ufffd"
        (entry,) = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        assert entry.provider_data == {} and entry.replaced_surrogates == 2
    finally:
        await runtime.close()


async def test_a_failed_step_over_an_old_log_holding_a_surrogate_retries(
    server: LocalServer, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    config = ags.Config(titles=False, provider_retries=0)
    model = model_for("openai-chat", server)
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, config=config)
    session = await runtime.create_session()
    server.reply(Reply(sse=text_reply("openai-chat", "answer one")))
    await session.prompt("first")
    await model.aclose()
    await runtime.close()
    _plant_surrogates(db)

    model = model_for("openai-chat", server)
    runtime = ags.Runtime(store=ags.SQLiteStore(db), model=model, config=config)
    try:
        session = await runtime.open_session(session.id)
        server.reply(Reply(500, {"error": {"message": "busy"}}))
        with pytest.raises(ags.ProviderError):
            await session.prompt("second")
        server.reply(Reply(sse=text_reply("openai-chat", "answer two")))
        assert (await session.retry()).text == "answer two"  # the same request, proved
        assert server.requests[-1].raw == server.requests[-2].raw
    finally:
        await model.aclose()
        await runtime.close()
