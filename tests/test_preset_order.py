"""``PermissionPreset.within``: "allows nothing more than", a partial order on a preset's rules.

The server's preset ceiling (``server.preset_ceiling``) rests on it, so a preset a config defines
is judged by its rules exactly as the built-in ones are.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentsession.permissions import (
    BUILTIN_PRESETS,
    CAPABILITIES,
    FULL_ACCESS,
    READ_ONLY,
    WORKSPACE_WRITE,
    PermissionPreset,
    commands_text,
    presets_within,
    unsandboxed,
)

LEVEL = st.sampled_from(["allow", "ask", "deny"])
RULES = st.fixed_dictionaries({str(capability): LEVEL for capability in CAPABILITIES})
PRESET = st.one_of(
    st.sampled_from(list(BUILTIN_PRESETS.values())),
    RULES.map(lambda rules: PermissionPreset.from_rules("custom", rules)),
)


def rules(preset: PermissionPreset) -> tuple[str, ...]:
    return tuple(preset.level(capability) for capability in CAPABILITIES)


@given(PRESET)
def test_within_is_reflexive(preset: PermissionPreset) -> None:
    assert preset.within(preset)


@given(PRESET, PRESET)
def test_within_is_antisymmetric_on_the_rules(a: PermissionPreset, b: PermissionPreset) -> None:
    if a.within(b) and b.within(a):
        assert rules(a) == rules(b)


@given(PRESET, PRESET, PRESET)
def test_within_is_transitive(
    a: PermissionPreset, b: PermissionPreset, c: PermissionPreset
) -> None:
    if a.within(b) and b.within(c):
        assert a.within(c)


@given(PRESET, PRESET)
def test_a_preset_within_another_gains_no_power_the_other_lacks(
    a: PermissionPreset, b: PermissionPreset
) -> None:
    if not a.within(b):
        # Some capability is more permissive in a: the order saw a real difference.
        assert any(
            (a.level(c), b.level(c)) in {("allow", "ask"), ("allow", "deny"), ("ask", "deny")}
            for c in CAPABILITIES
        )
        return
    # Unsandboxed commands, and commands at all, only where the other has them too.
    assert not unsandboxed(a) or unsandboxed(b)
    assert commands_text(a, "bwrap") == "" or commands_text(b, "bwrap") != ""
    for capability in CAPABILITIES:
        if b.level(capability) == "deny":
            assert a.level(capability) == "deny"
        if a.level(capability) == "allow":
            assert b.level(capability) == "allow"


@given(RULES)
def test_every_preset_lies_within_full_access_and_above_all_deny(levels: dict[str, str]) -> None:
    preset = PermissionPreset.from_rules("custom", levels)
    assert preset.within(FULL_ACCESS)
    assert PermissionPreset.from_rules("nothing", {}).within(preset)


def test_the_built_in_presets_form_a_chain() -> None:
    assert READ_ONLY.within(WORKSPACE_WRITE) and WORKSPACE_WRITE.within(FULL_ACCESS)
    assert not WORKSPACE_WRITE.within(READ_ONLY) and not FULL_ACCESS.within(WORKSPACE_WRITE)
    assert presets_within(BUILTIN_PRESETS, READ_ONLY) == ("read-only",)
    assert presets_within(BUILTIN_PRESETS, WORKSPACE_WRITE) == ("read-only", "workspace-write")
    assert presets_within(BUILTIN_PRESETS, FULL_ACCESS) == tuple(sorted(BUILTIN_PRESETS))


def test_a_preset_that_is_weaker_in_one_way_and_stronger_in_another_is_within_neither() -> None:
    network = PermissionPreset.from_rules("net", {"read": "allow", "network": "allow"})
    assert not network.within(WORKSPACE_WRITE) and not WORKSPACE_WRITE.within(network)
    assert not network.within(READ_ONLY) and READ_ONLY.within(network)
