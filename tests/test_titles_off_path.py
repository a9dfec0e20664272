"""The title call is never part of the turn: a hanging title endpoint holds back nothing.

A loopback OpenAI-compatible server answers the turn at once and lets the title request hang
until the test ends. The answer is delivered, the CLI exits with it, closing cancels the title
(the first words stand in), and a title the model does not make in time is given up.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags

from .cli_helpers import cli
from .loopback import running

TITLE_MARK = b"Name the conversation"


@dataclass
class HangingTitles:
    url: str = ""
    title_asked: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    @property
    def model(self) -> str:
        return f"openai-compatible:{self.url}/v1#local"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "local"}
    return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n".encode()


def _handler(state: HangingTitles) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            if TITLE_MARK in raw:
                state.title_asked.set()
                state.release.wait(120)  # hangs until the test is over
                self.close_connection = True
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for piece in (
                _chunk({"role": "assistant", "content": "The answer is 42."}),
                _chunk({}, "stop"),
                b"data: [DONE]\n\n",
            ):
                self.wfile.write(piece)
                self.wfile.flush()
            self.close_connection = True

    return Handler


@pytest.fixture
def hanging() -> Iterator[HangingTitles]:
    state = HangingTitles()
    with running(_handler(state)) as url:
        state.url = url
        try:
            yield state
        finally:
            state.release.set()


async def test_a_hanging_title_endpoint_never_holds_back_the_answer(
    hanging: HangingTitles, tmp_path: Path
) -> None:
    store = ags.SQLiteStore(tmp_path / "s.db")
    runtime = ags.Runtime(store=store, model=ags.get_model(hanging.model))
    session = await runtime.create_session()
    events = [e async for e in session.stream("What is the answer to everything?")]
    finished = events[-1]
    assert isinstance(finished, ags.TurnFinished)
    assert finished.result.text == "The answer is 42."
    # the title was asked for, and is still hanging, while the turn is already over
    assert await asyncio.to_thread(hanging.title_asked.wait, 60)
    assert session.title is None
    await runtime.close()  # cancels the title call: the first words stand in
    assert session.title == "What is the answer to everything?"
    reopened = ags.SQLiteStore(tmp_path / "s.db")
    try:
        assert (await reopened.get_session(session.id)).title == session.title
    finally:
        await reopened.close()


async def test_a_title_the_model_does_not_make_in_time_is_given_up(
    hanging: HangingTitles, tmp_path: Path
) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=ags.get_model(hanging.model),
        config=ags.Config(title_timeout=0.5),
    )
    try:
        session = await runtime.create_session()
        assert (await session.prompt("Plan a trip to Lisbon")).text == "The answer is 42."
        assert await session.named() == "Plan a trip to Lisbon"
        assert hanging.title_asked.is_set()
    finally:
        await runtime.close()


def test_run_exits_when_the_answer_is_out(hanging: HangingTitles, tmp_path: Path) -> None:
    result = cli(tmp_path, "run", "--model", hanging.model, "What is the answer?")
    assert result.code == 0, result.err
    assert "The answer is 42." in result.out
    # closing cancelled whatever the title call had done: the first words name the session
    listed = cli(tmp_path, "sessions")
    assert "What is the answer?" in listed.out + listed.err
