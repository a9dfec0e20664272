"""``async with ags.Runtime(...)``: the store and the models' SDK clients close on the way out."""

from __future__ import annotations

from pathlib import Path

import pytest

import agentsession as ags
from agentsession.runtime import SupportsAclose


class ClosingModel(ags.ScriptedModel):
    """A scripted model with a client to close, counting how often it was closed."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_async_with_closes_the_store_and_each_model_once(tmp_path: Path) -> None:
    model, summarizer = ClosingModel(["hi"]), ClosingModel([])
    store = ags.SQLiteStore(tmp_path / "a.db")
    async with ags.Runtime(
        store=store, model=model, title_model=model, summarizer=summarizer
    ) as runtime:
        session = await runtime.create_session()
        assert (await session.prompt("hello")).text == "hi"
    assert model.closed == 1 and summarizer.closed == 1
    with pytest.raises(ags.StoreError, match="closed"):
        await store.list_sessions()


async def test_closed_even_when_the_block_fails(tmp_path: Path) -> None:
    model = ClosingModel(["hi"])
    with pytest.raises(RuntimeError, match="application bug"):
        async with ags.Runtime(store=ags.SQLiteStore(tmp_path / "a.db"), model=model):
            raise RuntimeError("application bug")
    assert model.closed == 1


async def test_models_without_a_client_and_the_sdk_models_close_cleanly(tmp_path: Path) -> None:
    scripted = ags.ScriptedModel(["hi"])
    assert not isinstance(scripted, SupportsAclose)
    sdk = ags.get_model("openai-compatible:http://127.0.0.1:9/v1#m")
    assert isinstance(sdk, SupportsAclose)
    async with ags.Runtime(store=ags.MemoryStore(), model=sdk, summarizer=scripted):
        pass
    # Closed before any client was made, and a later call would make a new one.
    await sdk.aclose()
