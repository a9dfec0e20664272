"""Shared fixtures: runtimes on a real SQLite file with a scripted model and a settable clock.

Every test runs with a network guard: a socket may connect to loopback or a Unix socket only,
so no test can reach a real provider (or anything else) by accident.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import pytest
from hypothesis import settings

import agentsession as ags

from .store import pg

# No per-example deadline anywhere: on a loaded 2-core machine one slow example (a collector
# pause, a busy neighbour) would fail a property that holds, and Hypothesis calls it flaky.
settings.register_profile("agentsession", deadline=None)
settings.load_profile("agentsession")


def _loopback(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # a Unix socket path
    host = str(address[0])
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def guarded(sock: socket.socket, address: Any) -> Any:
        if not _loopback(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return connect(sock, address)

    def guarded_ex(sock: socket.socket, address: Any) -> Any:
        if not _loopback(address):
            raise OSError(f"tests may not reach the network (tried {address!r})")
        return connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_ex)


@pytest.fixture(autouse=True)
def _private_user_dirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test reads or writes the developer's own files.

    The global instruction file, the chat history and the default database live under fresh
    folders, and the environment's choice of database or model is not inherited (a test that
    wants one sets it).
    """
    home = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    for name in ("AGENTSESSION_DB", "AGENTSESSION_MODEL"):
        monkeypatch.delenv(name, raising=False)


#: The stores a contract test runs on (PostgreSQL where ``make test`` started a server).
BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    """A DSN for a schema of this test's own on the test server (skips loudly without one)."""
    with pg.schema(pg.server_dsn()) as dsn:
        yield dsn


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The name of the store a parametrised test runs on."""
    return str(request.param)


class Clock:
    """A settable clock for the date component."""

    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> Clock:
    return Clock(datetime(2026, 1, 1, 12, 0))


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


class ScriptedRuntime(ags.Runtime):
    """A runtime ``make_runtime`` built: ``scripted`` is its model, typed as the scripted one."""

    @property
    def scripted(self) -> ags.ScriptedModel:
        """The scripted model this runtime was given (``AssertionError`` for another model)."""
        model = self.model
        assert isinstance(model, ags.ScriptedModel), f"not a scripted model: {model!r}"
        return model


class MakeRuntime(Protocol):
    """The ``make_runtime`` fixture: ``make_runtime(replies, **runtime_options)``."""

    def __call__(self, replies: Any = (), **kwargs: Any) -> ScriptedRuntime:
        """A runtime on the test's SQLite file, clock and folder, with ``ScriptedModel(replies)``.

        ``model=`` gives a model of your own; any other option goes to ``ags.Runtime``.
        """
        ...


@pytest.fixture
async def make_runtime(tmp_path: Path, db_path: Path, clock: Clock) -> AsyncIterator[MakeRuntime]:
    """Build runtimes on one SQLite file in tmp_path (each with its own store); closed at the end.

    ``make_runtime(replies)`` uses a fresh ScriptedModel; pass ``model=`` for your own.
    """
    made: list[ags.Runtime] = []

    def make(replies: Any = (), **kwargs: Any) -> ScriptedRuntime:
        model = kwargs.pop("model", None) or ags.ScriptedModel(replies)
        kwargs.setdefault("store", ags.SQLiteStore(db_path))
        kwargs.setdefault("project_dir", tmp_path)
        kwargs.setdefault("clock", clock)
        kwargs.setdefault("config", ags.Config(retry_base_delay=0))
        runtime = ScriptedRuntime(model=model, **kwargs)
        made.append(runtime)
        return runtime

    yield make
    for runtime in made:
        await runtime.close()
