"""A model is its provider and its name (spec 002: a model/provider switch always starts a new
epoch): another provider's model of the same name is a switch, the same one is not.
"""

from __future__ import annotations

from pathlib import Path

import agentsession as ags
from agentsession.log import ContextEpoch, ModelSwitched


def _model(provider: str, replies: list[str]) -> ags.ScriptedModel:
    return ags.ScriptedModel(replies, name="gpt-4.1", profile=ags.ModelProfile(provider=provider))


async def _epochs(session: ags.Session) -> list[ContextEpoch]:
    return [r.entry for r in await session.log() if isinstance(r.entry, ContextEpoch)]


async def test_switch_model_to_another_providers_model_of_the_same_name(tmp_path: Path) -> None:
    async with ags.Runtime(
        store=ags.MemoryStore(),
        model=_model("openai", ["one"]),
        project_dir=tmp_path,
        config=ags.Config(titles=False),
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("a")
        await session.switch_model(_model("openai", ["same"]))  # the same model: no switch
        await session.prompt("b")
        await session.switch_model(_model("local-server", ["two"]))
        await session.prompt("c")
        epochs = await _epochs(session)
        switches = [r.entry for r in await session.log() if isinstance(r.entry, ModelSwitched)]
    assert [e.reason for e in epochs] == ["start", "model_switch"]
    assert [e.provider for e in epochs] == ["openai", "local-server"]
    (switch,) = switches
    assert (switch.provider, switch.previous_provider) == ("local-server", "openai")


async def test_reopening_with_another_providers_model_of_the_same_name(tmp_path: Path) -> None:
    store = ags.SQLiteStore(tmp_path / "s.db")
    async with ags.Runtime(
        store=store, model=_model("openai", ["one"]), project_dir=tmp_path
    ) as first:
        session = await first.create_session()
        await session.prompt("a")
        sid = session.id
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=_model("openai", ["two"]),
        project_dir=tmp_path,
    ) as same:
        again = await same.open_session(sid)
        await again.prompt("b")
        assert [e.reason for e in await _epochs(again)] == ["start"]
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=_model("anthropic", ["three"]),
        project_dir=tmp_path,
    ) as other:
        moved = await other.open_session(sid)
        await moved.prompt("c")
        assert [e.reason for e in await _epochs(moved)] == ["start", "model_switch"]
