"""Property: after a compaction the server made inside a reply, lowering is always valid.

The epoch such a compaction opens starts with the block (the summary's assistant message)
followed by the rest of the reply, its tool results and whatever came after. Whatever that
rest holds (text or not, one call or several, signed reasoning replayed, more steps, a new
prompt), the Anthropic body passes the format's checks, opens with one assistant message
whose first block is the stored block unchanged and whose other blocks are the reply's, and
answers each of its calls in the user turn right after it.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.log import ProviderCompaction, Summary
from agentsession.projection import summary_message
from agentsession.providers.lower import lower
from agentsession.providers.profiles import profile_for
from agentsession.request import (
    AssistantMessage,
    Message,
    Request,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

FMT = "anthropic-messages"
PROFILE = profile_for("anthropic", "claude-opus-4-8")
BLOCK = {
    "type": "compaction",
    "content": "## Goal\nDig.",
    "encrypted_content": "enc_0f",
    "signature": "sig_0f",
}

words = st.text(alphabet="abcdefgh ", min_size=1, max_size=12).filter(str.strip)


def _use(call: ToolCall) -> dict[str, object]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}


@st.composite
def steps(draw: st.DrawFn, first: int) -> list[Message]:
    """One reply (text and/or calls) and a result for each of its calls."""
    count = draw(st.integers(min_value=1, max_value=3))
    calls = tuple(ToolCall("dump", {"part": i}, id=f"toolu_{first}_{i}") for i in range(count))
    text = draw(st.one_of(st.just(""), words))
    data: dict[str, object] = {}
    if draw(st.booleans()):  # signed reasoning: the reply goes back as its replay content
        blocks: list[dict[str, object]] = [{"type": "thinking", "thinking": "hm", "signature": "s"}]
        blocks += [{"type": "text", "text": text}] if text else []
        blocks += [_use(c) for c in calls]
        data = {FMT: {"content": blocks}}
    reply = AssistantMessage(text, calls, provider="anthropic", provider_data=data)
    results = [ToolResultMessage(c.id, c.name, f"part {i}") for i, c in enumerate(calls)]
    return [reply, *results]


@st.composite
def epochs(draw: st.DrawFn) -> list[Message]:
    """The new epoch's messages after the block: the compacted reply's step, then more."""
    messages: list[Message] = []
    for n in range(draw(st.integers(min_value=1, max_value=3))):
        messages += draw(steps(n))
    if draw(st.booleans()):
        messages.append(AssistantMessage(draw(words)))
        messages.append(UserMessage(draw(words)))
    elif draw(st.booleans()):
        messages.append(UserMessage(draw(words)))  # steered in after the results
    return messages


@settings(max_examples=60, deadline=None)
@given(epochs())
def test_lowering_after_a_block_inside_a_reply_is_valid(rest: list[Message]) -> None:
    stored = copy.deepcopy(BLOCK)
    opening = summary_message(Summary("## Goal\nDig.", 10, block=ProviderCompaction(FMT, stored)))
    request = Request((("core.agent", "You dig."),), (opening, *rest))
    body = lower(request, FMT, profile=PROFILE, model="claude-opus-4-8")  # validates
    first, second = body["messages"][0], body["messages"][1]
    assert first["role"] == "assistant"
    assert first["content"][0] == BLOCK and stored == BLOCK  # sent and kept unchanged
    reply = rest[0]
    assert isinstance(reply, AssistantMessage)
    uses = [b for b in first["content"][1:] if b["type"] == "tool_use"]
    assert [u["id"] for u in uses] == [c.id for c in reply.tool_calls]
    assert all(b["type"] != "compaction" for b in first["content"][1:])
    answered = [b["tool_use_id"] for b in second["content"] if b["type"] == "tool_result"]
    assert second["role"] == "user" and answered == [c.id for c in reply.tool_calls]
    # Exactly one block in the body: nothing else was merged into or out of the opening.
    assert sum(b.get("type") == "compaction" for m in body["messages"] for b in m["content"]) == 1
