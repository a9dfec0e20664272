"""Runtime: the wiring of one application — store, model, tools, components, config, clock.

A runtime is shared by all sessions it creates or opens. It owns the component registry (built-in
``core.date`` and ``core.environment`` first, plugin components after them by key), the tools,
the token counter used for preflight, and title generation. Sessions read everything live from
here at each safe boundary, so registering a component affects the next request of every session.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from os import PathLike
from pathlib import Path

from .budget import TokenCounter, calibrate, counter_for, default_counter, preflight
from .config import Config
from .context.builtins import date_component, environment_component
from .context.component import ContextComponent
from .context.registry import ComponentHandle, ComponentRegistry, PluginScope
from .errors import UsageError
from .log import TRANSCRIPT_KINDS, SystemPromptCheckpoint, UserEntry, now
from .providers.base import Model, complete
from .providers.scripted import ScriptedModel
from .request import Message, Request, Usage, UserMessage, text_of
from .session import Session, transcript_from
from .store.base import SessionInfo, Store
from .sync import run_sync
from .tools import Tool

__all__ = ["Runtime"]

TITLE_INSTRUCTIONS = (
    "Name the conversation below in at most six words. Reply with the title only: no quotes, "
    "no punctuation at the end."
)
_TITLE_INPUT_CHARS = 4_000


class Runtime:
    """Creates and opens sessions; see the package docs for every argument."""

    def __init__(
        self,
        *,
        store: Store | None = None,
        model: Model | None = None,
        project_dir: str | PathLike[str] | None = None,
        tools: Iterable[Tool] = (),
        components: Iterable[ContextComponent] = (),
        config: Config | None = None,
        clock: Callable[[], datetime] | None = None,
        title_model: Model | None = None,
        summarizer: Model | None = None,
        token_counter: TokenCounter | None = None,
    ) -> None:
        if store is None:
            from .store.sqlite import SQLiteStore

            store = SQLiteStore()
        self.store: Store = store
        self._model = model
        self.project_dir = Path(project_dir or Path.cwd()).resolve()
        self.config = config or Config()
        self.clock: Callable[[], datetime] = clock or (lambda: datetime.now().astimezone())
        self.title_model = title_model
        self.summarizer = summarizer
        self.token_counter: TokenCounter = token_counter or _counter_for(model)
        self.tools: list[Tool] = []
        for item in tools:
            if not isinstance(item, Tool):
                raise UsageError(
                    f"tools must be decorated with @ags.tool; got {type(item).__name__}"
                )
            if self.tool_named(item.name) is not None:
                raise UsageError(f"two tools are named {item.name!r}")
            self.tools.append(item)
        self.registry = ComponentRegistry(
            [
                date_component(self.clock, self.config.timezone),
                environment_component(self.project_dir),
            ]
        )
        for component in components:
            self.registry.register(component)

    # -- wiring -------------------------------------------------------------------------------

    @property
    def model(self) -> Model:
        """The default model of new and opened sessions."""
        if self._model is None:
            raise UsageError("this Runtime has no model: pass model=ags.get_model(...) or similar")
        return self._model

    def tool_named(self, name: str) -> Tool | None:
        """The registered tool called ``name``, if any."""
        return next((t for t in self.tools if t.name == name), None)

    def register_component(self, component: ContextComponent) -> ComponentHandle:
        """Add a plugin component; the next safe boundary of each session announces it once."""
        return self.registry.register(component)

    def plugin(self, name: str) -> PluginScope:
        """A replayable scope for one plugin's components (``scope.replay([...])`` on reload)."""
        return self.registry.scope(name)

    def budget_for(self, model: Model) -> int:
        """The token budget of one request to ``model``."""
        return min(self.config.context_window, model.profile.context_window)

    def preflight_for(self, model: Model, user: UserEntry | None) -> Callable[[Request], int]:
        """The budget check of one admission: the request's tokens, or ``BudgetExceededError``."""
        budget = self.budget_for(model)
        text = text_of(user.content) if user is not None else None

        def check(request: Request) -> int:
            return preflight(request, self.token_counter, budget, text=text).total

        return check

    def observe_usage(self, model: Model, request: Request, usage: Usage) -> None:
        """Calibrate the token estimate from what a real provider reported for ``request``.

        The scripted model's figures are guesses and would pull the estimate off.
        """
        if usage.input_tokens > 0 and model.profile.provider != "scripted":
            calibrate(self.token_counter, request, usage.input_tokens)

    async def make_title(self, transcript: Sequence[Message]) -> str | None:
        """A title from the user transcript alone (no System Context, no metadata)."""
        first = next((m for m in transcript if isinstance(m, UserMessage)), None)
        if first is None:
            return None
        fallback = _heuristic_title(text_of(first.content))
        model = self.title_model
        if model is None and self._model is not None and not isinstance(self._model, ScriptedModel):
            model = self._model
        if model is None:
            return fallback
        lines = []
        for message in transcript:
            if message.role in ("user", "assistant") and text_of(message.content).strip():
                lines.append(f"{message.role}: {text_of(message.content).strip()}")
        body = "\n".join(lines)[:_TITLE_INPUT_CHARS]
        request = Request(system=(("title", TITLE_INSTRUCTIONS),), messages=(UserMessage(body),))
        try:
            done = await complete(model, request)
        except Exception:  # a title is a convenience: its model failing must not fail the turn
            return fallback
        title = done.message.content.strip().strip("\"'").strip()
        return title[:80] if title else fallback

    # -- sessions -----------------------------------------------------------------------------

    async def create_session(self) -> Session:
        """A new, empty session in the store."""
        stamp = now()
        info = SessionInfo(
            id=uuid.uuid4().hex,
            created_at=stamp,
            updated_at=stamp,
            project_dir=str(self.project_dir),
        )
        await self.store.create_session(info)
        return Session(self, info, [], [])

    async def open_session(self, session_id: str) -> Session:
        """A stored session (``SessionNotFoundError`` when there is none), in any process."""
        info = await self.store.get_session(session_id)
        kinds = [*TRANSCRIPT_KINDS, "system_prompt_checkpoint"]
        records = await self.store.read(session_id, kinds=kinds)
        checkpoints = [r.entry for r in records if isinstance(r.entry, SystemPromptCheckpoint)]
        return Session(self, info, transcript_from(records), checkpoints)

    async def list_sessions(self) -> list[SessionInfo]:
        """Every stored session, most recently updated first."""
        return await self.store.list_sessions()

    def create_session_sync(self) -> Session:
        """``create_session()`` for plain scripts."""
        return run_sync(self.create_session())

    def open_session_sync(self, session_id: str) -> Session:
        """``open_session()`` for plain scripts."""
        return run_sync(self.open_session(session_id))

    async def close(self) -> None:
        """Close the store."""
        await self.store.close()

    def close_sync(self) -> None:
        """``close()`` for plain scripts."""
        run_sync(self.close())


def _counter_for(model: Model | None) -> TokenCounter:
    """Exact offline counting for OpenAI's own models where an encoding ships; else an estimate."""
    if model is None or model.profile.provider != "openai":
        return default_counter()
    return counter_for("openai:" + model.name.rpartition(":")[2], fallback=default_counter())


def _heuristic_title(text: str) -> str:
    words = text.split()
    title = " ".join(words[:8])
    return title[:60] + ("…" if len(title) > 60 or len(words) > 8 else "")
