"""Deferred tools: declared to the session, sent to the model only once ``search_tools`` found them.

A tool declared with ``defer=True`` (``@tool(defer=True)``, or every tool of an MCP server
declared with ``defer_tools``) is not in the request. Whenever the session has one, the request
offers one stable proxy tool, ``search_tools`` with a single string argument ``query``; its
result names the tools it found and loads them. Loaded tools follow the same least-recently-used
rule as loaded skills (``skills.LoadedSkills``, at most ``Config.max_loaded_tools``): finding one
more unloads the least recently found. Each change is a ``ToolLoaded`` / ``ToolUnloaded`` entry
committed with the search's result, and the loaded set is rebuilt from those entries when the
session is opened, so a reopened session offers the same tools.

Loaded tools are offered after every other tool and ``search_tools``, in load order (finding a
loaded tool again changes its recency, not its place), so the tool list only grows or shrinks at
its end: where the provider profile announces tool changes in place the cached prefix survives,
elsewhere the change starts the next epoch, exactly as for a skill's tools. A call of a deferred
tool the request did not offer is refused by the toolbox with ``Unknown tool: <name>``, like any
tool that is not rendered (spec 003); a found tool is permission-checked like any other.

Matching is plain and deterministic: a query that names tools exactly finds those; otherwise its
words against each deferred tool's name (split at ``_``, ``-`` and ``.``) and description, a word
of the name weighing three of the description; at most ``MAX_FOUND`` per search.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..config import Config
from ..hygiene import clean_text
from ..log import LogEntry, ToolLoaded, ToolUnloaded, now
from ..providers._lowering import SEARCH_TOOL_NAME
from ..request import ToolCall
from ..skills import LoadedSkills, SkillEvent
from ..sources import Ran
from ..tools import Tool, ToolOutcome, validate_arguments

__all__ = ["MAX_FOUND", "SEARCH_TOOL", "SEARCH_TOOLS", "DeferredTools"]

#: The proxy tool's name (binding).
SEARCH_TOOLS = SEARCH_TOOL_NAME
#: The most tools one search loads (never more than ``Config.max_loaded_tools``).
MAX_FOUND = 5

_WORD = re.compile(r"[a-z0-9]+")


def _not_direct(query: str) -> Any:
    raise NotImplementedError("search_tools runs inside a session, which answers it itself")


#: The one proxy tool (one object: its declaration is memoised once and never changes).
SEARCH_TOOL = Tool(
    name=SEARCH_TOOLS,
    description=(
        "Search the tools that are available but not loaded yet, by what they do or by name."
        " The tools found are loaded and can be called from your next step on; a tool that is"
        " not loaded answers Unknown tool."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words describing the tool you need."}
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    fn=_not_direct,
)


class DeferredTools:
    """One session's loaded deferred tools, rebuilt from its ``ToolLoaded``/``ToolUnloaded``."""

    def __init__(self, config: Config, state: Iterable[LogEntry] = ()) -> None:
        self._limit = config.max_loaded_tools
        self._order: list[str] = []  # loaded tools in load order: their place in the request
        events: list[SkillEvent] = []
        for entry in state:
            if isinstance(entry, ToolLoaded):
                events.append(SkillEvent("loaded", entry.name))
            elif isinstance(entry, ToolUnloaded):
                events.append(SkillEvent("unloaded", entry.name))
        self._lru = LoadedSkills.replay(events, self._limit)
        for event in events:  # as ``search`` placed them: an unloaded tool leaves its place
            if event.action == "unloaded" and event.name in self._order:
                self._order.remove(event.name)
            elif event.action == "loaded" and event.name not in self._order:
                self._order.append(event.name)
        self._order = [name for name in self._order if name in self._lru]

    @property
    def loaded(self) -> tuple[str, ...]:
        """The loaded deferred tools, least recently found first."""
        return self._lru.loaded

    def arrange(self, tools: Sequence[Tool]) -> list[Tool]:
        """What a request offers of ``tools``: the others, ``search_tools``, the loaded ones.

        ``search_tools`` is there exactly when ``tools`` hold a deferred tool.

        Args:
            tools: Every tool the session has, deferred or not, names unique, in order.
        """
        shown = [t for t in tools if not t.defer]
        deferred = {t.name: t for t in tools if t.defer}
        if not deferred:
            return shown
        shown.append(SEARCH_TOOL)
        shown.extend(deferred[name] for name in self._order if name in deferred)
        return shown

    def search(self, call: ToolCall, tools: Sequence[Tool]) -> Ran:
        """Answer a ``search_tools`` call: find, load (evicting the least recently found), say so.

        Args:
            call: The model's call; its ``query`` argument is matched.
            tools: Every tool the session has; only the deferred ones are searched.
        """
        arguments = dict(call.arguments)
        problem = validate_arguments(SEARCH_TOOL.parameters, arguments)
        if problem is not None:
            return Ran(ToolOutcome(f"Invalid arguments for tool {SEARCH_TOOLS}: {problem}", True))
        query: str = arguments["query"]
        candidates = [t for t in tools if t.defer]
        found = _matches(query, candidates)[: min(MAX_FOUND, self._limit)]
        if not found:
            text = (
                f"No tools match {query!r} ({len(candidates)} tools can be searched);"
                " try other words."
            )
            return Ran(ToolOutcome(clean_text(text, 2000)))
        stamp = now()
        entries: list[LogEntry] = []
        fresh: list[str] = []
        again: list[str] = []
        gone: list[str] = []
        # Least relevant first, so the best match ends up the most recently found.
        for name in reversed(found):
            (again if name in self._lru else fresh).append(name)
            for event in self._lru.read(name).events:
                if event.action == "unloaded":
                    gone.append(event.name)
                    self._order.remove(event.name)
                    entries.append(ToolUnloaded(event.name, call.id, stamp))
            if name not in self._order:
                self._order.append(name)
            entries.append(ToolLoaded(name, call.id, stamp))
        return Ran(ToolOutcome(_report(found, fresh, again, gone)), tuple(entries))


def _report(found: list[str], fresh: list[str], again: list[str], gone: list[str]) -> str:
    lines = [f"Found {len(found)} tool{'s' if len(found) != 1 else ''}: {', '.join(found)}."]
    loaded = [name for name in found if name in fresh]
    if loaded:
        lines.append(f"Loaded (callable from your next step): {', '.join(loaded)}.")
    kept = [name for name in found if name in again]
    if kept:
        lines.append(f"Already loaded: {', '.join(kept)}.")
    if gone:
        lines.append(f"Unloaded to make room (find them again to use them): {', '.join(gone)}.")
    return "\n".join(lines)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _matches(query: str, tools: Sequence[Tool]) -> list[str]:
    """The names of ``tools`` that match ``query``, best first (ties keep declaration order).

    A query that names tools exactly finds those alone, in the order named.
    """
    named = [n for n in dict.fromkeys(query.replace(",", " ").split()) if n]
    exact = {t.name for t in tools}
    chosen = [n for n in named if n in exact]
    if chosen:
        return chosen
    terms = set(_words(query))
    scored: list[tuple[int, int, str]] = []
    for index, tool in enumerate(tools):
        score = 3 * len(terms & set(_words(tool.name))) + len(terms & set(_words(tool.description)))
        if score:
            scored.append((-score, index, tool.name))
    return [name for _, _, name in sorted(scored)]
