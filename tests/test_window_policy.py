"""The window policy chosen by cost: one large move past the cap, an early move when cold.

``Config.window_step=None`` (the default) keeps ``window_keep`` of the cap after a move, so the
prefix moves once per ``cap - keep`` messages; a request whose cache has already expired moves
the window as soon as it holds more than ``keep``, when the move costs nothing extra.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.log import ContextEpoch
from agentsession.providers.base import ModelProfile
from agentsession.providers.cache_policy import cache_lifetime
from agentsession.providers.profiles import profile_for
from agentsession.request import AssistantMessage, Message, ToolCall, ToolResultMessage, UserMessage
from agentsession.window import message_count, select_window


def turn(n: int, calls: int) -> list[Message]:
    out: list[Message] = [UserMessage(f"u{n}")]
    for k in range(calls):
        out.append(AssistantMessage(tool_calls=(ToolCall("t", {}, id=f"c{n}.{k}"),)))
        out.append(ToolResultMessage(f"c{n}.{k}", "t", "r"))
    out.append(AssistantMessage(content="a"))
    return out


def history(calls: list[int]) -> list[Message]:
    return [m for n, c in enumerate(calls) for m in turn(n, c)]


def test_under_the_cap_nothing_moves() -> None:
    messages = history([1] * 4)  # 16 counted
    window = select_window(messages, 20, keep=12)
    assert window.start == 0 and window.count == 16 and not window.advanced


def test_past_the_cap_the_window_drops_to_keep_in_one_move() -> None:
    messages = history([1] * 6)  # 24 counted, 4 per turn
    window = select_window(messages, 20, keep=12)
    assert window.count == 12 and window.advanced
    assert isinstance(messages[window.start], UserMessage)
    stepped = select_window(messages, 20, step=1)  # the old behaviour: just under the cap
    assert stepped.count == 20


def test_a_cold_cache_moves_the_window_early_once_near_the_cap() -> None:
    messages = history([1, 1, 1, 1, 0])  # 18 counted: under the cap of 20
    assert not select_window(messages, 20, keep=10).advanced
    # three quarters of the way from 10 to 20 is 17: a move the cap would soon force anyway
    cold = select_window(messages, 20, keep=10, cold=True)
    assert cold.advanced and cold.count == 10  # whole turns, down to keep
    # from 12 it is 18: a move now would only shorten the window, not save one
    assert not select_window(messages, 20, keep=12, cold=True).advanced
    small = history([1] * 3)  # 12 counted: nothing to gain
    assert not select_window(small, 20, keep=10, cold=True).advanced


@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=30),
    st.integers(4, 40),
    st.floats(0.1, 0.9),
    st.booleans(),
)
def test_policy_windows_start_at_turns_and_respect_the_cap(
    calls: list[int], cap: int, share: float, cold: bool
) -> None:
    messages = history(calls)
    keep = max(1, int(cap * share))
    window = select_window(messages, cap, keep=keep, cold=cold)
    assert isinstance(messages[window.start], UserMessage)
    newest = message_count(turn(len(calls) - 1, calls[-1]))
    if window.start == len(messages) - newest:
        return  # the newest turn alone: kept (elided when over the cap)
    assert window.count <= cap
    total = message_count(messages)
    if window.advanced:
        assert window.count <= keep  # a move goes all the way to keep
    else:
        assert total <= cap and (not cold or total <= keep + (cap - keep) * 3 // 4)


def test_config_defaults_to_the_policy_and_keeps_explicit_steps() -> None:
    assert ags.Config().window_step is None
    assert ags.Config(max_transcript_messages=60).window_keep_messages == 39
    assert ags.Config(window_step=4).window_keep_messages is None
    with pytest.raises(ags.UsageError, match="window_keep"):
        ags.Config(window_keep=1.0)
    with pytest.raises(ags.UsageError, match="window_step"):
        ags.Config(window_step=0)


async def epochs_after(
    tmp_path: Path, gap: timedelta, profile: ModelProfile | None = None, ttl: str = "auto"
) -> list[ContextEpoch]:
    moment = [datetime(2026, 1, 1, 9, 0).astimezone()]
    model = ags.ScriptedModel(lambda request: "ok", profile=profile)
    runtime = ags.Runtime(
        store=ags.MemoryStore(),
        model=model,
        project_dir=tmp_path,
        clock=lambda: moment[0],
        config=ags.Config(max_transcript_messages=12, titles=False, environment=(), cache_ttl=ttl),
    )
    async with runtime:
        session = await runtime.create_session()
        # 10 counted messages, 11 with the next prompt: under the cap of 12, past three
        # quarters of the way from keep (7) to it
        for n in range(5):
            await session.prompt(f"p{n}")
            moment[0] += timedelta(seconds=30)
        moment[0] += gap
        await session.prompt("after the gap")
        return [r.entry for r in await session.log() if isinstance(r.entry, ContextEpoch)]


async def test_a_session_moves_its_window_when_the_cache_went_cold(tmp_path: Path) -> None:
    warm = await epochs_after(tmp_path, timedelta(seconds=30))
    cold = await epochs_after(tmp_path, timedelta(minutes=10))
    assert [e.reason for e in warm] == ["start"]
    assert [e.reason for e in cold] == ["start", "window"]


SHAPES = {
    "openai-chat explicit": profile_for("openai", "gpt-5.6-terra", wire_format="openai-chat"),
    "openai-responses explicit": profile_for("openai", "gpt-5.6-terra"),
    "openai-chat in-memory": profile_for("openai", "gpt-4.1", wire_format="openai-chat"),
    "anthropic": profile_for("anthropic", "claude-opus-4-8"),
}


def test_every_shape_knows_how_long_its_cache_lives() -> None:
    assert cache_lifetime(SHAPES["openai-chat explicit"], "5m") == 1800.0
    assert cache_lifetime(SHAPES["openai-responses explicit"], "1h") == 1800.0
    assert cache_lifetime(SHAPES["openai-chat in-memory"], "5m") == 600.0
    assert cache_lifetime(SHAPES["anthropic"], "5m") == 300.0
    assert cache_lifetime(SHAPES["anthropic"], "1h") == 3600.0


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_the_window_moves_once_the_shapes_own_cache_lifetime_has_passed(
    tmp_path: Path, shape: str
) -> None:
    profile = SHAPES[shape]
    lifetime = cache_lifetime(profile, "5m")
    warm = await epochs_after(tmp_path, timedelta(seconds=lifetime - 60), profile)
    cold = await epochs_after(tmp_path, timedelta(seconds=lifetime + 60), profile)
    assert [e.reason for e in warm] == ["start"]
    assert [e.reason for e in cold] == ["start", "window"]


async def test_anthropics_long_lifetime_keeps_the_window_while_the_hour_lasts(
    tmp_path: Path,
) -> None:
    profile = SHAPES["anthropic"]
    warm = await epochs_after(tmp_path, timedelta(minutes=50), profile, ttl="1h")
    cold = await epochs_after(tmp_path, timedelta(minutes=61), profile, ttl="1h")
    assert [e.reason for e in warm] == ["start"]
    assert [e.reason for e in cold] == ["start", "window"]
