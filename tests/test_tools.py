"""Tools: declarations, the injected context, result hygiene and bounds, timeouts, cancellation."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentsession as ags
from agentsession.hygiene import (
    clean_text,
    has_surrogates,
    replace_surrogates,
    truncate_middle,
)
from agentsession.tools import ToolContext, ToolOutcome

# -- declarations ----------------------------------------------------------------------------


def test_schema_comes_from_hints_and_docstring() -> None:
    @ags.tool
    def greet(name: str, times: int = 1, loud: bool | None = None) -> str:
        """Say hello.

        Args:
            name: Who to greet.
            times: How often.
        """
        return name * times

    assert greet.description == "Say hello."
    assert greet.parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "times": {"type": "integer", "description": "How often.", "default": 1},
            "loud": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None},
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    assert greet.effect == "read"
    assert greet.paths == ()
    assert not greet.destructive
    assert greet.timeout is None and greet.max_result_chars is None


def test_declared_metadata_is_kept() -> None:
    @ags.tool(effect="write", paths=["target"], destructive=True, timeout=5, max_result_chars=99)
    def wipe(target: str, also: list[str] | None = None) -> str:
        return target

    assert (wipe.effect, wipe.paths, wipe.destructive) == ("write", ("target",), True)
    assert (wipe.timeout, wipe.max_result_chars) == (5, 99)

    @ags.tool(effect="write", paths="many")
    def touch(many: list[str]) -> str:
        return ""

    assert touch.paths == ("many",)


def test_a_tool_declares_itself_with_one_spec_object() -> None:
    # Requests memoise a declaration's JSON and token count per object: every request must
    # get the same object, equal to the declaration.
    @ags.tool
    def find(pattern: str) -> str:
        """Find text."""
        return pattern

    assert find.spec is find.spec
    assert find.spec == ags.ToolSpec("find", "Find text.", find.parameters)

    @ags.tool
    def other(pattern: str) -> str:
        """Find text."""
        return pattern

    assert other.spec is not find.spec and other.spec.name == "other"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"paths": ["nope"]}, "not one of its parameters"),
        ({"paths": ["count"]}, "must be a string or a list of strings"),
        ({"timeout": -1}, "timeout"),
        ({"max_result_chars": 1.5}, "max_result_chars"),
        ({"effect": "launch"}, "effect"),
    ],
)
def test_bad_declarations_are_usage_errors(kwargs: dict[str, Any], message: str) -> None:
    def fn(path: str, count: int) -> str:
        return path

    with pytest.raises(ags.UsageError, match=message):
        ags.tool(**kwargs)(fn)


def test_context_parameter_is_injected_and_left_out_of_the_schema(tmp_path: Path) -> None:
    seen: list[ToolContext] = []

    @ags.tool
    def where(name: str, ctx: ags.ToolContext) -> str:
        seen.append(ctx)
        ctx.note_read(name)
        return str(ctx.project_dir)

    assert list(where.parameters["properties"]) == ["name"]
    assert where.parameters["required"] == ["name"]
    assert where.context_param == "ctx"
    context = ToolContext(tmp_path, session_id="s1", call_id="c1")
    outcome = asyncio.run(where.invoke({"name": "pkg/a.py"}, context=context))
    assert outcome == ToolOutcome(str(tmp_path.resolve()))
    assert seen == [context]
    assert context.reads == (tmp_path.resolve() / "pkg" / "a.py",)
    # the model cannot pass the context itself
    forged = asyncio.run(where.invoke({"name": "x", "ctx": {"project_dir": "/"}}))
    assert forged.is_error and "unexpected ctx" in forged.content


def test_two_context_parameters_are_refused() -> None:
    def fn(a: ToolContext, b: ToolContext) -> str:
        return ""

    with pytest.raises(ags.UsageError, match="two ToolContext"):
        ags.tool(fn)


def test_note_read_follows_symlinks_and_keeps_each_path_once(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real")
    context = ToolContext(tmp_path)
    context.note_read("alias/f.txt")
    context.note_read(tmp_path / "real" / "f.txt")
    context.note_read("bad\0name")  # no file system accepts it, so nothing was read there
    assert context.reads == (tmp_path.resolve() / "real" / "f.txt",)


async def test_invalid_arguments_and_exceptions_become_error_results() -> None:
    @ags.tool
    def boom(n: int) -> str:
        raise RuntimeError(f"bad {n}")

    assert (await boom.invoke({"n": "x"})).content.startswith("Invalid arguments for tool boom")
    failed = await boom.invoke({"n": 3})
    assert failed == ToolOutcome("Tool boom failed: RuntimeError: bad 3", True)


async def test_a_tool_may_return_an_error_outcome_itself() -> None:
    @ags.tool
    async def refuse() -> ToolOutcome:
        return ToolOutcome("no", True)

    assert await refuse.invoke({}) == ToolOutcome("no", True)


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")

    __repr__ = __str__


async def test_a_result_that_cannot_become_text_is_an_error_result_not_a_crash() -> None:
    # The tool has run; its call must still get a result the model can read.
    values: dict[str, Any] = {
        "object": _Unprintable(),
        "none outcome": ToolOutcome(None, True),  # type: ignore[arg-type]
        "bytes outcome": ToolOutcome(b"abc"),  # type: ignore[arg-type]
        "bytes": b"caf\xc3\xa9 \xff",
    }

    @ags.tool
    def give(which: str) -> Any:
        """Return an odd value."""
        return values[which]

    unprintable = await give.invoke({"which": "object"})
    assert unprintable == ToolOutcome(
        "Tool give ran, but its result cannot be shown as text: RuntimeError: no text", True
    )
    assert await give.invoke({"which": "none outcome"}) == ToolOutcome("", True)
    assert await give.invoke({"which": "bytes outcome"}) == ToolOutcome("abc")
    assert await give.invoke({"which": "bytes"}) == ToolOutcome("café \ufffd")


# -- hygiene and bounds ----------------------------------------------------------------------


async def test_surrogate_file_names_are_replaced_and_encodable(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    folder.mkdir()
    try:
        os.close(os.open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), os.O_CREAT))
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")

    @ags.tool
    def names() -> list[str]:
        return os.listdir(folder)

    assert has_surrogates(json.dumps(os.listdir(folder), ensure_ascii=False))
    outcome = await names.invoke({})
    assert "caf\ufffd.txt" in outcome.content
    assert "1 invalid character" in outcome.content
    assert not has_surrogates(outcome.content)
    json.dumps({"content": outcome.content}, ensure_ascii=False).encode("utf-8")


async def test_nul_characters_are_kept() -> None:
    @ags.tool
    def nul() -> str:
        return "a\0b"

    assert (await nul.invoke({})).content == "a\0b"


async def test_a_two_megabyte_result_is_truncated_with_a_marker() -> None:
    big = "".join(f"line {i:07d}\n" for i in range(160_000))  # about 2 MB
    assert len(big) > 2_000_000

    @ags.tool
    def dump() -> str:
        return big

    default = await dump.invoke({})
    limit = ags.Config().max_tool_result_chars
    assert limit is not None and 30_000 <= limit <= 50_000
    assert len(default.content) <= limit
    assert default.content.startswith("line 0000000\n")
    assert default.content.endswith("line 0159999\n")
    cut = int(re.search(r"\[\.\.\. ([\d,]+) of", default.content).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert cut == len(big) - (len(default.content) - len(_marker_of(default.content)))

    small = await dump.invoke({}, config=ags.Config(max_tool_result_chars=1000))
    assert len(small.content) <= 1000 and "characters omitted" in small.content

    for disabled in (None, 0):
        whole = await dump.invoke({}, config=ags.Config(max_tool_result_chars=disabled))
        assert whole.content == big


def _marker_of(text: str) -> str:
    match = re.search(r"\n\[\.\.\. [\d,]+ of [\d,]+ characters omitted \.\.\.\]\n", text)
    assert match is not None
    return match.group(0)


async def test_the_per_tool_limit_overrides_the_config() -> None:
    @ags.tool(max_result_chars=200)
    def tight() -> str:
        return "x" * 5000

    @ags.tool(max_result_chars=0)
    def unbounded() -> str:
        return "x" * 5000

    config = ags.Config(max_tool_result_chars=100)
    assert len((await tight.invoke({}, config=config)).content) == 200
    assert len((await unbounded.invoke({}, config=config)).content) == 5000


async def test_error_texts_are_cleaned_and_bounded_too() -> None:
    @ags.tool(max_result_chars=300)
    def noisy() -> str:
        raise ValueError("\udcff" + "y" * 10_000)

    outcome = await noisy.invoke({})
    assert outcome.is_error
    assert not has_surrogates(outcome.content)
    assert "characters omitted" in outcome.content


@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=0, max_value=400))
def test_truncate_middle_keeps_head_and_tail_and_counts_the_cut(text: str, limit: int) -> None:
    result, cut = truncate_middle(text, limit)
    if limit == 0 or len(text) <= limit:
        assert (result, cut) == (text, 0)
        return
    assert len(result) <= limit
    match = re.search(r"\n\[\.\.\. ([\d,]+) of ([\d,]+) characters omitted \.\.\.\]\n", result)
    if match is None:  # a limit too small for the marker keeps the head only
        assert result == text[:limit] and cut == len(text) - limit
        return
    assert int(match.group(1).replace(",", "")) == cut
    assert int(match.group(2).replace(",", "")) == len(text)
    head, tail = result[: match.start()], result[match.end() :]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) + len(tail) + cut == len(text)
    assert abs(len(head) - len(tail)) <= 1


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=())))
def test_replace_surrogates_always_yields_encodable_text(text: str) -> None:
    cleaned, replaced = replace_surrogates(text)
    cleaned.encode("utf-8")
    assert not has_surrogates(cleaned)
    if not has_surrogates(text):
        assert (cleaned, replaced) == (text, 0)
    else:
        assert replaced >= 1
    assert "\0" not in text or "\0" in cleaned


def test_surrogate_pairs_are_joined_and_lone_ones_counted() -> None:
    assert replace_surrogates("a\ud83d\ude00b") == ("a\U0001f600b", 0)
    assert replace_surrogates("\ufffd\udc80x\ud800") == ("\ufffd\ufffdx\ufffd", 2)
    assert clean_text("ok") == "ok"
    noted = clean_text("\udce9" * 3, limit=2)
    assert noted.startswith("\ufffd\ufffd") and "3 invalid characters" in noted


@pytest.mark.parametrize(
    "kwargs",
    [{"max_tool_result_chars": -1}, {"max_tool_result_chars": True}, {"tool_timeout": -0.5}],
)
def test_bad_limits_in_config_are_usage_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ags.UsageError):
        ags.Config(**kwargs)


# -- timeouts and cancellation ---------------------------------------------------------------


async def test_a_hanging_async_tool_times_out() -> None:
    @ags.tool(timeout=0.05)
    async def stuck() -> str:
        await asyncio.Event().wait()
        return "never"

    outcome = await stuck.invoke({})
    assert outcome.is_error
    assert outcome.content.startswith("Tool stuck did not finish within 0.05 seconds")


async def test_a_hanging_sync_tool_times_out_without_blocking_the_loop() -> None:
    release = threading.Event()
    ticks: list[int] = []

    @ags.tool
    def stuck() -> str:
        release.wait()
        return "late"

    async def ticker() -> None:
        for i in range(3):
            ticks.append(i)
            await asyncio.sleep(0)

    try:
        outcome, _ = await asyncio.gather(
            stuck.invoke({}, config=ags.Config(tool_timeout=0.05)), ticker()
        )
    finally:
        release.set()
    assert outcome.is_error and "did not finish within 0.05 seconds" in outcome.content
    assert ticks == [0, 1, 2]


async def test_a_timeout_raised_by_the_tool_itself_is_a_failure_not_a_timeout() -> None:
    @ags.tool
    def slow_socket() -> str:
        raise TimeoutError("socket read timed out")

    outcome = await slow_socket.invoke({})
    assert outcome.content == "Tool slow_socket failed: TimeoutError: socket read timed out"


async def test_the_tool_timeout_overrides_the_config_and_zero_disables_it() -> None:
    @ags.tool(timeout=0)
    async def patient() -> str:
        await asyncio.sleep(0.01)
        return "done"

    outcome = await patient.invoke({}, config=ags.Config(tool_timeout=0.001))
    assert outcome == ToolOutcome("done")


async def test_cancelling_the_caller_abandons_a_hanging_sync_tool() -> None:
    started = asyncio.Event()
    release = threading.Event()
    loop = asyncio.get_running_loop()

    @ags.tool(timeout=0)
    def stuck() -> str:
        loop.call_soon_threadsafe(started.set)
        release.wait()
        return "late"

    task = asyncio.create_task(stuck.invoke({}))
    await started.wait()
    task.cancel()
    try:
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        release.set()


def test_a_hung_sync_tool_does_not_keep_the_interpreter_alive(tmp_path: Path) -> None:
    script = tmp_path / "hang.py"
    script.write_text(
        textwrap.dedent(
            """
            import asyncio, threading
            import agentsession as ags

            @ags.tool(timeout=0.2)
            def stuck() -> str:
                threading.Event().wait()  # never returns
                return "never"

            @ags.tool(timeout=0)
            def stuck_forever() -> str:
                threading.Event().wait()
                return "never"

            async def main() -> None:
                outcome = await stuck.invoke({})
                print("RESULT", outcome.is_error, outcome.content)
                task = asyncio.create_task(stuck_forever.invoke({}))
                await asyncio.sleep(0.05)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    print("CANCELLED")

            asyncio.run(main())
            print("EXITING")
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("RESULT True Tool stuck did not finish within 0.2 seconds")
    assert lines[1:] == ["CANCELLED", "EXITING"]
