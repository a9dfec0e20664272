"""Every ``Config`` field is type-checked on construction: a wrong type is an ``ags.UsageError``
naming the field and the value, never a ``TypeError`` from deep inside nor a value taken for
another (``titles="no"`` is not true).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import agentsession as ags

_WRONG: dict[str, Any] = {
    "max_loaded_skills": "3",
    "max_transcript_messages": 60.0,
    "window_step": "1",
    "window_keep": "0.5",
    "context_window": True,
    "auto_compact": "yes",
    "compact_threshold": "0.9",
    "keep_user_turns": 2.5,
    "max_steps": None,
    "provider_retries": "2",
    "retry_base_delay": "0.5",
    "timezone": 3,
    "reserve_output_tokens": 1.5,
    "titles": "no",
    "elision_chunk": "2",
    "lease_ttl": "30",
    "environment": "cwd",
    "load_project_instructions": 0,
    "instructions_above_project": "no",
    "load_project_mcp": "false",
    "max_tool_result_chars": "40000",
    "tool_timeout": "300",
    "permission_preset": 1,
    "permission_presets": ["read-only"],
    "sandbox": False,
    "max_import_line_bytes": 1.0,
    "cache_ttl": 5,
    "provider_cache_diagnostics": "true",
    "prices": [],
    "title_timeout": "10",
    "compaction": 1,
    "cost_alert_usd": "5",
    "idle_policy": True,
    "max_loaded_tools": "16",
}


def test_every_field_has_a_wrong_value_here() -> None:
    assert set(_WRONG) == {f.name for f in dataclasses.fields(ags.Config)}


@pytest.mark.parametrize("name", sorted(_WRONG))
def test_a_wrong_type_names_the_field_and_the_value(name: str) -> None:
    value = _WRONG[name]
    with pytest.raises(ags.UsageError) as caught:
        ags.Config(**{name: value})
    assert f"Config.{name}" in str(caught.value)
    assert repr(value) in str(caught.value)


def test_right_types_still_pass() -> None:
    config = ags.Config(
        retry_base_delay=0,  # an integer where a number is asked for
        environment=["cwd"],  # type: ignore[arg-type]  # a list of facts, kept as a tuple
        titles=False,
        timezone="UTC",
        title_timeout=None,
    )
    assert config.environment == ("cwd",) and hash(config) == hash(config)
