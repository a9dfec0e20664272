"""The error tree: one root, documented parents, originals kept, admitted input never lost."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

import agentsession as ags
import agentsession.errors as errors_module
from agentsession.log import Dispatch, ProviderFailed
from agentsession.request import digest as request_digest

from .conftest import MakeRuntime

Make = MakeRuntime

#: Each error and its documented direct parent (errors.py).
TREE: dict[str, str] = {
    "UsageError": "AgentSessionError",
    "SessionBusyError": "UsageError",
    "UnknownFormatError": "UsageError",
    "UnknownModelError": "UsageError",
    "SessionNotFoundError": "AgentSessionError",
    "ConflictError": "AgentSessionError",
    "BudgetExceededError": "AgentSessionError",
    "MaxStepsExceededError": "AgentSessionError",
    "RequestValidationError": "AgentSessionError",
    "ProviderError": "AgentSessionError",
    "TransientProviderError": "ProviderError",
    "ContextOverflowError": "ProviderError",
    "CredentialsError": "ProviderError",
    "StoreError": "AgentSessionError",
    "CorruptEntryError": "StoreError",
    "SessionFileError": "StoreError",
    "ContextLoadError": "AgentSessionError",
}


def test_every_error_is_public_and_in_the_documented_tree() -> None:
    names = set(errors_module.__all__)
    assert names == {*TREE, "AgentSessionError"}
    for name in names:
        cls = getattr(ags, name)
        assert cls is getattr(errors_module, name)
        assert name in ags.__all__
        assert issubclass(cls, ags.AgentSessionError)
    assert issubclass(ags.AgentSessionError, Exception)
    for name, parent in TREE.items():
        cls = getattr(ags, name)
        assert cls.__bases__[0] is getattr(ags, parent), name
    # The documented diagram, checked from the other side too.
    assert issubclass(ags.SessionBusyError, ags.UsageError)
    assert issubclass(ags.TransientProviderError, ags.ProviderError)
    assert issubclass(ags.CorruptEntryError, ags.StoreError)
    assert not issubclass(ags.ProviderError, ags.UsageError)
    assert not issubclass(ags.StoreError, ags.ProviderError)
    assert not issubclass(ags.ConflictError, ags.StoreError)
    # Familiar built-in bases for callers that catch those.
    assert issubclass(ags.UsageError, ValueError)
    assert issubclass(ags.SessionNotFoundError, LookupError)


def test_errors_carry_their_details() -> None:
    missing = ags.SessionNotFoundError("abc")
    assert missing.session_id == "abc" and "abc" in str(missing)
    corrupt = ags.CorruptEntryError("bad", session_id="s1", seq=7)
    assert (corrupt.session_id, corrupt.seq) == ("s1", 7)
    assert "s1" in str(corrupt) and "seq 7" in str(corrupt)
    budget = ags.BudgetExceededError("too big", text="kept", tokens=10, budget=5)
    assert (budget.text, budget.tokens, budget.budget) == ("kept", 10, 5)
    assert ags.ProviderError("x", status=503).status == 503


async def test_plain_exception_becomes_provider_error_and_input_stays(make_runtime: Make) -> None:
    original = ConnectionResetError("the socket closed")
    runtime = make_runtime([original])
    session = await runtime.create_session()
    with pytest.raises(ags.ProviderError) as caught:
        await session.prompt("please keep this input")
    error = caught.value
    assert type(error) is ags.ProviderError  # not transient: it was not retried
    assert error.__cause__ is original
    assert "ConnectionResetError" in str(error) and "the socket closed" in str(error)
    model = runtime.model
    assert isinstance(model, ags.ScriptedModel)
    assert len(model.requests) == 1

    records = await session.log()
    kinds = [r.entry.kind for r in records]
    assert kinds == ["user", "epoch", "system_prompt_checkpoint", "dispatch", "provider_failed"]
    failed = records[-1].entry
    assert isinstance(failed, ProviderFailed)
    assert failed.error_type == "ConnectionResetError" and "the socket closed" in failed.error
    assert [m.content for m in session.messages] == ["please keep this input"]
    assert not session.busy

    # A new process sees the same: the input and the admitted context are durable.
    other = make_runtime(["answered at last"])
    reopened = await other.open_session(session.id)
    assert [m.content for m in reopened.messages] == ["please keep this input"]
    result = await reopened.retry()
    assert result.text == "answered at last"
    dispatches = [r.entry for r in await reopened.log() if isinstance(r.entry, Dispatch)]
    assert len(dispatches) == 2 and dispatches[0].digest == dispatches[1].digest
    resent = other.scripted.requests[0]
    assert request_digest(resent) == dispatches[0].digest == request_digest(model.requests[0])
    assert [m.role for m in reopened.messages] == ["user", "assistant"]


async def test_provider_errors_of_the_package_pass_through(make_runtime: Make) -> None:
    runtime = make_runtime([ags.CredentialsError("no API key in OPENAI_API_KEY")])
    session = await runtime.create_session()
    with pytest.raises(ags.CredentialsError, match="OPENAI_API_KEY"):
        await session.prompt("hi")
    kinds = [r.entry.kind for r in await session.log()]
    assert kinds[0] == "user" and kinds[-2:] == ["dispatch", "provider_failed"]


async def test_transient_errors_are_retried_with_the_same_request(make_runtime: Make) -> None:
    busy = [ags.TransientProviderError("rate limited", status=429) for _ in range(3)]
    runtime = make_runtime(busy, config=ags.Config(provider_retries=2, retry_base_delay=0))
    session = await runtime.create_session()
    with pytest.raises(ags.TransientProviderError) as caught:
        await session.prompt("hello")
    assert caught.value is busy[-1]
    requests = runtime.scripted.requests
    assert len(requests) == 3
    assert len({request_digest(r) for r in requests}) == 1
    kinds = [r.entry.kind for r in await session.log()]
    assert kinds.count("dispatch") == 1 and kinds.count("provider_failed") == 1
    assert kinds.count("user") == 1


async def test_budget_error_admits_nothing_and_returns_the_text(make_runtime: Make) -> None:
    runtime = make_runtime(["never"], config=ags.Config(context_window=50, retry_base_delay=0))
    session = await runtime.create_session()
    text = "a long question " * 100
    with pytest.raises(ags.BudgetExceededError) as caught:
        await session.prompt(text)
    assert caught.value.text == text
    assert caught.value.tokens > caught.value.budget == 50
    assert await session.log() == []
    assert session.messages == []
    assert runtime.scripted.requests == []


async def test_store_failures_are_store_errors(make_runtime: Make, db_path: Path) -> None:
    runtime = make_runtime(["ok"])
    session = await runtime.create_session()
    await session.prompt("hi")
    conn = sqlite3.connect(db_path)
    with conn:
        conn.execute(
            "INSERT INTO entries (session_key, seq, kind, version, data)"
            " VALUES ((SELECT session_key FROM sessions WHERE session_id = ?),"
            " 99, 2, 1, '[1, 2')",  # 2: the code of an assistant entry
            (session.id,),
        )
        # The first user message, damaged in place.
        conn.execute(
            "UPDATE entries SET data = '{' WHERE seq = 0"
            " AND session_key = (SELECT session_key FROM sessions WHERE session_id = ?)",
            (session.id,),
        )
    conn.close()
    # Opening reads no transcript entry; reading one names the damaged row.
    reopened = await runtime.open_session(session.id)
    assert len(reopened.messages) == 2
    with pytest.raises(ags.CorruptEntryError) as caught:
        list(reopened.messages)
    assert caught.value.seq == 0 and caught.value.session_id == session.id
    with pytest.raises(ags.CorruptEntryError) as caught:
        await reopened.log()
    assert caught.value.seq == 0
    with pytest.raises(ags.CorruptEntryError) as caught:
        await reopened.log(1)
    assert caught.value.seq == 99 and caught.value.session_id == session.id
    assert isinstance(caught.value.__cause__, ValueError)

    await runtime.close()
    with pytest.raises(ags.StoreError, match="closed"):
        await runtime.store.get_session(session.id)


async def test_unknown_session_and_usage_errors(make_runtime: Make) -> None:
    runtime = make_runtime(["x"])
    with pytest.raises(ags.SessionNotFoundError) as caught:
        await runtime.open_session("nope")
    assert caught.value.session_id == "nope"
    with pytest.raises(ags.UsageError):
        ags.Config(max_steps=0)
    with pytest.raises(ags.UsageError):
        ags.Runtime(tools=[lambda: None], store=ags.MemoryStore())  # type: ignore[list-item]
    session = await runtime.create_session()
    with pytest.raises(ags.UsageError, match="nothing to retry"):
        await session.retry()


def test_unknown_wire_format() -> None:
    request = ags.Request(system=(), messages=(ags.UserMessage("hi"),))
    with pytest.raises(ags.UnknownFormatError):
        ags.lower(request, "carrier-pigeon")


def test_unknown_model_string() -> None:
    with pytest.raises(ags.UnknownModelError):
        ags.get_model("nope:x")
