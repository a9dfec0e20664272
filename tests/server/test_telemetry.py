"""OpenTelemetry: one span tree per turn with the GenAI attributes, in memory and over OTLP/HTTP.

The in-memory test runs the app in this process (the SDK's in-memory exporter); the OTLP test
runs ``agentsession serve --otlp-endpoint`` against a collector on loopback and stops it with
SIGTERM, which must flush the batched spans.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

import agentsession as ags
from agentsession.providers.scripted import Reply

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from agentsession.server.telemetry import otel_observer

from .harness import TIMEOUT, frames, printed_url


@ags.tool
def count_words(text: str) -> int:
    """Count the words in a text.

    Args:
        text: The text to count.
    """
    return len(text.split())


def _reply(request: ags.Request) -> Reply:
    last = request.messages[-1]
    if isinstance(last, ags.ToolResultMessage):
        return f"answer: {last.content}"
    return [ags.ToolCall("count_words", {"text": str(last.content)})]


async def test_one_span_tree_per_turn_with_gen_ai_attributes(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "db.sqlite"),
        model=ags.ScriptedModel(_reply, name="scripted:otel"),
        tools=[count_words],
        project_dir=tmp_path,
    )
    app = ags.server.create_app(runtime, observer=otel_observer(provider, runtime.token_counter))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        sid = (await client.post("/sessions", json={})).json()["id"]
        for text in ("one two", "three four five"):
            answer = await client.post(f"/sessions/{sid}/prompt", json={"text": text})
            assert answer.status_code == 200
            assert (
                "answer:" in list(frames(iter(answer.text.splitlines())))[-1].data["result"]["text"]
            )
    await runtime.close()

    spans = exporter.get_finished_spans()
    turns = [s for s in spans if s.name == "invoke_agent"]
    assert len(turns) == 2
    assert len({t.context.trace_id for t in turns}) == 2  # one tree per turn
    for turn in turns:
        assert turn.parent is None
        assert attributes_of(turn)["gen_ai.conversation.id"] == sid
        children = [
            s for s in spans if s.parent is not None and s.parent.span_id == turn.context.span_id
        ]
        assert all(s.context.trace_id == turn.context.trace_id for s in children)
        names = sorted(s.name for s in children)
        assert names == ["chat", "chat", "execute_tool"]
        for chat in (s for s in children if s.name == "chat"):
            _check_chat(chat)
        tool = next(s for s in children if s.name == "execute_tool")
        assert attributes_of(tool)["gen_ai.tool.name"] == "count_words"
    finishes = [
        tuple(attributes_of(s)["gen_ai.response.finish_reasons"]) for s in spans if s.name == "chat"
    ]
    assert finishes == [("tool_calls",), ("stop",)] * 2


def attributes_of(span: ReadableSpan) -> dict[str, Any]:
    """A finished span's attributes (the SDK types them as optional and loosely)."""
    assert span.attributes is not None
    return dict(span.attributes)


def _check_chat(chat: ReadableSpan) -> None:
    attributes = attributes_of(chat)
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.request.model"] == "scripted:otel"
    for name in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"):
        assert isinstance(attributes[name], int) and attributes[name] > 0
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 0
    assert attributes["agentsession.cache.diagnosis"] in ("first", "hit", "miss", "unknown")
    assert isinstance(attributes["agentsession.epoch"], int)


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Collector.received.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[str]:
    _Collector.received = []
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    server.shutdown()
    thread.join()
    server.server_close()


def test_serve_sends_spans_over_otlp_http_and_flushes_on_sigterm(
    tmp_path: Path, collector: str
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentsession",
            "--db",
            str(tmp_path / "s.db"),
            "--model",
            "scripted:demo",
            "serve",
            "--port",
            str(port),
            "--otlp-endpoint",
            collector,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        _, token = printed_url(process)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            timeout=TIMEOUT,
            headers={"Authorization": f"Bearer {token}"},
        )
        for _ in range(1200):
            try:
                client.get("/openapi.json")
                break
            except httpx.TransportError:
                assert process.poll() is None, process.communicate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(0.1)
        sid = client.post("/sessions", json={}).json()["id"]
        assert client.post(f"/sessions/{sid}/prompt", json={"text": "a b c"}).status_code == 200
        client.close()
    finally:
        process.terminate()
        process.communicate(timeout=120)
    assert process.returncode == 0
    spans = []
    for body in _Collector.received:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                spans.extend(scope.spans)
    assert sorted(s.name for s in spans) == ["chat", "chat", "execute_tool", "invoke_agent"]
    chat = next(s for s in spans if s.name == "chat")
    found = {a.key: a.value for a in chat.attributes}
    assert found["gen_ai.request.model"].string_value == "scripted:demo"
    assert found["gen_ai.usage.input_tokens"].int_value > 0
    assert found["gen_ai.usage.cache_read.input_tokens"].HasField("int_value")
