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
  minimum cacheable prefix is 1,024 tokens; a read refreshes its entry for the entry's own
  lifetime (the one it was written with). Lifetimes may be mixed in one request, 1-hour
  breakpoints before 5-minute ones (a 1-hour one after a 5-minute one is refused with a 400):
  the tokens from the prefix read to the last 1-hour breakpoint are written at the hour, the
  rest to the last breakpoint at 5 minutes, each breakpoint's entry living its own lifetime.
  ``diagnostics.previous_message_id`` is compared with the named response's fingerprint
  (model, tools, system, message chain) → ``diagnostics.cache_miss_reason`` or ``null``.
- **OpenAI before GPT-5.6** (automatic caching, e.g. ``gpt-4.1``): every prefix a request sent
  is kept under its ``prompt_cache_key``; a read is the longest stored prefix, in increments of
  128 tokens from 1,024 on (a read of 1,100 tokens reports 1,024); nothing is billed for writing.
- **OpenAI** (GPT-5.6 explicit caching, chat and responses): the prefix order is tools, then
  ``instructions``, then the input items/messages; breakpoints are content parts with
  ``prompt_cache_breakpoint`` plus, unless ``prompt_cache_options.mode`` is ``explicit``, an
  implicit one at the end of the newest item. Up to four are written per request (the newest
  explicit ones and the implicit one), for 30 minutes (``prompt_cache_options.ttl``'s
  documented minimum and only value), under the request's ``prompt_cache_key``; a read is the
  longest stored prefix under that key, and renews the entry it read for its 30 minutes again
  (retention is documented by inactivity, so a read is use). Writes are billed
  at 1.25x input (``cache_write_tokens``). Responses' ``prompt_cache_options.
  comparison_response_id`` gives ``prompt_cache_diagnostics`` (``cache_hit``, ``cache_miss``
  with a reason, or ``comparison_response_not_found``). Responses' ``prompt_cache_options.
  prewarm`` (GPT-5.6 and later) "prepares the prompt cache without generating output": the
  request is read and written like any other and billed for its input only, the response
  completed with no output items and 0 output tokens (refused with a 400 on an earlier model,
  which has no ``prompt_cache_options``).
- **Anthropic tool search** (the custom variant its tool search page documents): a tool
  declared with ``defer_loading: true`` is not in the prefix; a ``tool_reference`` block in a
  tool result is that tool's definition where it stands (hashed and counted there).
- **Tool search** (Responses, client execution as the tool search guide documents it): with a
  ``tool_search`` tool of ``execution: "client"`` declared, the policy's ``search_tools`` call
  is answered as a ``tool_search_call`` item; a ``tool_search_output`` in the input is an item
  of the prefix like any other, the declarations it carries counted where it stands.

Anthropic's server-side compaction (a request with ``compaction``, or the threshold edit
``compact_20260112`` once the input reaches its trigger) is answered by ``sim_compaction``: one
signed block, usage in a ``compaction`` iteration; a later request whose block differs from the
one issued is refused with a 400. OpenAI's ``/responses/compact`` (no ``tools``: its prefix
starts at ``instructions``) returns the user messages and one encrypted ``compaction`` item; its
input is accounted against the cache like a Responses request's, and a later request whose
compaction item differs from the one issued is refused the same way.

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
from itertools import pairwise
from typing import Any

from provider_shapes import (
    Reply,
    anthropic_diagnosis,
    chat_answer,
    openai_diagnosis,
    responses_answer,
)
from provider_streams import anthropic_stream, chat_stream, encode, responses_stream
from sim_compaction import (
    Compactions,
    OpenAICompactions,
    SimulatedRefusal,
    compaction_answer,
    iteration,
    openai_compaction_answer,
    threshold_of,
)

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
        text = json.dumps(_strip(value), sort_keys=True)
        digest.update(text.encode())
        # a block's count depends on its content alone: counted once (a day's requests resend
        # the same history hundreds of times, and counting it again each time dominated a run)
        key = (count, hashlib.sha256(text.encode()).digest())
        tokens = _COUNTS.get(key)
        if tokens is None:
            tokens = _COUNTS[key] = count(value)
        blocks.append(Block(digest.copy().hexdigest(), tokens, mark))
    return blocks


_COUNTS: dict[tuple[Callable[[Any], int], bytes], int] = {}


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(_strip(value), sort_keys=True).encode()).hexdigest()


class PrefixCache:
    """Stored prefixes by (routing key, chain digest): each with its expiry and its lifetime."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self.clock = clock
        self.entries: dict[tuple[str, str], tuple[datetime, float]] = {}

    def _live(self, key: tuple[str, str]) -> bool:
        entry = self.entries.get(key)
        return entry is not None and entry[0] >= self.clock()

    def lookup(self, route: str, blocks: list[Block], candidates: list[int]) -> int:
        """The longest live prefix among ``candidates`` (block indices); -1 for none."""
        for i in sorted(set(candidates), reverse=True):
            if self._live((route, blocks[i].digest)):
                return i
        return -1

    def store(self, route: str, digest: str, seconds: float) -> None:
        """Write (or rewrite) an entry for ``seconds``; a longer lifetime it had stays."""
        key = (route, digest)
        expiry, lifetime = self.entries.get(key, (self.clock(), 0.0))
        lifetime = max(lifetime, seconds)
        fresh = datetime.fromtimestamp(self.clock().timestamp() + lifetime, self.clock().tzinfo)
        self.entries[key] = (max(expiry, fresh), lifetime)

    def refresh(self, route: str, digest: str) -> None:
        """A read: the entry lives its own lifetime again from now (both providers document
        reads as use: Anthropic refreshes the entry's TTL, OpenAI retains by activity)."""
        self.store(route, digest, self.entries[(route, digest)][1])


def _cumulative(blocks: list[Block]) -> list[int]:
    total, out = 0, []
    for block in blocks:
        total += block.tokens
        out.append(total)
    return out


_SECONDS = {"5m": 300.0, "1h": 3600.0, "30m": 1800.0, "12h": 43200.0}
_LONG = ("1h", "12h")


def account(
    cache: PrefixCache, route: str, blocks: list[Block], candidates: list[int], writes: list[int]
) -> tuple[int, int, int]:
    """(read, written short, written long) tokens of one request; the cache is updated."""
    sums = _cumulative(blocks)
    hit = cache.lookup(route, blocks, candidates)
    read = sums[hit] if hit >= 0 and sums[hit] >= MIN_PREFIX else 0
    if read and hit >= 0:
        cache.refresh(route, blocks[hit].digest)
        if blocks[-1].breakpoint == "12h":
            # OpenAI: a longer write does not bill the cached tokens again; it retains them
            cache.store(route, blocks[hit].digest, _SECONDS["12h"])
    short = long = 0
    done = read
    for i in sorted(writes):
        if sums[i] < MIN_PREFIX or sums[i] <= read:
            continue
        mark = blocks[i].breakpoint or "5m"
        cache.store(route, blocks[i].digest, _SECONDS.get(mark, 300.0))
        gained = sums[i] - done
        done = sums[i]
        if mark in _LONG:
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
        self.messages: list[int] = []  # each request's conversation messages (items), in order
        self.count = 0
        self.streamed = 0  # requests answered as event streams
        self.compactions = Compactions()  # Anthropic's compaction blocks issued
        self.openai_compactions = OpenAICompactions()  # OpenAI's compaction items issued
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
        body = self.compactions.effective(body)  # refuses a compaction block not as issued
        blocks, firsts = _anthropic_blocks(body)
        marks = [i for i, b in enumerate(blocks) if b.breakpoint is not None]
        lifetimes = [blocks[i].breakpoint for i in marks]
        if ("5m", "1h") in pairwise(lifetimes):
            raise SimulatedRefusal("a 1-hour cache_control must come before every 5-minute one")
        candidates = [j for i in marks for j in range(max(0, i - LOOKBACK), i + 1)]
        read, w5, w1 = account(self.cache, "anthropic", blocks, candidates, marks)
        total = _cumulative(blocks)[-1]
        message_id = self.next_id("msg")
        if body.get("compaction"):
            block = self.compactions.block(body["messages"])
            out = _tokens(block)
            self.bill("anthropic", body["model"], total, read, w5, w1, out)
            usage = _anthropic_usage(total, read, w5, w1, out)
            return compaction_answer(message_id, body["model"], block, usage, out)
        said = [m for m in body["messages"] if m.get("role") != "system"]
        trigger = threshold_of(body)
        compacted: tuple[dict[str, Any], tuple[int, int, int, int, int]] | None = None
        if trigger is not None and total >= trigger:
            # Compacted inside the request: the reply is written from the block alone.
            block = self.compactions.block(body["messages"])
            compacted = (block, (total, read, w5, w1, _tokens(block)))
            after = {**body, "messages": [{"role": "assistant", "content": [block]}]}
            blocks, firsts = _anthropic_blocks(after)
            marks = [i for i, b in enumerate(blocks) if b.breakpoint is not None]
            candidates = [j for i in marks for j in range(max(0, i - LOOKBACK), i + 1)]
            read, w5, w1 = account(self.cache, "anthropic", blocks, candidates, marks)
            total = _cumulative(blocks)[-1]
        self.messages.append(len(said))
        reply = self.policy("anthropic", _last_text(said), _tool_turn(said[-1]))
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
        usage = _anthropic_usage(total, read, w5, w1, out)
        if compacted is None:
            self.bill("anthropic", body["model"], total, read, w5, w1, out)
        else:
            block, first = compacted
            content = [block, *content]
            both = [a + b for a, b in zip(first, (total, read, w5, w1, out), strict=True)]
            self.bill("anthropic", body["model"], *both)  # one bill: both iterations
            figures = _anthropic_usage(*first)
            usage["iterations"] = [iteration("compaction", figures), iteration("message", usage)]
        answer: dict[str, Any] = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": "tool_use" if reply.tool else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if "diagnostics" in body:
            print_ = {
                "model": body["model"],
                "tools": _digest([t for t in body.get("tools", []) if not t.get("defer_loading")]),
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

    def openai_compact(self, body: dict[str, Any]) -> dict[str, Any]:
        """``/responses/compact``: the compacted items, billed like a Responses request."""
        self.openai_compactions.check(body)
        blocks = _chain(_openai_parts("openai-responses", body), _openai_tokens)
        read, written, _ = self._openai_cache(body, blocks)
        output = self.openai_compactions.output(body)
        out = _tokens(output[-1]) if output else 1
        total = _cumulative(blocks)[-1]
        self.bill("openai-responses", body["model"], total, read, written, 0, out)
        answer_id = self.next_id("resp_cmp")
        return openai_compaction_answer(answer_id, output, total, read, written, out)

    def _openai_cache(
        self, body: dict[str, Any], blocks: list[Block], shape: str = "openai-responses"
    ) -> tuple[int, int, int]:
        """(read, written, of which 12 h) tokens of an OpenAI request; the cache is updated."""
        route = str(body.get("prompt_cache_key") or "")
        explicit = [i for i, b in enumerate(blocks) if b.breakpoint is not None]
        options = body.get("prompt_cache_options") or {}
        ttl = _openai_ttl(shape, str(body["model"]), options)
        if ttl == "12h":
            for block in blocks:
                block.breakpoint = ttl if block.breakpoint else None
        implicit = [] if options.get("mode") == "explicit" else [len(blocks) - 1]
        blocks[-1].breakpoint = blocks[-1].breakpoint or ttl
        writes = explicit[-(4 - len(implicit)) :] + implicit
        automatic = not openai_explicit_cache(str(body["model"]))
        if automatic:
            writes = list(range(len(blocks)))  # every prefix sent is kept
        candidates = list(range(len(blocks)))  # any stored breakpoint of the conversation
        read, w30, w12 = account(self.cache, "openai:" + route, blocks, candidates, writes)
        if automatic:
            read, w30 = read // INCREMENT * INCREMENT, 0  # hits come in steps; writes are free
        return read, w30 + w12, w12

    def openai_prewarm(self, body: dict[str, Any], blocks: list[Block]) -> dict[str, Any]:
        """A Responses request with ``prompt_cache_options.prewarm``: the cache, no output."""
        if not openai_explicit_cache(str(body["model"])):
            raise SimulatedRefusal("prompt_cache_options is supported for gpt-5.6 and later models")
        read, written, long = self._openai_cache(body, blocks)
        total = _cumulative(blocks)[-1]
        self.bill("openai-responses", body["model"], total, read, written - long, long, 0)
        answer = responses_answer(
            self.next_id("resp"), body["model"], Reply(text=""), total, read, written, 0, long
        )
        return answer | {"output": []}

    def openai(self, shape: str, body: dict[str, Any]) -> dict[str, Any]:
        route = str(body.get("prompt_cache_key") or "")
        items = body["messages"] if shape == "openai-chat" else body["input"]
        if shape == "openai-responses":
            self.openai_compactions.check(body)  # refuses a compaction item not as issued
        blocks = _chain(_openai_parts(shape, body), _openai_tokens)
        options = body.get("prompt_cache_options") or {}
        if shape == "openai-responses" and options.get("prewarm"):
            return self.openai_prewarm(body, blocks)
        read, w5, long = self._openai_cache(body, blocks, shape)
        total = _cumulative(blocks)[-1]
        said = [i for i in items if i.get("role") not in ("system", "developer")]
        self.messages.append(len(said))
        last = said[-1]
        answers = ("function_call_output", "tool_search_output")
        tool_turn = last.get("role") == "tool" or last.get("type") in answers
        reply = self.policy(shape, _last_text(items), tool_turn)
        out_value: Any = reply.text if not reply.tool else [reply.tool, reply.arguments]
        out = _tokens(out_value)
        self.bill(shape, body["model"], total, read, w5 - long, long, out)
        if shape == "openai-chat":
            return chat_answer(self.next_id("chatcmpl"), body["model"], reply, total, read, w5, out)
        response_id = self.next_id("resp")
        answer = responses_answer(response_id, body["model"], reply, total, read, w5, out, long)
        if reply.tool and reply.tool == _client_search(body):
            answer["output"] = [_search_call(response_id, reply.arguments)]
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


def _openai_ttl(shape: str, model: str, options: dict[str, Any]) -> str:
    """The retention a request asks for: "30m", or "12h" on Responses for GPT-5.6 and later."""
    ttl = str(options.get("ttl") or "30m")
    if ttl not in ("30m", "12h"):
        raise SimulatedRefusal(f"prompt_cache_options.ttl must be '30m' or '12h', got {ttl!r}")
    if ttl == "12h" and (shape != "openai-responses" or not openai_explicit_cache(model)):
        raise SimulatedRefusal("ttl '12h' is supported on Responses for gpt-5.6 and later models")
    return ttl


def _anthropic_usage(total: int, read: int, w5: int, w1: int, out: int) -> dict[str, Any]:
    return {
        "input_tokens": total - read - w5 - w1,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": w5 + w1,
        "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
    }


def _client_search(body: dict[str, Any]) -> str | None:
    """The tool name a client-executed ``tool_search`` stands for in the policy, if declared.

    The guide's client tool search: the model asks with a ``tool_search_call`` (execution
    ``client``, the arguments the declared parameters describe), the client answers with a
    ``tool_search_output`` whose ``tools`` join the context where it stands. The policy names
    the search the way the session's proxy is named, ``search_tools``.
    """
    for tool in body.get("tools", []):
        if tool.get("type") == "tool_search" and tool.get("execution") == "client":
            return "search_tools"
    return None


def _search_call(response_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_search_call",
        "id": f"tsc_{response_id}",
        "call_id": f"call_{response_id}",
        "execution": "client",
        "arguments": arguments,
        "status": "completed",
    }


def _deferred(body: dict[str, Any]) -> dict[str, Any]:
    """The body's tools declared with ``defer_loading``, by name."""
    return {t["name"]: t for t in body.get("tools", []) if t.get("defer_loading")}


def _referenced(block: Any, deferred: dict[str, Any]) -> Any:
    """``block`` with each ``tool_reference`` in a tool result standing for its definition."""
    if not (isinstance(block, dict) and block.get("type") == "tool_result"):
        return block
    content = block.get("content")
    if not isinstance(content, list):
        return block
    expanded = [
        {"type": "tool_reference", "definition": deferred.get(part.get("tool_name"), {})}
        if isinstance(part, dict) and part.get("type") == "tool_reference"
        else part
        for part in content
    ]
    return block | {"content": expanded}


def _anthropic_blocks(body: dict[str, Any]) -> tuple[list[Block], list[int]]:
    """The prefix blocks of a Messages body, and where each message starts.

    A deferred tool (``defer_loading``) is not in the prefix; a ``tool_reference`` to it in a
    tool result is its definition, there.
    """
    parts: list[tuple[Any, str | None]] = []
    deferred = _deferred(body)
    for tool in body.get("tools", []):
        if tool.get("name") not in deferred:
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
            shown = _referenced(block, deferred)
            value = {"role": message["role"], **shown} if k == 0 else shown
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


def _answer(sim: Simulator, path: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """The simulator's answer to one POST (``None``: no such route)."""
    with sim.lock:
        if path.endswith("/messages/count_tokens"):
            return {"input_tokens": count_tokens("anthropic", sim.compactions.effective(body))}
        if path.endswith("/responses/input_tokens"):
            tokens = count_tokens("openai-responses", body)
            return {"object": "response.input_tokens", "input_tokens": tokens}
        if path.endswith("/messages"):
            return sim.anthropic(body)
        if path.endswith("/chat/completions"):
            return sim.openai("openai-chat", body)
        if path.endswith("/responses/compact"):
            return sim.openai_compact(body)
        if path.endswith("/responses"):
            return sim.openai("openai-responses", body)
    return None


def _handler(sim: Simulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length))
            path = self.path.split("?", 1)[0]  # the SDKs' beta routes add ``?beta=true``
            try:
                answer = _answer(sim, path, body)
            except SimulatedRefusal as exc:
                error = {"type": "error", "error": {"type": "invalid_request_error"}}
                error["error"]["message"] = str(exc)
                data = json.dumps(error).encode()
                self.send_response(400)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            if answer is None:
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
