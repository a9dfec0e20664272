"""Memoised encodings give exactly what encoding afresh gives.

Digests are stored on dispatch records and compared after a reopen, by another version of the
package too: the memoised digest must be the very text-and-hash of the plain encoding. Token
counts memoised per message must follow the counter's calibration.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Protocol, runtime_checkable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession._memo import IdentityMemo, PrefixMemo, conforms
from agentsession.boundary import _mids, _view_mids
from agentsession.budget import EstimateCounter, measure, total_tokens
from agentsession.codec import canonical_json, encode, one_shot
from agentsession.log import Dispatch, MidConversationSystemMessage, Record, UserEntry
from agentsession.log.fingerprint import fingerprinted
from agentsession.providers.scripted import ScriptedModel
from agentsession.request import (
    Message,
    Request,
    SystemMessage,
    UserMessage,
    digest,
    introduced_in_place,
    standing_tools,
    text_of,
)

sys.path.insert(0, str(Path(__file__).parent / "providers"))
from test_provider_property import TOOLS, histories

texts = st.text(max_size=40)  # lone surrogates and any other code point included


def plain_digest(request: Request) -> str:
    """The digest as the package computed it before memoisation (the stored form's meaning)."""
    payload = {
        "system": encode(request.system),
        "messages": encode(request.messages),
        "tools": encode(request.tools),
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@settings(max_examples=100, deadline=None)
@given(
    messages=histories(),
    system=st.lists(st.tuples(st.sampled_from(["core.agent", "core.date", "x"]), texts)),
    tools=st.lists(st.integers(0, len(TOOLS) - 1), unique=True),
    extra=texts,
)
def test_memoised_digest_is_the_plain_digest(
    messages: tuple[Message, ...], system: list[tuple[str, str]], tools: list[int], extra: str
) -> None:
    declared = tuple(TOOLS[i] for i in tools)
    request = Request(tuple(system), (*messages, UserMessage(extra)), declared)
    first = digest(request)
    assert first == plain_digest(request)
    assert digest(request) == first  # second time from the memo
    # A changed message (a new object) is encoded afresh, never confused with the old one.
    changed = replace(request, messages=(*request.messages[:-1], UserMessage(extra + "!")))
    assert digest(changed) == plain_digest(changed) != first


def test_canonical_json_is_json_dumps_of_the_encoding() -> None:
    value = (SystemMessage("a\u2028b", ("t",)), UserMessage("é\ud800"), ("k", "v"))
    assert canonical_json(value) == json.dumps(encode(value), sort_keys=True, ensure_ascii=False)
    assert canonical_json(()) == "[]"


@settings(max_examples=100, deadline=None)
@given(pairs=st.lists(st.tuples(texts, texts)).map(tuple), extra=texts)
def test_a_tuple_of_strings_is_encoded_once_and_a_tuple_that_can_change_every_time(
    pairs: tuple[tuple[str, str], ...], extra: str
) -> None:
    plain = json.dumps(encode(pairs), sort_keys=True, ensure_ascii=False)
    assert canonical_json(pairs) == plain
    assert canonical_json(pairs) == plain  # from the memo
    holder: list[str] = []
    changing = (pairs, holder)  # holds a list: never memoised
    canonical_json(changing)
    holder.append(extra)
    assert canonical_json(changing) == json.dumps(
        encode(changing), sort_keys=True, ensure_ascii=False
    )


def test_identity_memo_never_answers_for_another_object() -> None:
    memo: IdentityMemo[int] = IdentityMemo(size=4)
    keys = [UserMessage(f"m{i}") for i in range(10)]
    for i, key in enumerate(keys):
        memo.put(key, i)
    assert len(memo) <= 4
    assert memo.get(keys[-1]) == 9
    assert memo.get(UserMessage("m9")) is None  # equal but not the same object
    assert all(memo.get(k) in (None, i) for i, k in enumerate(keys))


def test_a_held_identity_memo_drops_nothing_until_the_hold_ends() -> None:
    memo: IdentityMemo[int] = IdentityMemo(size=4)
    keys = [UserMessage(f"m{i}") for i in range(10)]
    with memo.held():
        with memo.held():  # holds nest: the inner one ending drops nothing
            for i, key in enumerate(keys[:6]):
                memo.put(key, i)
        for i, key in enumerate(keys[6:], start=6):
            memo.put(key, i)
        assert [memo.get(k) for k in keys] == list(range(10))
    assert len(memo) == 2  # the newest half of its size is kept
    assert [memo.get(k) for k in keys] == [None] * 8 + [8, 9]
    for i, key in enumerate(keys[:3]):
        memo.put(key, i)
    assert len(memo) <= 4  # bounded again


def test_canonical_texts_made_under_a_hold_are_found_again() -> None:
    from agentsession.codec import canonical_json_seen, canonical_texts_held
    from agentsession.codec._encoding import _CANONICAL

    messages = [UserMessage(f"held {i}") for i in range(20_000)]  # more than the memo holds
    with canonical_texts_held():
        texts = [canonical_json(m) for m in messages]
        assert all(_CANONICAL.get(m) is t for m, t in zip(messages, texts, strict=True))
        assert [canonical_json_seen(m) for m in messages] == texts
    assert _CANONICAL.get(messages[0]) is None  # dropped once the hold ended
    assert texts[0] == json.dumps(encode(messages[0]), sort_keys=True, ensure_ascii=False)


def test_memoised_token_counts_follow_calibration() -> None:
    counter = EstimateCounter()
    request = Request((("core.agent", "You help. " * 30),), (UserMessage("word " * 200),))
    before = measure(request, counter)
    assert measure(request, counter) == before
    counter.calibrate(1_000, 2_000)
    after = measure(request, counter)
    assert after.total > before.total
    assert after == measure(request, EstimateCounter(counter.scale))
    assert total_tokens(request, counter) == after.total
    counter.calibrate(1_000, 500)
    assert total_tokens(request, counter) == measure(request, counter).total < after.total


def test_prefix_memo_resumes_only_from_the_very_objects_it_folded() -> None:
    memo: PrefixMemo[int] = PrefixMemo(size=4)
    a, b, c = UserMessage("a"), UserMessage("b"), UserMessage("c")
    assert memo.resume((a, b)) is None and memo.resume(()) is None
    memo.keep((a, b), 2)
    assert memo.resume((a, b)) == (2, 2)
    assert memo.resume((a, b, c)) == (2, 2)
    assert memo.resume((a,)) is None  # shorter than what was folded
    assert memo.resume((a, UserMessage("b"), c)) is None  # equal, but another object
    assert memo.resume((b, a)) is None
    for i in range(10):
        memo.keep((UserMessage(str(i)),), i)
    assert memo.resume((a, b)) in (None, (2, 2))  # bounded: may be dropped, never wrong


async def guessed_usage(request: Request) -> int:
    model = ScriptedModel(["ok"])
    events = [e async for e in model.stream(request)]
    done = events[-1]
    assert hasattr(done, "usage")
    return int(done.usage.input_tokens)


def plain_guess(request: Request) -> int:
    texts = [t for _, t in request.system] + [text_of(m.content) for m in request.messages]
    return sum(max(1, len(t) // 4) if t else 0 for t in texts)


@settings(max_examples=60, deadline=None)
@given(messages=histories(), cut=st.integers(0, 6), extra=texts)
def test_a_request_resumes_the_digest_chain_and_counts_of_the_one_it_extends(
    messages: tuple[Message, ...], cut: int, extra: str
) -> None:
    # A session's requests grow, and sometimes shrink, lose their front or change their end;
    # every figure resumed from an earlier request must be the one computed afresh.
    counter = EstimateCounter()
    system = (("core.agent", "You help."), ("core.date", extra))
    shorter = messages[: max(1, len(messages) - cut)]
    added = UserMessage(extra)
    for step in (
        shorter,
        messages,
        (*messages, added),
        shorter,
        messages[1:],
        (*messages[:-1], added),
        (*messages, added, UserMessage(extra + "?")),
    ):
        request = Request(system, step, TOOLS[:2])
        assert digest(request) == plain_digest(request)
        stamped = fingerprinted(Dispatch("m", 1, digest(request)), request, None)
        assert stamped.messages_digest == plain_chain(step)
        assert total_tokens(request, counter) == measure(request, counter).total
        assert asyncio.run(guessed_usage(request)) == plain_guess(request)
        assert introduced_in_place(request) == plain_in_place(step)


def plain_in_place(messages: tuple[Message, ...]) -> set[str]:
    """Tools whose first mention is an addition on a system message, every message read."""
    first: dict[str, str] = {}
    for message in messages:
        if isinstance(message, SystemMessage):
            for name in message.tools_removed:
                first.setdefault(name, "removed")
            for name in message.tools_added:
                first.setdefault(name, "added")
    return {name for name, how in first.items() if how == "added"}


@settings(max_examples=60, deadline=None)
@given(messages=histories(), extra=texts)
def test_a_fingerprint_and_count_from_kept_parts_are_the_ones_computed_afresh(
    messages: tuple[Message, ...], extra: str
) -> None:
    # The system part and the tool tuple come back as the same objects step after step, and
    # their digests and counts are kept for the object: they must equal a fresh computation.
    counter = EstimateCounter()
    system = (("core.agent", "You help."), ("core.date", extra))
    tools = TOOLS[:2]
    previous: Dispatch | None = None
    for step in (messages[:1], messages, messages[:1], messages):
        request = Request(system, step, tools)
        dispatch = Dispatch("m", 3, digest(request), timestamp="t")
        stamped = fingerprinted(dispatch, request, previous)
        fresh = copy.deepcopy(request)  # other objects: nothing found in any memo
        assert stamped == replace(
            dispatch,
            tools_digest=plain_part(standing_tools(fresh)),
            system_digest=plain_part(fresh.system),
            messages_digest=plain_chain(step),
            message_count=len(step),
            cache=stamped.cache,
        )
        assert total_tokens(request, counter) == measure(fresh, counter).total
        previous = stamped


def plain_part(value: object) -> str:
    text = json.dumps(encode(value), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def plain_chain(messages: tuple[Message, ...]) -> str:
    link = ""
    for message in messages:
        text = json.dumps(encode(message), sort_keys=True, ensure_ascii=False)
        part = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        link = hashlib.sha256((link + part).encode()).hexdigest()[:32]
    return link


def test_message_chain_memo_depends_on_what_came_before() -> None:
    a, b, c = UserMessage("a"), UserMessage("b"), UserMessage("c")
    for messages in ((a, b, c), (a, b, c, UserMessage("d")), (b, c), (c,), (a, c), (a, b, c)):
        request = Request((), messages)
        stamped = fingerprinted(Dispatch("m", 1, digest(request)), request, None)
        assert stamped.messages_digest == plain_chain(messages)
        assert stamped.message_count == len(messages)


@runtime_checkable
class Greets(Protocol):
    def greet(self) -> str: ...


@runtime_checkable
class Counts(Protocol):
    def count(self, text: str) -> int: ...


class Greeter:
    def greet(self) -> str:
        return "hi"


class Both(Greeter):
    def count(self, text: str) -> int:
        return len(text)


def test_conforms_answers_as_isinstance_for_each_class_and_protocol() -> None:
    # Asked twice each, in both orders: a kept answer must belong to its class and protocol.
    for _ in range(2):
        for obj in (Greeter(), Both(), object(), "text", 3):
            for protocol in (Greets, Counts):
                assert conforms(obj, protocol) == isinstance(obj, protocol)
    assert conforms(Both(), Counts) and not conforms(Greeter(), Counts)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(value=_json_values, ascii_only=st.booleans(), sort=st.booleans())
def test_a_one_shot_encoder_writes_what_its_settings_encode(
    value: object, ascii_only: bool, sort: bool
) -> None:
    settings = json.JSONEncoder(ensure_ascii=ascii_only, sort_keys=sort, separators=(",", ":"))
    assert one_shot(settings)(value) == settings.encode(value)


def test_a_one_shot_encoder_refuses_as_its_settings_do_and_goes_on_working() -> None:
    encode_once = one_shot(json.JSONEncoder(sort_keys=True))
    circle: list[object] = []
    circle.append(circle)
    with pytest.raises(ValueError, match="Circular reference"):
        encode_once(circle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode_once({"a": [1, {2}]})
    # The refusals left nothing behind in its circle check.
    nested = {"b": [1, {"c": [2.5, None]}], "a": "é"}
    assert encode_once(nested) == json.dumps(nested, sort_keys=True)
    assert encode_once(nested) == encode_once(nested)


@settings(max_examples=60, deadline=None)
@given(
    kinds=st.lists(st.booleans(), min_size=1, max_size=12),
    cuts=st.lists(st.integers(0, 12), min_size=1, max_size=6),
)
def test_update_messages_resumed_from_an_earlier_view_are_the_ones_found_afresh(
    kinds: list[bool], cuts: list[int]
) -> None:
    # An epoch view grows step after step (the same record objects, a few more); it may also
    # shrink or lose its front. Each answer must be the one a walk over every record gives.
    records = [
        Record(i, MidConversationSystemMessage(f"m{i}", (), 0) if mid else UserEntry(f"u{i}"))
        for i, mid in enumerate(kinds)
    ]
    for cut in [*cuts, len(records)]:
        for view in (records[:cut], records[cut // 2 : cut]):
            assert list(_view_mids(view)) == _mids(view)
