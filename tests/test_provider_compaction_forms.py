"""Provider compaction's values: the stored form, the message it opens with in each wire format,
the usage it is billed, the capability per model and the price test of ``compaction="auto"``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.boundary import build_request, window_of
from agentsession.compaction import provider_compaction_request, provider_is_cheaper
from agentsession.log import ProviderCompaction, Summary
from agentsession.log.stored import VERSIONS, dump_entry, load_entry
from agentsession.projection import SUMMARY_PREFIX, ViewMessage, summary_message
from agentsession.providers import lower
from agentsession.providers.profiles import profile_for

FIXTURE = Path(__file__).parent / "fixtures" / "log_summary_v2.jsonl"

BLOCK = {
    "type": "compaction",
    "content": "Summary by the provider.",
    "encrypted_content": "enc_9f2c",
    "signature": "sig_41d0",
}


def test_frozen_summaries_keep_loading_and_version_2_is_written_as_frozen() -> None:
    assert VERSIONS["summary"] == 2
    lines = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    loaded = [load_entry(line["kind"], line["version"], json.dumps(line["data"])) for line in lines]
    old, local, provided = loaded
    assert isinstance(old, Summary) and old.block is None and old.covers_until == 7
    assert isinstance(local, Summary) and local.block is None
    assert isinstance(provided, Summary) and provided.block is not None
    assert provided.block.format == "anthropic-messages"
    assert json.dumps(provided.block.block) == json.dumps(BLOCK)  # key order kept too
    kind, version, text = dump_entry(provided)
    assert (kind, version) == ("summary", 2)
    assert json.loads(text) == lines[2]["data"]


def _request(block: ProviderCompaction | None) -> ags.Request:
    summary = Summary("Summary by the provider.", 14, "", block)
    return ags.Request(
        system=(("core", "You help."),),
        messages=(summary_message(summary), ags.UserMessage("go on")),
    )


def test_anthropic_replays_the_block_and_a_local_summary_stays_a_user_message() -> None:
    request = _request(ProviderCompaction("anthropic-messages", dict(BLOCK)))
    body = lower(request, "anthropic-messages", model="claude-opus-4-8")
    assert body["messages"][0] == {"role": "assistant", "content": [BLOCK]}
    local = lower(_request(None), "anthropic-messages", model="claude-opus-4-8")
    assert local["messages"][0]["role"] == "user"


def test_another_provider_gets_the_summary_text_not_the_block() -> None:
    """After a switch, the epoch's request for another provider opens with the text."""
    block = ProviderCompaction("anthropic-messages", dict(BLOCK))
    view = [
        ViewMessage(summary_message(Summary("Summary by the provider.", 14, "", block)), (14,)),
        ViewMessage(ags.UserMessage("go on"), (16,)),
    ]
    view[0] = ViewMessage(view[0].message, (14,), summary=True)
    window = window_of(view, ags.Config())
    same = build_request(view, window, (("core", "x"),), [], "anthropic")
    assert isinstance(same.messages[0], ags.AssistantMessage) and same.messages[0].provider_data
    other = build_request(view, window, (("core", "x"),), [], "openai")
    first = other.messages[0]
    assert isinstance(first, ags.UserMessage)
    assert first.content == SUMMARY_PREFIX + "Summary by the provider."
    for fmt in ("openai-chat", "openai-responses", "gemini", "anthropic-messages"):
        text = json.dumps(lower(other, fmt, model="m"))
        assert "Summary by the provider." in text and "enc_9f2c" not in text


OPENAI_OUTPUT = {
    "output": [
        {
            "id": "msg_1",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": "check record 1"}],
        },
        {"id": "cmp_1", "type": "compaction", "encrypted_content": "enc_77aa"},
    ]
}


def test_responses_replays_the_compacted_items_and_other_formats_get_the_text() -> None:
    block = ProviderCompaction("openai-responses", json.loads(json.dumps(OPENAI_OUTPUT)))
    request = _request(block)
    body = lower(request, "openai-responses", model="gpt-5.6-terra")
    # the items exactly as returned, no assistant text beside them, then the new prompt
    assert body["input"][:2] == OPENAI_OUTPUT["output"]
    assert json.dumps(body["input"][:2]) == json.dumps(OPENAI_OUTPUT["output"])
    assert body["input"][2] == {"type": "message", "role": "user", "content": "go on"}
    summary = Summary("USER: check record 1", 14, "", block)
    view = [
        ViewMessage(summary_message(summary), (14,), summary=True),
        ViewMessage(ags.UserMessage("go on"), (16,)),
    ]
    window = window_of(view, ags.Config())
    other = build_request(view, window, (("core", "x"),), [], "anthropic")
    first = other.messages[0]
    assert isinstance(first, ags.UserMessage) and "USER: check record 1" in str(first.content)
    text = json.dumps(lower(other, "anthropic-messages", model="claude-opus-4-8"))
    assert "enc_77aa" not in text


def test_compaction_iterations_are_billed_once() -> None:
    pytest.importorskip("anthropic")
    from anthropic.types.beta import BetaUsage

    from agentsession.providers.anthropic_client import _usage

    usage = BetaUsage.model_validate(
        {
            "input_tokens": 100,
            "output_tokens": 50,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 0,
            "iterations": [
                {
                    "type": "compaction",
                    "input_tokens": 20,
                    "output_tokens": 300,
                    "cache_read_input_tokens": 5000,
                    "cache_creation_input_tokens": 40,
                },
                {
                    "type": "message",
                    "input_tokens": 100,
                    "output_tokens": 50,
                    "cache_read_input_tokens": 1000,
                    "cache_creation_input_tokens": 0,
                },
            ],
        }
    )
    found = _usage(usage)
    # the top-level figures (the message iteration) plus the compaction iteration, once each
    assert found.input_tokens == 1100 + 5060
    assert found.cached_input_tokens == 6000
    assert found.cache_write_tokens == 40
    assert found.output_tokens == 350


def test_which_models_compact_at_the_provider() -> None:
    assert profile_for("anthropic", "claude-opus-4-8").provider_compaction
    assert profile_for("anthropic", "claude-sonnet-4-6").provider_compaction
    assert not profile_for("anthropic", "claude-3-5-haiku").provider_compaction
    # OpenAI's ``responses.compact``: the Responses format only (the client checks the SDK).
    assert profile_for("openai", "gpt-5.6-terra").provider_compaction
    assert not profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat").provider_compaction
    assert not ags.ModelProfile().provider_compaction


def test_the_provider_compacts_only_a_finished_turn() -> None:
    done = ags.Request(messages=(ags.UserMessage("a"), ags.AssistantMessage("b")))
    assert provider_compaction_request(done) is done
    calling = ags.Request(
        messages=(ags.UserMessage("a"), ags.AssistantMessage("", (ags.ToolCall("t", {}, "c"),)))
    )
    assert provider_compaction_request(calling) is None
    assert provider_compaction_request(ags.Request()) is None


def test_auto_price_test() -> None:
    dear = ags.ModelPrice(input=5.0, cached_input=0.5, output=25.0)
    cheap = ags.ModelPrice(input=0.1, cached_input=0.01, output=0.4)

    def cheaper(warm: bool, local: ags.ModelPrice | None) -> bool:
        return provider_is_cheaper(
            prefix_tokens=100_000,
            warm=warm,
            provider_price=dear,
            local_tokens=40_000,
            local_price=local,
        )

    # The dear model reading 100K tokens from its cache beats nothing cheaper than itself...
    assert cheaper(True, dear)
    # ...but a far cheaper summariser sending 40K uncached tokens wins.
    assert not cheaper(True, cheap)
    # Cold, the provider pays the full input: the same model sent less wins.
    assert not cheaper(False, dear)
    # No price is no evidence against the provider.
    assert cheaper(False, None)


def test_auto_price_test_for_a_compaction_that_cannot_read_the_cache() -> None:
    """OpenAI's compaction takes no tools: with tools it reads nothing from the cache."""
    price = ags.ModelPrice(input=2.0, cached_input=0.2, output=12.0)

    def cheaper(warm: bool, reads: bool) -> bool:
        return provider_is_cheaper(
            prefix_tokens=95_000,  # the live request without its tools
            warm=warm,
            provider_price=price,
            local_tokens=100_500,  # the live request and the instruction
            local_price=price,
            provider_reads_cache=reads,
            local_cached_tokens=100_000,
        )

    assert not cheaper(True, False)  # warm: the local summary reads 100K from the cache
    assert cheaper(True, True)  # a compaction that reads it too is sent less
    assert cheaper(False, False)  # cold: both pay full price, the provider is sent less


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(block=st.dictionaries(st.text(max_size=12), _JSON, max_size=6))
def test_any_block_is_stored_and_read_back_as_sent(block: dict[str, object]) -> None:
    """Whatever the server's block holds, the stored form gives back the same JSON text."""
    entry = Summary(
        "text", 3, "", ProviderCompaction("anthropic-messages", {"type": "compaction", **block})
    )
    kind, version, text = dump_entry(entry)
    loaded = load_entry(kind, version, text)
    assert isinstance(loaded, Summary) and loaded.block is not None
    sent = json.dumps(entry.block.block if entry.block else None)
    assert json.dumps(loaded.block.block) == sent
