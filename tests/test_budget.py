"""Token counting and preflight: breakdown, budget edge, calibration, the offline exact counter."""

from __future__ import annotations

import gzip
import hashlib
import math
import socket
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession import budget
from agentsession.budget import (
    IMAGE_TOKENS,
    MESSAGE_OVERHEAD,
    REQUEST_OVERHEAD,
    SECTION_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    TOOL_OVERHEAD,
    EstimateCounter,
    Measurement,
    TiktokenCounter,
    TokenCounter,
    calibrate,
    counter_for,
    default_counter,
    encoding_for_model,
    exact_counter,
    measure,
    preflight,
)
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


def test_long_texts_are_cached_by_digest() -> None:
    e = EstimateCounter()
    long = PROSE * 20
    first = e.count(long)
    assert e.count(long) == first
    assert e.base(long) == budget._base_estimate(long)
    assert len(e._cache) == 1
    assert all(isinstance(k, bytes) and len(k) == 16 for k in e._cache)


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


# --- exact counting -----------------------------------------------------------------------


def test_encoding_for_model() -> None:
    assert encoding_for_model("gpt-4.1") == "o200k_base"
    assert encoding_for_model("openai:gpt-4o-mini") == "o200k_base"
    assert encoding_for_model("o3") == "o200k_base"
    assert encoding_for_model("o4-mini") == "o200k_base"
    assert encoding_for_model("gpt-5") == "o200k_base"
    assert encoding_for_model("gpt-4") == "cl100k_base"
    assert encoding_for_model("gpt-4-turbo") == "cl100k_base"
    assert encoding_for_model("gpt-3.5-turbo") == "cl100k_base"
    assert encoding_for_model("anthropic:claude-sonnet-4") is None
    assert encoding_for_model("openai-compatible:llama3") is None
    assert encoding_for_model("gemini:gemini-2.5-pro") is None
    assert encoding_for_model("o3x") is None


def rank_file(name: str) -> bytes | None:
    """The verified rank file as installed here (tiktoken cache or a shipping package)."""
    sha = budget._ENCODINGS[name].sha256
    for path in budget._candidates(name, ()):
        data = budget._read_verified(path, sha)
        if data is not None:
            return data
    return None


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No loaded encodings, an empty tiktoken cache and no shipping packages."""
    monkeypatch.setattr(budget, "_loaded", {})
    monkeypatch.setattr(budget, "_missing", set())
    monkeypatch.setattr(budget, "_package_dirs", list)
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return tmp_path


def test_no_rank_file_means_no_exact_counter(isolated: Path) -> None:
    assert exact_counter("o200k_base") is None
    assert budget._missing == {"o200k_base"}
    assert exact_counter("p50k_base") is None  # not a supported encoding
    fallback = EstimateCounter()
    assert counter_for("gpt-4.1", fallback=fallback) is fallback
    assert isinstance(counter_for("anthropic:claude-opus-4"), EstimateCounter)


def test_a_file_with_the_wrong_hash_is_ignored(isolated: Path) -> None:
    bogus = isolated / "o200k_base.tiktoken"
    bogus.write_bytes(b"aGVsbG8= 0\n")
    assert exact_counter("o200k_base", search=[isolated]) is None
    assert exact_counter("o200k_base", search=[bogus]) is None
    broken = isolated / "broken" / "o200k_base.tiktoken.gz"
    broken.parent.mkdir()
    broken.write_bytes(b"\x1f\x8b not really gzip")
    assert exact_counter("o200k_base", search=[broken.parent]) is None


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_rank_file_from_a_search_folder_gzipped_or_plain(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    data = _installed_rank_file(name)
    folder = isolated / "ranks"
    folder.mkdir()
    (folder / f"{name}.tiktoken.gz").write_bytes(gzip.compress(data))
    counter = exact_counter(name, search=[folder])
    assert isinstance(counter, TiktokenCounter)
    assert counter.count("hello world") == 2
    # and from tiktoken's own download cache, under its key
    monkeypatch.setattr(budget, "_loaded", {})
    key = hashlib.sha1(budget._URL.format(name).encode()).hexdigest()
    (isolated / "cache" / key).write_bytes(data)
    assert exact_counter(name) is not None


_RANK_FILES: dict[str, bytes | None] = {}


def _installed_rank_file(name: str) -> bytes:
    if name not in _RANK_FILES:
        _RANK_FILES[name] = rank_file(name)
    data = _RANK_FILES[name]
    if data is None:
        pytest.skip(f"no offline {name} rank file installed")
    return data


@pytest.fixture(scope="module", autouse=True)
def _remember_rank_files() -> None:
    # Read before any test isolates the installation.
    pytest.importorskip("tiktoken")
    for name in ("o200k_base", "cl100k_base"):
        _RANK_FILES[name] = rank_file(name)


@pytest.mark.parametrize(
    ("name", "ids"), [("o200k_base", [24912, 2375]), ("cl100k_base", [15339, 1917])]
)
def test_exact_counter_matches_published_token_ids(name: str, ids: list[int]) -> None:
    _installed_rank_file(name)
    counter = exact_counter(name)
    assert counter is not None
    assert counter._encoding.encode_ordinary("hello world") == ids
    assert counter.count("<|endoftext|>") > 1  # special-token text is plain text


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_exact_counter_agrees_with_tiktoken(text: str) -> None:
    for name in ("o200k_base", "cl100k_base"):
        reference = _tiktoken_reference(name)
        if reference is None:
            continue
        counter = exact_counter(name)
        assert counter is not None
        assert counter.count(text) == len(reference.encode_ordinary(text))
        assert counter._encoding.encode_ordinary(text) == reference.encode_ordinary(text)


_REFERENCES: dict[str, Any] = {}


def _tiktoken_reference(name: str) -> Any:
    """tiktoken's own registry encoding, loaded from a seeded cache with downloads disabled."""
    if name in _REFERENCES:
        return _REFERENCES[name]
    data = _RANK_FILES.get(name)
    if data is None:
        _REFERENCES[name] = None
        return None
    import os
    import tempfile

    import tiktoken
    import tiktoken.load
    import tiktoken.registry

    with tempfile.TemporaryDirectory() as cache, pytest.MonkeyPatch.context() as m:
        key = hashlib.sha1(budget._URL.format(name).encode()).hexdigest()
        Path(cache, key).write_bytes(data)
        m.setenv("TIKTOKEN_CACHE_DIR", cache)

        def no_download(blobpath: str) -> bytes:
            raise AssertionError(f"tiktoken tried to download {blobpath}")

        m.setattr(tiktoken.load, "read_file", no_download)
        # a fresh registry entry, so this really is tiktoken's own constructor at work
        m.setattr(tiktoken.registry, "ENCODINGS", {})
        encoding = tiktoken.get_encoding(name)
        assert os.environ["TIKTOKEN_CACHE_DIR"] == cache
    _REFERENCES[name] = encoding
    return encoding


def test_counter_for_prefers_the_exact_counter_when_installed() -> None:
    if _RANK_FILES.get("o200k_base") is None:
        pytest.skip("no offline o200k_base rank file installed")
    assert isinstance(counter_for("openai:gpt-4.1"), TiktokenCounter)
    assert isinstance(counter_for("anthropic:claude-sonnet-4"), EstimateCounter)
