"""Hypothesis strategies for every log entry kind, shared by the store and session-file tests."""

from __future__ import annotations

from typing import Any, get_args

from hypothesis import strategies as st

from agentsession.log import (
    ApprovalDecided,
    ApprovalRequested,
    ApprovalsDropped,
    AssistantEntry,
    CacheDiagnosis,
    ComponentChange,
    ContextEpoch,
    Dispatch,
    EpochReason,
    InputCancelled,
    InputDelivered,
    InputQueued,
    InstructionsFound,
    Interrupted,
    MidConversationSystemMessage,
    ModelSwitched,
    Omitted,
    PermissionChanged,
    ProviderFailed,
    RuntimeContextSnapshot,
    SideCall,
    SkillActivated,
    SkillLoaded,
    SkillRevision,
    SkillStoreWrite,
    SkillUnloaded,
    Summary,
    SystemPromptCheckpoint,
    ToolLoaded,
    ToolResultEntry,
    ToolUnloaded,
    UserEntry,
)
from agentsession.request import ImagePart, TextPart, ToolCall, Usage

# Any unicode, surrogates included, plus strings that look like the markup the context uses.
_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=40),
    st.sampled_from(
        [
            "</skill>",
            '<skill name="pdf">',
            "<current_context>\n</current_context>",
            "\x00\u2028\u2029\r\n",
            '{"json": "in text"}',
            "🙂👩‍💻",
            "",
        ]
    ),
)
_small_int = st.integers(min_value=-(2**63), max_value=2**63)
_json: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_json_object = st.dictionaries(_text, _json, max_size=4)
_part = st.one_of(
    st.builds(TextPart, text=_text),
    st.builds(
        ImagePart,
        media_type=st.sampled_from(["image/png", "image/jpeg"]),
        data=st.none() | st.text("ABCDEFGHabcdefgh0123456789+/=", max_size=40),
        url=st.none() | st.just("https://example.com/a.png?x=1&y=</skill>"),
    ),
)
_content = st.one_of(_text, st.lists(_part, max_size=4).map(tuple))
_pairs = st.lists(st.tuples(_text, _text), max_size=4).map(tuple)
_names = st.lists(_text, max_size=3).map(tuple)
_tool_call = st.builds(ToolCall, name=_text, arguments=_json_object, id=_text)
_usage = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**7),
    output_tokens=st.integers(0, 10**7),
    cached_input_tokens=st.integers(0, 10**7),
    cache_write_tokens=st.integers(0, 10**7),
)
_change = st.builds(
    ComponentChange,
    key=_text,
    update=st.none() | _text,
    baseline=st.none() | _text,
    hash=st.none() | _text,
)

ENTRY_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "user": st.builds(UserEntry, content=_content, timestamp=_text),
    "assistant": st.builds(
        AssistantEntry,
        content=_text,
        tool_calls=st.lists(_tool_call, max_size=3).map(tuple),
        provider=_text,
        provider_data=_json_object,
        model=_text,
        usage=_usage,
        timestamp=_text,
    ),
    "tool_result": st.builds(
        ToolResultEntry,
        call_id=_text,
        name=_text,
        content=_content,
        is_error=st.booleans(),
        timestamp=_text,
    ),
    "mid_conversation_system": st.builds(
        MidConversationSystemMessage,
        text=_text,
        changes=st.lists(_change, max_size=3).map(tuple),
        epoch=_small_int,
        tools_added=_names,
        tools_removed=_names,
        timestamp=_text,
    ),
    "epoch": st.builds(
        ContextEpoch,
        epoch=_small_int,
        baseline=_pairs,
        checkpoint=_pairs,
        history_start=_small_int,
        reason=st.sampled_from(get_args(EpochReason)),
        model=_text,
        removed=_names,
        summary_seq=st.none() | _small_int,
        timestamp=_text,
        tools=st.none() | _names,
    ),
    "system_prompt_checkpoint": st.builds(
        SystemPromptCheckpoint,
        message_count=_small_int,
        timestamp=_text,
        changed=st.dictionaries(_text, st.none() | _text, max_size=4),
    ),
    "dispatch": st.builds(
        Dispatch,
        model=_text,
        step=_small_int,
        digest=_text,
        cache=st.sampled_from(get_args(CacheDiagnosis)),
        timestamp=_text,
        tools_digest=_text,
        system_digest=_text,
        messages_digest=_text,
        message_count=_small_int,
    ),
    "provider_failed": st.builds(ProviderFailed, error=_text, error_type=_text, timestamp=_text),
    "interrupted": st.builds(Interrupted, reason=_text, timestamp=_text),
    "summary": st.builds(Summary, text=_text, covers_until=_small_int, timestamp=_text),
    "model_switched": st.builds(ModelSwitched, model=_text, previous=_text, timestamp=_text),
    "runtime_context": st.builds(
        RuntimeContextSnapshot,
        user_turn=_small_int,
        content=_text,
        timestamp=_text,
        skills=st.lists(
            st.builds(SkillRevision, name=_text, location=_text, revision=_text), max_size=3
        ).map(tuple),
        placement=st.sampled_from(["user", None]),
    ),
    "omitted": st.builds(Omitted, seq=_small_int, tokens=_small_int, timestamp=_text),
    "permission_changed": st.builds(
        PermissionChanged, preset=_text, previous=_text, timestamp=_text
    ),
    "skill_loaded": st.builds(
        SkillLoaded, name=_text, revision=_text, location=_text, call_id=_text, timestamp=_text
    ),
    "skill_unloaded": st.builds(
        SkillUnloaded, name=_text, revision=_text, call_id=_text, timestamp=_text
    ),
    "skill_activated": st.builds(SkillActivated, name=_text, call_id=_text, timestamp=_text),
    "tool_loaded": st.builds(ToolLoaded, name=_text, call_id=_text, timestamp=_text),
    "tool_unloaded": st.builds(ToolUnloaded, name=_text, call_id=_text, timestamp=_text),
    "input_queued": st.builds(
        InputQueued,
        input_id=_text,
        mode=st.sampled_from(["steer", "queue"]),
        text=_text,
        timestamp=_text,
    ),
    "input_delivered": st.builds(
        InputDelivered,
        input_id=_text,
        mode=st.sampled_from(["steer", "queue"]),
        timestamp=_text,
    ),
    "input_cancelled": st.builds(InputCancelled, input_id=_text, timestamp=_text),
    "skill_store": st.builds(
        SkillStoreWrite,
        skill=_text,
        key=_text,
        value=st.sampled_from(["null", '{"a": [1, 2]}', '"text"']),
        deleted=st.booleans(),
        timestamp=_text,
    ),
    "instructions_found": st.builds(
        InstructionsFound,
        paths=st.lists(_text, max_size=3).map(tuple),
        call_id=_text,
        timestamp=_text,
    ),
    "approval_requested": st.builds(
        ApprovalRequested, call_id=_text, name=_text, reason=_text, timestamp=_text
    ),
    "approval_decided": st.builds(
        ApprovalDecided,
        call_id=_text,
        approved=st.booleans(),
        always=st.booleans(),
        note=_text,
        timestamp=_text,
    ),
    "approvals_dropped": st.builds(
        ApprovalsDropped,
        tools=st.lists(_text, max_size=3).map(tuple),
        reason=_text,
        timestamp=_text,
    ),
    "side_call": st.builds(
        SideCall,
        purpose=st.sampled_from(["title", "compaction"]),
        model=_text,
        usage=_usage,
        usage_estimated=st.booleans(),
        timestamp=_text,
    ),
}
entry = st.one_of(*ENTRY_STRATEGIES.values())
