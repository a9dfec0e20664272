"""Provider test helpers: a loopback HTTP server recording what the SDKs send, and SDK type checks.

Imported by the provider tests and their conftest (a plain module, so the name is unique).

Nothing here reaches a real provider: every client under test is pointed at 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler
from typing import Any

from pydantic import TypeAdapter
from tests.loopback import running


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict (JSON) or bytes
    sse: list[str] | None = None  # raw SSE event texts, sent one by one
    delay: float = 0.0
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    # an SSE reply sent chunked whose connection drops before the final chunk: a cut stream
    cut: bool = False


@dataclass
class Captured:
    method: str
    path: str
    headers: dict[str, str]
    raw: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.raw)


@dataclass
class LocalServer:
    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[Captured] = field(default_factory=list)

    def reply(self, *replies: Reply) -> None:
        self.replies.extend(replies)


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            server.requests.append(
                Captured("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
            )
            reply = server.replies.pop(0) if server.replies else Reply(500, {"error": "no reply"})
            if reply.delay:
                time.sleep(reply.delay)
            try:
                if reply.sse is not None:
                    self.send_response(reply.status)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("connection", "close")
                    if reply.cut:
                        self.send_header("transfer-encoding", "chunked")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for event in reply.sse:
                        data = event.encode()
                        if reply.cut and not data:
                            # A chunk of no bytes is the body's end marker: a cut at the first
                            # byte sends nothing, so the connection drops as the reply says.
                            continue
                        if reply.cut:
                            data = b"%x\r\n%s\r\n" % (len(data), data)
                        self.wfile.write(data)
                        self.wfile.flush()
                    self.close_connection = True
                    return
                data = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler


def serve() -> Iterator[LocalServer]:
    state = LocalServer(url="")
    with running(_handler(state)) as url:
        state.url = url
        yield state


def sse(data: Any, event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


# --- SDK type checks -----------------------------------------------------------------------


@cache
def _adapter(fmt: str, beta: bool) -> TypeAdapter[Any]:
    if fmt == "openai-chat":
        from openai.types.chat import completion_create_params as chat

        return TypeAdapter(chat.CompletionCreateParamsNonStreaming)
    if fmt == "openai-responses":
        from openai.types.responses import response_create_params as resp

        return TypeAdapter(resp.ResponseCreateParamsNonStreaming)
    if fmt == "anthropic-messages":
        if beta:
            from anthropic.types.beta import message_create_params as beta_params

            return TypeAdapter(beta_params.MessageCreateParamsNonStreaming)
        from anthropic.types import message_create_params as params

        return TypeAdapter(params.MessageCreateParamsNonStreaming)
    raise AssertionError(fmt)


def _force(value: Any) -> Any:
    """Pydantic validates ``Iterable`` fields lazily: walk everything so errors surface."""
    if isinstance(value, dict):
        return {k: _force(v) for k, v in value.items()}
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if hasattr(value, "__iter__"):
        return [_force(v) for v in value]
    return value


def check_sdk_types(fmt: str, body: dict[str, Any]) -> None:
    """Validate a lowered body against the official SDK's own request types."""
    if fmt == "gemini":
        from google.genai import types

        for content in body["contents"]:
            types.Content.model_validate(content)
        types.GenerateContentConfig.model_validate(body["config"])
        assert set(body) <= {"model", "contents", "config"}
        return
    validated = _force(_adapter(fmt, "betas" in body).validate_python(body))
    # TypedDicts drop unknown keys silently: a key the SDK does not know shows up as a difference
    assert validated == body, "the lowered body has keys the SDK types do not know"
