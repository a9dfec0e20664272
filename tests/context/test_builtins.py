"""The built-in components: host-local date (or a configured zone) and the environment."""

from __future__ import annotations

import asyncio
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

import agentsession as ags
from agentsession.context import Rendered, date_component, environment_component


def load(component: ags.ContextComponent) -> Rendered:
    result = asyncio.run(component.sample())
    assert isinstance(result, Rendered)
    return result


def test_date_is_host_local_by_default() -> None:
    component = date_component(lambda: datetime(2026, 3, 1, 23, 59))
    rendered = load(component)
    assert rendered.baseline == "Today's date: Sunday, 2026-03-01."
    assert rendered.update_text == "Today's date is now Sunday, 2026-03-01."


def test_the_date_kept_for_a_day_is_the_one_rendered_afresh() -> None:
    # The day's value is kept between samples; across midnight (and back) each sample must be
    # what a component that never sampled before renders for that moment.
    moments = [
        datetime(2026, 3, 1, 9, 0),
        datetime(2026, 3, 1, 23, 59),
        datetime(2026, 3, 2, 0, 0),
        datetime(2026, 3, 1, 12, 0),
        datetime(2026, 3, 2, 8, 0),
    ]
    now = iter(moments)
    component = date_component(lambda: next(now))
    seen = [load(component) for _ in moments]
    assert seen == [load(date_component(iter([m]).__next__)) for m in moments]
    assert seen[0] is seen[1]  # the same day: the same value, checked once
    assert seen[2].baseline == "Today's date: Monday, 2026-03-02."


def test_configured_time_zone_replaces_host_zone() -> None:
    moment = datetime(2026, 3, 1, 20, 0, tzinfo=UTC)
    assert "2026-03-01" in load(date_component(lambda: moment)).baseline
    assert "2026-03-02" in load(date_component(lambda: moment, "Pacific/Kiritimati")).baseline


def test_unknown_time_zone_is_usage_error() -> None:
    with pytest.raises(ags.UsageError, match="time zone"):
        date_component(lambda: datetime(2026, 1, 1), "Mars/Olympus")


def test_environment_reports_directory_and_git(tmp_path: Path) -> None:
    inside = tmp_path / "sub"
    inside.mkdir()
    component = environment_component(inside)
    plain = load(environment_component(tmp_path))
    assert f"Working directory: {tmp_path}" in plain.baseline
    assert "git repository: no" in plain.baseline
    assert "git repository: no" in load(component).baseline
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert "git repository: yes" in load(environment_component(inside)).baseline
    # The same component sees the repository that appeared in a parent since its last sample.
    assert "git repository: yes" in load(component).baseline


def test_bad_component_keys_are_refused() -> None:
    for key in ("date", "Plugin.x", "plugin.", "plugin x.y", ""):
        with pytest.raises(ags.UsageError):
            ags.ContextComponent(key, lambda: "x")


async def test_ill_typed_loader_is_a_context_load_error() -> None:
    component = ags.ContextComponent("plugin.bad.value", lambda: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(ags.ContextLoadError, match=r"plugin\.bad\.value.*returned int"):
        await component.sample()


@pytest.mark.parametrize("facts", [(), ("cwd",), ("git",), ("cwd", "platform", "git")])
def test_environment_kept_texts_follow_the_repository_both_ways(
    tmp_path: Path, facts: tuple[str, ...]
) -> None:
    # The component keeps one text per git answer: each sample must be what a component that
    # never sampled before gives, as the repository appears and goes away again.
    component = environment_component(tmp_path, facts)
    for git in (False, True, True, False, False):
        if git and not (tmp_path / ".git").exists():
            (tmp_path / ".git").mkdir()
        if not git and (tmp_path / ".git").exists():
            (tmp_path / ".git").rmdir()
        assert load(component) == load(environment_component(tmp_path, facts))


def test_a_kept_loader_value_with_lone_surrogates_is_cleaned_at_every_sample() -> None:
    kept = Rendered("name \udcff", "now \udcff")
    component = ags.ContextComponent("plugin.test.kept", lambda: kept)
    for _ in range(3):
        assert load(component) == Rendered("name \ufffd", "now \ufffd")
    clean = Rendered("plain", None)
    component = ags.ContextComponent("plugin.test.clean", lambda: clean)
    assert load(component) is clean
    assert load(component) is clean


def test_the_git_check_answers_as_os_path_exists(tmp_path: Path) -> None:
    # The environment's git check looks entries up without an exception for a missing one;
    # for every kind of entry it must answer what ``os.path.exists`` answers.
    from agentsession.context.builtins import _exists

    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "file")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = ["file", "dir", "link", "dangling", "missing", "file/.git", "dir/.git", "a\0b"]
    for name in names:
        place = str(tmp_path / name) if "\0" not in name else f"{tmp_path}/{name}"
        assert _exists(place) == os.path.exists(place), name
