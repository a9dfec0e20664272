"""The codec's shape: code generated in one place, readable in a traceback; calls that never bounce.

A commit and a prompt's text go down through the codec's modules without climbing back into
one they already left (on any thread's stack), and the write path never enters the inspection.
"""

from __future__ import annotations

import ast
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import agentsession as ags
from agentsession.codec import COMPILE_AFTER
from agentsession.codec._encoding import compile_encoder
from agentsession.codec._straight import _generated

SRC = Path(__file__).resolve().parents[1] / "src" / "agentsession"


def test_source_is_compiled_and_run_in_one_place_only() -> None:
    sites = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("exec", "eval", "compile")
            ):
                sites.append(f"{path.relative_to(SRC)}:{node.lineno} {node.func.id}")
    assert [s.split(":")[0] for s in sites] == ["codec/_generate.py"] * len(sites), sites
    # One compile; the eval of an annotation it compiled; the exec of a definition it compiled.
    assert len(sites) == 3


class Held:
    """An object that is not the class its encoder was written for: it lacks the field."""


def test_an_error_in_a_generated_encoder_shows_its_source_line() -> None:
    @dataclass(frozen=True)
    class Parcel:
        weight: int = 1

    encoder = compile_encoder(Parcel, ("weight",))
    with pytest.raises(AttributeError) as caught:
        encoder(Held())
    shown = "".join(traceback.format_exception(caught.value))
    assert "agentsession generated encoder for " in shown
    assert "Parcel" in shown
    assert "item0 = value.weight" in shown  # the generated line itself


def test_an_error_in_a_generated_decoder_shows_its_source_line() -> None:
    def broken() -> list[str]:
        raise RuntimeError("no default today")

    @dataclass(frozen=True)
    class Crate:
        labels: list[str] = field(default_factory=broken)

    decoder: Any = _generated(Crate, limit=0)  # straight-line code from the first payload
    with pytest.raises(RuntimeError) as caught:
        decoder({})
    shown = "".join(traceback.format_exception(caught.value))
    assert "agentsession generated decoder for " in shown
    assert "v0 = D0()" in shown


@contextmanager
def bounces(found: list[str], entered: set[str]) -> Iterator[None]:
    """Record each call that re-enters a codec module left for another on the same stack.

    ``entered``: every package module a call reached. Threads started inside are traced too
    (the store's worker thread runs the commits).
    """
    stacks: dict[int, list[str]] = {}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        stack = stacks.setdefault(threading.get_ident(), [])
        if event == "return":
            if stack:
                stack.pop()
            return
        module = str(frame.f_globals.get("__name__", ""))
        if module.startswith("agentsession."):
            entered.add(module)
        codec = module.startswith("agentsession.codec")
        if codec and stack and stack[-1] != module and module in stack:
            path = [m for i, m in enumerate(stack) if i == 0 or stack[i - 1] != m]
            found.append(" > ".join([*path, module]))
        stack.append(module)

    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(None)
        threading.setprofile(None)


def replies(request: ags.Request) -> Any:
    last = request.messages[-1]
    if last.role == "user":
        return [ags.ToolCall("weigh", {"parcel": 3})]
    return "It weighs 3 kg."


async def test_a_commit_and_a_prompt_never_bounce_between_the_codecs_modules(
    make_runtime: Callable[..., ags.Runtime], tmp_path: Path
) -> None:
    @ags.tool
    def weigh(parcel: int) -> str:
        """Weigh a parcel."""
        return f"{parcel} kg"

    found: list[str] = []
    entered: set[str] = set()
    with bounces(found, entered):
        runtime = make_runtime(
            model=ags.ScriptedModel(replies),
            store=ags.SQLiteStore(tmp_path / "traced.db"),
            tools=[weigh],
        )
        session = await runtime.create_session()
        await session.prompt("How heavy is parcel 3?")  # cold: every class walked
        for _ in range(COMPILE_AFTER // 2):  # five entries a turn: written out as code by now
            await session.prompt("And now?")
        reopened = await runtime.open_session(session.id)
        for _ in range(COMPILE_AFTER // 2):
            await reopened.prompt("Once more?")
    assert found == []
    assert {"agentsession.codec._lean", "agentsession.codec._encoding"} <= entered
    assert not {m for m in entered if m.startswith("agentsession.inspection")}


@dataclass(frozen=True)
class _Row:
    seq: int
    title: str
    tags: tuple[str, ...] = ()
    seen: list[int] = field(default_factory=list)
    kind: str = "row"


@dataclass(frozen=True)
class _Checked:
    seq: int

    def __post_init__(self) -> None:
        if self.seq < 0:
            raise ValueError("negative")


@dataclass(frozen=True, kw_only=True)
class _Named:
    seq: int


@dataclass(frozen=True, slots=True)
class _Slotted:
    seq: int


def test_a_builder_makes_the_same_value_as_the_class() -> None:
    from agentsession.codec import builder

    build = builder(_Row)
    assert build is not _Row
    cases: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1, "a"), {}),
        ((2, "b", ("x",)), {}),
        ((3,), {"title": "c", "kind": "other", "seen": [4]}),
    ]
    for args, kwargs in cases:
        made, expected = build(*args, **kwargs), _Row(*args, **kwargs)
        assert type(made) is _Row
        assert made == expected
        assert list(vars(made).items()) == list(vars(expected).items())  # field order too
    assert build(1, "a").seen is not build(1, "a").seen  # a default factory runs per value
    with pytest.raises(TypeError):
        build(1)  # a missing field is refused as the class refuses it
    with pytest.raises(AttributeError):
        build(1, "a").seq = 2  # type: ignore[misc]  # still frozen


def test_a_class_whose_init_does_more_than_store_is_its_own_builder() -> None:
    from agentsession.codec import builder

    assert builder(_Checked) is _Checked  # its check still runs
    assert builder(_Named) is _Named
    assert builder(_Slotted) is _Slotted
    with pytest.raises(ValueError, match="negative"):
        builder(_Checked)(-1)
