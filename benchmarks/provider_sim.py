"""A loopback simulator of the providers' prompt caches: OpenAI chat and responses, Anthropic.

It answers the official SDKs on 127.0.0.1 with the response shapes they parse, keeps a prefix
cache the way the providers document it, reports usage in each provider's own fields and bills
every request. It is a model of the documentation, not of the services:

- **Tokens**: Anthropic: a block's tokens are a quarter of the characters of its compact JSON
  (at least 1); OpenAI: the block's texts counted with ``o200k_base`` (the GPT-5 family's
  published encoding, found offline like the package finds it) plus 3 tokens of framing.
  Cache markers (``cache_control``, ``prompt_cache_breakpoint``) are left out of what is
  hashed and counted: they say where to cache, they are not content.
- **Anthropic** (Messages): the prefix order is tools, system, messages; a breakpoint is a
  block with ``cache_control`` (``ttl`` "5m" default or "1h"). A read is the longest stored
  prefix ending at a breakpoint or up to 20 blocks before one; every breakpoint after it is
  written (``cache_creation_input_tokens``, split by lifetime in ``cache_creation``). The
  minimum cacheable prefix is 1,024 tokens; a read refreshes its entry's lifetime.
  ``diagnostics.previous_message_id`` is compared with the named response's fingerprint
  (model, tools, system, message chain) → ``diagnostics.cache_miss_reason`` or ``null``.
- **OpenAI before GPT-5.6** (automatic caching, e.g. ``gpt-4.1``): every prefix a request sent
  is kept under its ``prompt_cache_key``; a read is the longest stored prefix, in increments of
  128 tokens from 1,024 on (a read of 1,100 tokens reports 1,024); nothing is billed for writing.
- **OpenAI** (GPT-5.6 explicit caching, chat and responses): the prefix order is tools, then
  ``instructions``, then the input items/messages; breakpoints are content parts with
  ``prompt_cache_breakpoint`` plus, unless ``prompt_cache_options.mode`` is ``explicit``, an
  implicit one at the end of the newest item. Up to four are written per request (the newest
  explicit ones and the implicit one), for 30 minutes, under the request's
  ``prompt_cache_key``; a read is the longest stored prefix under that key. Writes are billed
  at 1.25x input (``cache_write_tokens``). Responses' ``prompt_cache_options.
  comparison_response_id`` gives ``prompt_cache_diagnostics`` (``cache_hit``, ``cache_miss``
  with a reason, or ``comparison_response_not_found``).

The model's replies come from ``policy(shape, last_user_text, last_is_tool) -> Reply``; the
clock is a callable, so a benchmark can share its runtime's clock with the simulated cache.
The token-counting endpoints (Anthropic ``/v1/messages/count_tokens``, Responses
``/v1/responses/input_tokens``) answer the same count the bill uses. A request with
``stream: true`` gets the same answer as the provider's event stream (``provider_streams``:
Chat chunks with ``stream_options.include_usage``, Responses events up to
``response.completed``, Anthropic's ``message_start`` … ``message_stop``). The response bodies
and the diagnoses' shapes are in ``provider_shapes``.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from provider_shapes import (
    Reply,
    anthropic_diagnosis,
    chat_answer,
    openai_diagnosis,
    responses_answer,
)
from provider_streams import anthropic_stream, chat_stream, encode, responses_stream

from agentsession.budget import exact_counter
from agentsession.providers.profiles import openai_explicit_cache

# OpenAI's models count with the published o200k_base encoding (when its rank file is found
# offline); Anthropic's tokenizer is not published: a quarter of the characters stands in.
_O200K = exact_counter("o200k_base")
MIN_PREFIX = 1024
INCREMENT = 128  # OpenAI's automatic cache reads come in steps of 128 tokens
LOOKBACK = 20
MARKERS = ("cache_control", "prompt_cache_breakpoint")


@dataclass(frozen=True)
class Price:
    """USD per million tokens, as the simulator bills."""

    input: float
    cached: float
    write: float
    write_long: float
    output: float


Policy = Callable[[str, str, bool], Reply]


@dataclass
class Block:
    digest: str  # chain digest of the prefix ending with this block
    tokens: int
    breakpoint: str | None = None  # lifetime asked for at this block


@dataclass
class Bill:
    requests: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    written_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in MARKERS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _tokens(value: Any) -> int:
    text = json.dumps(_strip(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(text) // 4)


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, list):
        return [t for v in value for t in _leaves(v)]
    return [value] if isinstance(value, str) else [json.dumps(value)]


def _openai_tokens(value: Any) -> int:
    """OpenAI's count of a block: its texts in ``o200k_base`` plus 3 tokens of framing."""
    if _O200K is None:
        return _tokens(value)
    return _O200K.count(" ".join(_leaves(_strip(value)))) + 3


def _chain(
    parts: list[tuple[Any, str | None]], count: Callable[[Any], int] = _tokens
) -> list[Block]:
    blocks: list[Block] = []
    digest = hashlib.sha256()
    for value, mark in parts:
        digest.update(json.dumps(_strip(value), sort_keys=True).encode())
        blocks.append(Block(digest.copy().hexdigest(), count(value), mark))
    return blocks


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(_strip(value), sort_keys=True).encode()).hexdigest()


class PrefixCache:
    """Stored prefixes by (routing key, chain digest) with their expiry."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.entries: dict[tuple[str, str], datetime] = {}

    def _live(self, key: tuple[str, str]) -> bool:
        expiry = self.entries.get(key)
        return expiry is not None and expiry >= self.clock()

    def lookup(self, route: str, blocks: list[Block], candidates: list[int]) -> int:
        """The longest live prefix among ``candidates`` (block indices); -1 for none."""
        for i in sorted(set(candidates), reverse=True):
            if self._live((route, blocks[i].digest)):
                return i
        return -1

    def store(self, route: str, digest: str, seconds: float) -> None:
        expiry = datetime.fromtimestamp(self.clock().timestamp() + seconds, self.clock().tzinfo)
        key = (route, digest)
        self.entries[key] = max(expiry, self.entries.get(key, expiry))


def _cumulative(blocks: list[Block]) -> list[int]:
    total, out = 0, []
    for block in blocks:
        total += block.tokens
        out.append(total)
    return out


_SECONDS = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0}


def account(
    cache: PrefixCache, route: str, blocks: list[Block], candidates: list[int], writes: list[int]
) -> tuple[int, int, int]:
    """(read, written short, written long) tokens of one request; the cache is updated."""
    sums = _cumulative(blocks)
    hit = cache.lookup(route, blocks, candidates)
    read = sums[hit] if hit >= 0 and sums[hit] >= MIN_PREFIX else 0
    if read and hit >= 0:
        mark = blocks[hit].breakpoint or "5m"
        cache.store(route, blocks[hit].digest, _SECONDS.get(mark, 300.0))  # a read refreshes
    short = long = 0
    done = read
    for i in sorted(writes):
        if sums[i] < MIN_PREFIX or sums[i] <= read:
            continue
        mark = blocks[i].breakpoint or "5m"
        cache.store(route, blocks[i].digest, _SECONDS.get(mark, 300.0))
        gained = sums[i] - done
        done = sums[i]
        if mark == "1h":
            long += gained
        else:
            short += gained
    return read, short, long


class Simulator:
    """The simulated providers: caches, fingerprints for diagnoses, bills."""

    def __init__(
        self, policy: Policy, prices: dict[str, Price], clock: Callable[[], datetime]
    ) -> None:
        self.policy = policy
        self.prices = prices
        self.clock = clock
        self.cache = PrefixCache(clock)
        self.fingerprints: dict[str, dict[str, Any]] = {}
        self.bills: dict[str, Bill] = {}
        self.inputs: list[tuple[str, float]] = []  # each request's billed input, in order
        self.details: list[tuple[int, int, int, int]] = []  # (input, read, written 5m, 1h)
        self.count = 0
        self.streamed = 0  # requests answered as event streams
        self.lock = threading.Lock()

    def bill(
        self, shape: str, model: str, total: int, read: int, w5: int, w1: int, out: int
    ) -> None:
        price = self.prices[model]
        fresh = total - read - w5 - w1
        usd = (
            fresh * price.input
            + read * price.cached
            + w5 * price.write
            + w1 * price.write_long
            + out * price.output
        ) / 1e6
        self.inputs.append((shape, usd - out * price.output / 1e6))
        self.details.append((total, read, w5, w1))
        bill = self.bills.setdefault(shape, Bill())
        bill.requests += 1
        bill.input_tokens += total
        bill.cached_tokens += read
        bill.written_tokens += w5 + w1
        bill.output_tokens += out
        bill.usd += usd

    def next_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}_{self.count}"

    # -- Anthropic ---------------------------------------------------------------------------

    def anthropic(self, body: dict[str, Any]) -> dict[str, Any]:
        blocks, firsts = _anthropic_blocks(body)
        marks = [i for i, b in enumerate(blocks) if b.breakpoint is not None]
        candidates = [j for i in marks for j in range(max(0, i - LOOKBACK), i + 1)]
        read, w5, w1 = account(self.cache, "anthropic", blocks, candidates, marks)
        total = _cumulative(blocks)[-1]
        said = [m for m in body["messages"] if m.get("role") != "system"]
        reply = self.policy("anthropic", _last_text(said), _tool_turn(said[-1]))
        message_id = self.next_id("msg")
        content: list[dict[str, Any]] = []
        if reply.tool:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"tu_{self.count}",
                    "name": reply.tool,
                    "input": reply.arguments,
                }
            )
        else:
            content.append({"type": "text", "text": reply.text})
        out = _tokens(content)
        self.bill("anthropic", body["model"], total, read, w5, w1, out)
        answer: dict[str, Any] = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if reply.tool else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": total - read - w5 - w1,
                "output_tokens": out,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": w5 + w1,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": w5,
                    "ephemeral_1h_input_tokens": w1,
                },
            },
        }
        if "diagnostics" in body:
            print_ = {
                "model": body["model"],
                "tools": _digest(body.get("tools", [])),
                "system": _digest(body.get("system", [])),
                "messages": [blocks[i].digest for i in firsts],
                "tokens": total,
            }
            self.fingerprints[message_id] = print_
            previous = body["diagnostics"].get("previous_message_id")
            if previous is not None:
                answer["diagnostics"] = anthropic_diagnosis(self.fingerprints.get(previous), print_)
        return answer

    # -- OpenAI ------------------------------------------------------------------------------

    def openai(self, shape: str, body: dict[str, Any]) -> dict[str, Any]:
        route = str(body.get("prompt_cache_key") or "")
        items = body["messages"] if shape == "openai-chat" else body["input"]
        blocks = _chain(_openai_parts(shape, body), _openai_tokens)
        explicit = [i for i, b in enumerate(blocks) if b.breakpoint is not None]
        options = body.get("prompt_cache_options") or {}
        implicit = [] if options.get("mode") == "explicit" else [len(blocks) - 1]
        blocks[-1].breakpoint = blocks[-1].breakpoint or "30m"
        writes = explicit[-(4 - len(implicit)) :] + implicit
        automatic = not openai_explicit_cache(str(body["model"]))
        if automatic:
            writes = list(range(len(blocks)))  # every prefix sent is kept
        candidates = list(range(len(blocks)))  # any stored breakpoint of the conversation
        read, w5, _ = account(self.cache, "openai:" + route, blocks, candidates, writes)
        if automatic:
            read, w5 = read // INCREMENT * INCREMENT, 0  # hits come in steps; writes are free
        total = _cumulative(blocks)[-1]
        said = [i for i in items if i.get("role") not in ("system", "developer")]
        last = said[-1]
        tool_turn = last.get("role") == "tool" or last.get("type") == "function_call_output"
        reply = self.policy(shape, _last_text(items), tool_turn)
        out_value: Any = reply.text if not reply.tool else [reply.tool, reply.arguments]
        out = _tokens(out_value)
        self.bill(shape, body["model"], total, read, w5, 0, out)
        if shape == "openai-chat":
            return chat_answer(self.next_id("chatcmpl"), body["model"], reply, total, read, w5, out)
        response_id = self.next_id("resp")
        answer = responses_answer(response_id, body["model"], reply, total, read, w5, out)
        fingerprint = {
            "model": body["model"],
            "key": route,
            "tools": _digest(body.get("tools", [])),
            "chain": [b.digest for b in blocks],
        }
        self.fingerprints[response_id] = fingerprint
        compare = options.get("comparison_response_id")
        if compare:
            answer["prompt_cache_diagnostics"] = openai_diagnosis(
                self.fingerprints.get(compare), fingerprint
            )
        return answer


def _anthropic_blocks(body: dict[str, Any]) -> tuple[list[Block], list[int]]:
    """The prefix blocks of a Messages body, and where each message starts."""
    parts: list[tuple[Any, str | None]] = []
    for tool in body.get("tools", []):
        parts.append((tool, _mark(tool)))
    system = body.get("system", [])
    for block in [{"type": "text", "text": system}] if isinstance(system, str) else system:
        parts.append((block, _mark(block)))
    firsts: list[int] = []
    for message in body["messages"]:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        firsts.append(len(parts))
        for k, block in enumerate(blocks):
            value = {"role": message["role"], **block} if k == 0 else block
            parts.append((value, _mark(block)))
    return _chain(parts), firsts


def _openai_parts(shape: str, body: dict[str, Any]) -> list[tuple[Any, str | None]]:
    """The prefix blocks of a Chat Completions or Responses body, breakpoints marked."""
    parts: list[tuple[Any, str | None]] = [(t, None) for t in body.get("tools", [])]
    if body.get("instructions"):
        parts.append(({"instructions": body["instructions"]}, None))
    items = body["messages"] if shape == "openai-chat" else body["input"]
    for item in items:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and content:
            for k, part in enumerate(content):
                value = {"role": item.get("role"), **part} if k == 0 else part
                parts.append((value, "30m" if "prompt_cache_breakpoint" in part else None))
        else:
            parts.append((item, None))
    return parts


def count_tokens(shape: str, body: dict[str, Any]) -> int:
    """What the token-counting endpoints answer: the request's input, as billed."""
    if shape == "anthropic":
        blocks, _ = _anthropic_blocks(body)
    else:
        blocks = _chain(_openai_parts(shape, body), _openai_tokens)
    return _cumulative(blocks)[-1]


def _mark(block: Any) -> str | None:
    control = block.get("cache_control") if isinstance(block, dict) else None
    if not isinstance(control, dict):
        return None
    return str(control.get("ttl", "5m"))


def _tool_turn(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _last_text(items: list[Any]) -> str:
    for item in reversed(items):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            texts = [
                str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and "text" in p
            ]
            if texts:
                return " ".join(texts)
    return ""


def _streamed(path: str, body: dict[str, Any], answer: dict[str, Any]) -> bytes:
    """``answer`` as the event stream the provider sends when ``stream`` is asked for."""
    if path.endswith("/messages"):
        return encode(anthropic_stream(answer))
    if path.endswith("/chat/completions"):
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        return encode(chat_stream(answer, usage))
    return encode(responses_stream(answer))


def _handler(sim: Simulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            path = self.path.split("?", 1)[0]  # the SDKs' beta routes add ``?beta=true``
            with sim.lock:
                if path.endswith("/messages/count_tokens"):
                    answer = {"input_tokens": count_tokens("anthropic", body)}
                elif path.endswith("/responses/input_tokens"):
                    tokens = count_tokens("openai-responses", body)
                    answer = {"object": "response.input_tokens", "input_tokens": tokens}
                elif path.endswith("/messages"):
                    answer = sim.anthropic(body)
                elif path.endswith("/chat/completions"):
                    answer = sim.openai("openai-chat", body)
                elif path.endswith("/responses"):
                    answer = sim.openai("openai-responses", body)
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
            kind = "application/json"
            if body.get("stream"):
                data, kind = _streamed(path, body, answer), "text/event-stream"
                with sim.lock:
                    sim.streamed += 1
            else:
                data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def running(sim: Simulator) -> Iterator[str]:
    """Serve ``sim`` on a free loopback port; yields the base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(sim))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
