"""A scripted model the command line talks to over loopback, as it would to a local server.

The CLI picks its model by name only, so the tests script one the way a user points the CLI at
a local model: ``--model openai-compatible:http://127.0.0.1:PORT/v1#scripted``. This server
speaks the streamed Chat Completions protocol. Each request that offers tools takes the next
scripted reply — a text, or a list of ``(tool name, arguments)`` calls; a request that offers
none (a session title, a plain-text compaction summary) or asks for a summary at its end (a
cache-reading compaction) gets a fixed text and takes nothing from the script. Every request
body is recorded, so a test reads what the model was sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from .loopback import running

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Held:
    """A reply that streams the text ``first``, then ``rest`` only once the test sets ``go``.

    So a test acts on a reply that is still streaming whatever the machine's speed: it waits
    until ``first`` shows, then acts; the reply (and its turn) cannot end before.
    """

    first: str
    rest: Reply


Reply = str | list[Call] | Held
UNSCRIPTED = "A short summary of the conversation so far."
#: Seconds a held reply waits for ``go`` at most: a bound, so a broken test cannot hang.
HOLD = 120.0


@dataclass
class ScriptedServer:
    """The script, what was asked, and the model string that reaches this server."""

    url: str = ""
    script: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    _calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    by_line: bool = False
    """Stream a text reply line by line, one chunk each (as a long answer arrives)."""
    key: str | None = None
    """When set, a request without ``Authorization: Bearer <key>`` is refused with 401."""
    authorizations: list[str] = field(default_factory=list)
    go: threading.Event = field(default_factory=threading.Event)
    """Lets a ``Held`` reply stream its rest."""

    @property
    def model(self) -> str:
        return f"openai-compatible:{self.url}/v1#scripted"

    def reply(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    @property
    def agent_requests(self) -> list[dict[str, Any]]:
        """The requests that offered tools: the session's own turns."""
        return [r for r in self.requests if r.get("tools")]

    def next_reply(self, body: dict[str, Any]) -> Reply | None:
        with self._lock:
            self.requests.append(body)
            if not body.get("tools") or _asks_for_a_summary(body):
                return UNSCRIPTED
            return self.script.pop(0) if self.script else None

    def call_id(self) -> str:
        with self._lock:
            self._calls += 1
            return f"call_{self._calls}"


def _asks_for_a_summary(body: dict[str, Any]) -> bool:
    """A cache-reading compaction request: the live request, the summary instruction last."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    text = content if isinstance(content, str) else json.dumps(content)
    return "The conversation is being" in text and "compacted" in text


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    body = {
        "id": "chunk",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "scripted",
        "choices": choices,
        "usage": usage,
    }
    return f"data: {json.dumps(body)}\n\n".encode()


def _stream(server: ScriptedServer, reply: Reply) -> list[bytes | None]:
    """The reply's frames; ``None`` where a held reply waits for ``go``."""
    if isinstance(reply, Held):
        return [
            _chunk({"role": "assistant", "content": reply.first}),
            None,
            *_stream(server, reply.rest),
        ]
    if isinstance(reply, str):
        pieces = reply.splitlines(keepends=True) if server.by_line else [reply]
        chunks = [_chunk({"role": "assistant", "content": pieces[0] if pieces else ""})]
        chunks += [_chunk({"content": piece}) for piece in pieces[1:]]
        chunks.append(_chunk({}, "stop"))
    else:
        calls = [
            {
                "index": i,
                "id": server.call_id(),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(reply)
        ]
        chunks = [
            _chunk({"role": "assistant", "content": None, "tool_calls": calls}),
            _chunk({}, "tool_calls"),
        ]
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    return [*chunks, _chunk(None, usage=usage), b"data: [DONE]\n\n"]


def _handler(server: ScriptedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length))
            given = self.headers.get("authorization") or ""
            server.authorizations.append(given)
            refused = server.key is not None and given != f"Bearer {server.key}"
            reply = None if refused else server.next_reply(body)
            if reply is None:
                message = "invalid api key" if refused else "the script has no more replies"
                data = json.dumps({"error": {"message": message}})
                self.send_response(401 if refused else 400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            # A client that gave up (a cancelled turn) has closed the connection: nothing to say.
            with contextlib.suppress(OSError):
                for piece in _stream(server, reply):
                    if piece is None:
                        server.go.wait(HOLD)
                        continue
                    self.wfile.write(piece)
                    self.wfile.flush()
            self.close_connection = True

    return Handler


def serve() -> Iterator[ScriptedServer]:
    """Run a scripted server on a free loopback port until the generator is closed."""
    state = ScriptedServer()
    try:
        with running(_handler(state)) as url:
            state.url = url
            yield state
    finally:
        state.go.set()  # a reply still held ends with its test


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool messages of a recorded request."""
    return [m for m in request["messages"] if m.get("role") == "tool"]


def text(message: dict[str, Any]) -> str:
    """The text of a recorded message (a string, or text parts)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
