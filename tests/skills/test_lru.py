"""The loaded-skill LRU: limit, activation, events, and replay from recorded events."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentsession.errors import UsageError
from agentsession.skills import LoadedSkills, SkillEvent


def test_a_fourth_load_unloads_the_least_recently_used() -> None:
    skills = LoadedSkills()
    assert skills.max_loaded == 3
    for name in ("a", "b", "c"):
        change = skills.read(name)
        assert change.loaded == (name,) and change.unloaded == () and change.active == name
    change = skills.read("d")
    assert change.unloaded == ("a",) and change.loaded == ("d",)
    assert change.events == (SkillEvent("unloaded", "a"), SkillEvent("loaded", "d"))
    assert skills.loaded == ("b", "c", "d") and skills.active == "d"


def test_reading_a_loaded_skill_makes_it_active_without_reloading() -> None:
    skills = LoadedSkills(3)
    for name in ("a", "b", "c"):
        skills.read(name)
    change = skills.read("a")
    assert change.events == (SkillEvent("activated", "a"),)
    assert change.loaded == () and change.unloaded == () and change.active == "a"
    assert skills.loaded == ("b", "c", "a")
    assert skills.read("d").unloaded == ("b",)  # "a" was used more recently than "b"


def test_unload_and_active_after_it() -> None:
    skills = LoadedSkills(2)
    skills.read("a")
    skills.read("b")
    assert skills.unload("b").events == (SkillEvent("unloaded", "b"),)
    assert skills.active == "a" and "b" not in skills and len(skills) == 1
    assert skills.unload("zzz").events == ()
    skills.unload("a")
    assert skills.active is None


def test_replay_forgives_nonsense_and_shrink_handles_a_lowered_limit() -> None:
    events = [
        SkillEvent("loaded", "a"),
        SkillEvent("unloaded", "never"),
        SkillEvent("loaded", "b"),
        SkillEvent("activated", "ghost"),
        SkillEvent("loaded", "a"),
    ]
    state = LoadedSkills.replay(events, max_loaded=5)
    assert state.loaded == ("b", "ghost", "a")
    lowered = LoadedSkills.replay(events, max_loaded=1)
    assert len(lowered) == 3
    change = lowered.shrink()
    assert change.unloaded == ("b", "ghost") and lowered.loaded == ("a",)
    assert lowered.shrink().events == ()


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_limit_must_be_positive(bad: object) -> None:
    with pytest.raises(UsageError):
        LoadedSkills(bad)  # type: ignore[arg-type]


def test_names_must_be_strings() -> None:
    with pytest.raises(UsageError):
        LoadedSkills().read("")


operations = st.lists(
    st.tuples(st.sampled_from(["read", "read", "read", "unload"]), st.sampled_from("abcdefg")),
    max_size=60,
)


@settings(deadline=None)
@given(st.integers(min_value=1, max_value=5), operations)
def test_lru_invariants_and_replay(max_loaded: int, ops: list[tuple[str, str]]) -> None:
    live = LoadedSkills(max_loaded)
    model: list[str] = []  # the obvious reference: least recent first
    events: list[SkillEvent] = []
    for op, name in ops:
        if op == "read":
            change = live.read(name)
            if name in model:
                model.remove(name)
            model.append(name)
            del model[: max(len(model) - max_loaded, 0)]
            assert change.active == name
        else:
            change = live.unload(name)
            if name in model:
                model.remove(name)
        events.extend(change.events)
        assert len(live) <= max_loaded
        assert list(live.loaded) == model
        assert live.active == (model[-1] if model else None)
        assert LoadedSkills.replay(events, max_loaded) == live
