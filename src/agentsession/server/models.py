"""Which model each server session talks to, and the skills its prompts take unless told.

A client chooses a session's model by name when it creates the session, and may change it
while the session is idle (``PATCH``). A name means what it means to the server's configuration
(the command line's ``config.toml``: aliases, ``NAME:MODEL`` for a configured provider, any model
string the package knows); ``ServerModels`` resolves it through the function the server was
given, and refuses a name that does not resolve, or whose model cannot be called here (no key,
no SDK), with a ``UsageError`` (400) in the server's own words: the resolver's message speaks to
the command line (``see: agentsession models``, the variable to set) and goes to the server's
log. A library user's ``create_app(runtime)`` without a resolver offers the runtime's model alone.

The chosen name is kept in the server's own table beside the sessions (``SessionSettings``), so
every process opens the session with the same model; a change is recorded in the log as the
library records it (``session.switch_model``: a ``model_switched`` entry and a new epoch).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable

from .._wiring import close_clients
from ..errors import AgentSessionError, UnknownModelError, UsageError
from ..providers.base import Model
from ..store.base import Store
from .side_table import SideTable

__all__ = ["ModelResolver", "ServerModels", "SessionSettings", "Settings"]

_log = logging.getLogger(__name__)

ModelResolver = Callable[[str], Model]
"""Makes the model a name means, ready to be called (``UsageError`` or another error if not)."""

_CREATE = (
    "CREATE TABLE IF NOT EXISTS agentsession_settings"
    " (session_id TEXT PRIMARY KEY, model TEXT, skills TEXT)"
)


class ServerModels:
    """The models a server's sessions may talk to, made once per name and reused."""

    def __init__(self, default: Model, resolve: ModelResolver | None = None) -> None:
        self._default = default
        self._resolve = resolve
        self._made: dict[str, Model] = {default.name: default}

    @property
    def default_name(self) -> str:
        """The name of the model a session gets when it names none."""
        return self._default.name

    def get(self, name: str | None) -> Model:
        """The model ``name`` means here (``None``: the default); ``UsageError`` if none."""
        if name is None:
            return self._default
        if not isinstance(name, str) or not name.strip():
            raise UsageError("'model' must be a non-empty model name")
        found = self._made.get(name)
        if found is not None:
            return found
        if self._resolve is None:
            raise UsageError(
                f"unknown model {name!r}: this server offers only {self.default_name!r}"
            )
        try:
            model = self._resolve(name)
        except UnknownModelError as exc:
            meant = f"; did you mean {exc.suggestion!r}?" if exc.suggestion else ""
            raise UsageError(f"model {name!r} is not offered by this server{meant}") from None
        except AgentSessionError as exc:  # no key, no SDK: the operator's to fix, not a client's
            _log.warning("model %r cannot be called on this server: %s", name, exc)
            raise UsageError(
                f"model {name!r} is configured on this server but cannot be called here"
                " (its credentials or client library are missing; the server's log says which)"
            ) from None
        self._made[name] = model
        return model

    def opened(self, name: str | None) -> Model:
        """The model to open a session with: its recorded name's, else the default.

        A recorded name the configuration no longer knows falls back to the default (said in
        the server's log); the session records the switch at its next request, as a library
        session opened with another model does.
        """
        try:
            return self.get(name)
        except UsageError as exc:
            _log.warning("a session's model is no longer offered, using the default: %s", exc)
            return self._default

    def named(self, model_name: str) -> Model | None:
        """A model made here whose name (as the log records it) is ``model_name``."""
        return next((m for m in self._made.values() if m.name == model_name), None)

    async def close(self) -> None:
        """Close the clients of the models made here (the default is the runtime's)."""
        await close_clients(m for m in self._made.values() if m is not self._default)


class Settings:
    """One session's choices: its model's name (``None``: the default) and default skills."""

    __slots__ = ("model", "skills")

    def __init__(self, model: str | None = None, skills: tuple[str, ...] = ()) -> None:
        self.model = model
        self.skills = skills


class SessionSettings:
    """The settings per session, in the store's database (memory for a store of neither)."""

    def __init__(self, store: Store) -> None:
        self._sql = SideTable(store, _CREATE).sql
        self._memory: dict[str, Settings] = {}

    async def get(self, session_id: str) -> Settings:
        """The session's settings (the defaults when none were recorded)."""
        rows = await self._sql(
            "SELECT model, skills FROM agentsession_settings WHERE session_id = ?", (session_id,)
        )
        if rows is None:
            return self._memory.get(session_id, Settings())
        if not rows:
            return Settings()
        model, skills = rows[0]
        names = json.loads(skills) if skills else []
        return Settings(model, tuple(str(n) for n in names))

    async def set(self, session_id: str, settings: Settings) -> None:
        """Record the session's settings."""
        skills = json.dumps(list(settings.skills))
        done = await self._sql(
            "INSERT INTO agentsession_settings (session_id, model, skills) VALUES (?, ?, ?)"
            " ON CONFLICT (session_id) DO UPDATE SET model = excluded.model,"
            " skills = excluded.skills",
            (session_id, settings.model, skills),
        )
        if done is None:
            self._memory[session_id] = settings

    async def forget(self, session_id: str) -> None:
        """The session is gone."""
        done = await self._sql(
            "DELETE FROM agentsession_settings WHERE session_id = ?", (session_id,)
        )
        if done is None:
            self._memory.pop(session_id, None)
