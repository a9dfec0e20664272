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

Where the wire format has neither tool search nor an in-place tool change (Chat Completions,
Gemini: ``proxied``), a load would change the ``tools`` list, the first thing of the cached
prefix. There the list stays as it is: a second stable proxy, ``call_tool(name, arguments)``,
stands in for the loaded tools, whose declarations the ``search_tools`` result gives as text.
``resolve`` turns such a call into the inner tool's own call (``Unknown tool: <name>`` unless it
is loaded), which the toolbox then runs exactly like a direct call: the same gate, approvals and
argument check. The loaded set and its entries are the same either way.

Matching is plain and deterministic: a query that names tools exactly finds those; otherwise its
words against each deferred tool's name (split at ``_``, ``-`` and ``.``) and description, a word
of the name weighing three of the description; at most ``MAX_FOUND`` per search.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..config import Config
from ..hygiene import clean_text
from ..log import LogEntry, ToolLoaded, ToolUnloaded, now
from ..providers._lowering import CALL_TOOL_NAME, SEARCH_TOOL_NAME
from ..providers.base import ModelProfile
from ..request import ToolCall
from ..skills import LoadedSkills, SkillEvent
from ..sources import Ran
from ..tools import Tool, ToolOutcome, validate_arguments

__all__ = [
    "CALL_TOOL",
    "CALL_TOOLS",
    "MAX_FOUND",
    "PROXIED_FORMATS",
    "SEARCH_TOOL",
    "SEARCH_TOOLS",
    "DeferredTools",
    "proxied",
]

#: The proxy tool's name (binding).
SEARCH_TOOLS = SEARCH_TOOL_NAME
#: The name of the proxy that calls a loaded tool on the formats of ``PROXIED_FORMATS``.
CALL_TOOLS = CALL_TOOL_NAME
#: Wire formats without tool search or in-place tool changes, whose ``tools`` list leads the
#: cached prefix: loaded tools are called through ``call_tool`` there.
PROXIED_FORMATS = frozenset({"openai-chat", "gemini"})
#: The most tools one search loads (never more than ``Config.max_loaded_tools``).
MAX_FOUND = 5

_WORD = re.compile(r"[a-z0-9]+")


def _not_direct(**arguments: Any) -> Any:
    raise NotImplementedError("the proxy tools run inside a session, which answers them itself")


def proxied(profile: ModelProfile) -> bool:
    """Whether loaded tools are called through ``call_tool`` for a model of ``profile``."""
    return profile.wire_format in PROXIED_FORMATS and not (
        profile.native_tool_changes or profile.native_tool_search
    )


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

#: The second proxy (one object, like ``SEARCH_TOOL``): runs one loaded tool by name.
CALL_TOOL = Tool(
    name=CALL_TOOLS,
    description=(
        "Call a tool that search_tools loaded, by its name, with arguments that fit the schema"
        " search_tools gave for it. A tool that is not loaded answers Unknown tool."
    ),
    parameters={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The loaded tool's exact name."},
            "arguments": {"type": "object", "description": "The tool's arguments."},
        },
        "required": ["name", "arguments"],
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

    def arrange(self, tools: Sequence[Tool], *, proxy: bool = False) -> list[Tool]:
        """What a request offers of ``tools``: the others, ``search_tools``, the loaded ones.

        ``search_tools`` is there exactly when ``tools`` hold a deferred tool. With ``proxy``
        ``call_tool`` follows it in place of the loaded tools, so the list never changes.

        Args:
            tools: Every tool the session has, deferred or not, names unique, in order.
            proxy: Whether the model calls loaded tools through ``call_tool`` (``proxied``).
        """
        shown = [t for t in tools if not t.defer]
        deferred = {t.name: t for t in tools if t.defer}
        if not deferred:
            return shown
        shown.append(SEARCH_TOOL)
        if proxy:
            shown.append(CALL_TOOL)
        else:
            shown.extend(deferred[name] for name in self._order if name in deferred)
        return shown

    def resolve(self, call: ToolCall, tools: Sequence[Tool]) -> ToolCall | Ran:
        """The inner call of a ``call_tool`` call, or the result refusing it.

        The inner call keeps the outer call's id; it names a loaded deferred tool, else the
        result is ``Unknown tool: <name>``. Its arguments are checked where any call's are.

        Args:
            call: The model's ``call_tool`` call.
            tools: Every tool the session has.
        """
        arguments = dict(call.arguments)
        problem = validate_arguments(CALL_TOOL.parameters, arguments)
        if problem is not None:
            return Ran(ToolOutcome(f"Invalid arguments for tool {CALL_TOOLS}: {problem}", True))
        name: str = arguments["name"]
        if name not in self._lru or not any(t.defer and t.name == name for t in tools):
            return Ran(ToolOutcome(f"Unknown tool: {clean_text(name, 200)}", True))
        return ToolCall(name, dict(arguments["arguments"]), id=call.id)

    def search(self, call: ToolCall, tools: Sequence[Tool], *, declare: bool = False) -> Ran:
        """Answer a ``search_tools`` call: find, load (evicting the least recently found), say so.

        Args:
            call: The model's call; its ``query`` argument is matched.
            tools: Every tool the session has; only the deferred ones are searched.
            declare: Give each found tool's declaration in the result (for ``call_tool``).
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
        text = _report(found, fresh, again, gone)
        if declare:
            by_name = {t.name: t for t in candidates}
            text += "\n" + _declarations([by_name[name] for name in found])
        return Ran(ToolOutcome(text), tuple(entries))


def _declarations(tools: Sequence[Tool]) -> str:
    """The found tools' declarations, one JSON object a line, for ``call_tool``."""
    lines = ["Call them with call_tool(name, arguments); their declarations:"]
    for tool in tools:
        spec = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
        lines.append(json.dumps(spec, ensure_ascii=False, sort_keys=True))
    return "\n".join(lines)


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
