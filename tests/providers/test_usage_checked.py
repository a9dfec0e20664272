"""Usage figures checked where they arrive, on every format: whatever a server reports — negative,
fractional, infinite, beyond any window, cached above input — the reply's usage holds plain
figures in range, is marked estimated with the reason, and nothing priced from it goes negative
or overflows.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from provider_fakes import LocalServer, Reply
from vendor_replies import KEYS, VENDORS, anthropic_text_stream, run

import agentsession as ags
from agentsession.ledger import charge_usd
from agentsession.log import AssistantEntry
from agentsession.log.usage_check import MAX_TOKENS, checked_usage

# Where each format keeps its input, output and cached figures in a whole (not streamed) reply.
_CHAT = (
    "usage",
    ("prompt_tokens",),
    ("completion_tokens",),
    ("prompt_tokens_details", "cached_tokens"),
)
_PLACES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "openai-chat": _CHAT,
    "openai-compatible": _CHAT,
    "openai-responses": (
        "usage", ("input_tokens",), ("output_tokens",), ("input_tokens_details", "cached_tokens")
    ),
    "anthropic": ("usage", ("input_tokens",), ("output_tokens",), ("cache_read_input_tokens",)),
    "gemini": (
        "usageMetadata",
        ("promptTokenCount",),
        ("candidatesTokenCount",),
        ("cachedContentTokenCount",),
    ),
}  # fmt: skip


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


_HOSTILE: dict[str, tuple[str, Any]] = {
    "negative-output": ("output", -4_000_000_000),
    "fractional-output": ("output", 12.5),
    "infinite-output": ("output", float("inf")),
    "beyond-float-output": ("output", 10**400),
    "text-output": ("output", "many"),
    "negative-input": ("input", -7),
    "cached-above-input": ("cached", 10**6),
}

_GEMINI_SDK_REFUSES = frozenset({"fractional-output", "infinite-output", "text-output"})


def _set(body: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        body = body.setdefault(key, {})
    body[path[-1]] = value


def hostile_body(vendor: str, where: str, value: Any) -> bytes:
    body = copy.deepcopy(VENDORS[vendor].full)
    top, inp, out, cached = _PLACES[vendor]
    place = {"input": inp, "output": out, "cached": cached}[where]
    _set(body[top], place, value)
    return json.dumps(body).encode()  # ``Infinity`` and a 400-digit number, as a proxy may send


def _sane(usage: ags.Usage) -> None:
    figures = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_input_tokens,
        usage.cache_write_tokens,
        usage.cache_write_long_tokens,
    )
    assert all(type(f) is int and 0 <= f <= MAX_TOKENS for f in figures), figures
    assert usage.cached_input_tokens + usage.cache_write_tokens <= usage.input_tokens
    price = ags.ModelPrice(input=3.0, cached_input=0.3, cache_write=3.75, output=15.0)
    billed, uncached = charge_usd(usage, price)
    assert 0 <= billed <= uncached * 1.25 + 1e-9


@pytest.mark.parametrize("case", sorted(_HOSTILE))
@pytest.mark.parametrize("vendor", sorted(_PLACES))
async def test_a_hostile_figure_is_clamped_and_named(
    vendor: str, case: str, server: LocalServer
) -> None:
    where, value = _HOSTILE[case]
    if vendor == "anthropic" and case == "cached-above-input":
        pytest.skip("Anthropic reports cache reads beside input: their sum is the input")
    server.reply(Reply(body=hostile_body(vendor, where, value)))
    if vendor == "gemini" and case in _GEMINI_SDK_REFUSES:
        # Google's SDK validates the figures' types itself: the reply is refused whole, a
        # provider failure that leaves the session as it was (``retry()`` asks again).
        with pytest.raises(ags.ProviderError, match="TokenCount"):
            await run(VENDORS[vendor].model(server, streaming=False))
        return
    _, done = await run(VENDORS[vendor].model(server, streaming=False))
    _sane(done.usage)
    assert done.usage_note, done.usage
    named = {"input": "input_tokens", "output": "output_tokens", "cached": "cached_input_tokens"}
    assert named[where] in done.usage_note


@pytest.mark.parametrize("vendor", sorted(_PLACES))
async def test_plain_figures_pass_unmarked(vendor: str, server: LocalServer) -> None:
    server.reply(Reply(body=VENDORS[vendor].full))
    _, done = await run(VENDORS[vendor].model(server, streaming=False))
    assert done.usage_note == "" and done.usage.input_tokens > 0


_FIGURE = st.one_of(
    st.none(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
    st.booleans(),
)


@given(st.tuples(_FIGURE, _FIGURE, _FIGURE, _FIGURE, _FIGURE))
def test_any_reported_figures_become_sane_usage(figures: tuple[Any, ...]) -> None:
    # Built as a server's JSON would make it: ``Usage`` is not type-checked when constructed.
    raw = ags.Usage(*figures)
    usage, note = checked_usage(raw)
    _sane(usage)
    in_range = all(type(f) is int and 0 <= f <= MAX_TOKENS for f in figures)
    if in_range and note == "":
        assert usage == raw
    done = ags.providers.ModelDone(ags.AssistantMessage("x"), raw)
    assert done.usage == usage and done.usage_note == note


def _anthropic_stream_with(usage: dict[str, Any]) -> list[str]:
    events = anthropic_text_stream("fine")
    start = json.loads(events[0].split("data: ", 1)[1])
    start["message"]["usage"] = usage
    events[0] = f"event: message_start\ndata: {json.dumps(start)}\n\n"
    return events


async def test_anthropic_turn_with_absurd_usage_finishes_and_costs_a_sane_estimate(
    server: LocalServer, tmp_path: Path
) -> None:
    # A figure beyond float range used to abort the turn after its commit (the token counter
    # calibrating against it), then make every cost figure raise OverflowError.
    model = VENDORS["anthropic"].model(server)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False, provider_retries=0),
    )
    try:
        session = await runtime.create_session()
        server.reply(
            Reply(sse=_anthropic_stream_with({"input_tokens": 10**400, "output_tokens": 1}))
        )
        assert (await session.prompt("hello")).text == "fine"
        server.reply(Reply(sse=anthropic_text_stream("again")))
        assert (await session.prompt("and again")).text == "again"
        entries = [r.entry for r in await session.log() if isinstance(r.entry, AssistantEntry)]
        first, second = entries
        assert first.usage_estimated and "input_tokens" in first.usage_note
        assert not second.usage_estimated and second.usage_note == ""
        summary = session.cost()
        assert summary.estimated == 1 and summary.requests == 2
        assert summary.total_usd is not None and summary.total_usd >= 0
    finally:
        await model.aclose()
        await runtime.close()
