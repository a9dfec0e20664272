"""Tools: plain Python functions the model can call.

``@tool`` turns a sync or async function into a ``Tool`` with a JSON schema derived from its type
hints and docstring (``Args:`` section for parameter descriptions). Calling a tool never raises
into the session: arguments that do not match the schema, exceptions inside the function and a
timeout all become an error result the model reads. Every result passes ``clean_text``: lone
surrogates replaced, length bounded (head and tail kept), so a tool can never store text that
breaks a later request.

A tool declares what it does, for the permission preset to enforce independent of any prompt
text: its ``effect``, which arguments are file-system ``paths`` it touches, and whether it is
``destructive``. A parameter annotated ``ToolContext`` is left out of the schema and receives the
per-call context. Sync functions run on a daemon thread (``_daemon``), not the default executor,
whose threads are joined at interpreter exit, so a hanging sync tool can be abandoned at its
timeout or on cancellation without blocking the event loop or the process's exit.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin, overload

from .._frozen import frozen
from .._memo import IdentityMemo
from ..config import Config
from ..errors import UsageError
from ..hygiene import clean_text
from ..request import ToolSpec
from ._daemon import run_on_daemon_thread
from ._docstring import parse_docstring as _parse_docstring
from .context import ToolContext

__all__ = ["Effect", "Tool", "ToolContext", "ToolOutcome", "tool"]

Effect: TypeAlias = Literal["read", "write", "execute", "network"]
_EFFECTS = ("read", "write", "execute", "network")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@frozen
class ToolOutcome:
    """What a tool call produced: the text the model reads, and whether it is an error.

    A tool function may return one itself to report an error without raising.
    """

    content: str
    is_error: bool = False


_SPECS: IdentityMemo[ToolSpec] = IdentityMemo()


@frozen
class Tool:
    """A callable tool with its declaration.

    ``paths`` names the arguments that are file-system paths the call touches (a string, or a
    list of strings); the permission check resolves them. ``destructive`` asks for approval
    under presets that ask for anything, even inside the project. ``timeout`` (seconds) and
    ``max_result_chars`` override ``Config.tool_timeout`` and ``Config.max_tool_result_chars``
    for this tool; ``0`` disables either. ``context_param`` is the parameter that receives the
    ``ToolContext``, if the function has one. A ``defer`` tool stays out of requests until
    ``search_tools`` finds it (see ``engine.deferred``).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    effect: Effect = "read"
    paths: tuple[str, ...] = ()
    destructive: bool = False
    timeout: float | None = None
    max_result_chars: int | None = None
    context_param: str | None = None
    defer: bool = False

    def __post_init__(self) -> None:
        if self.effect not in _EFFECTS:
            raise UsageError(f"tool effect must be one of {_EFFECTS}, got {self.effect!r}")
        paths = (self.paths,) if isinstance(self.paths, str) else tuple(self.paths)
        object.__setattr__(self, "paths", paths)
        properties = self.parameters.get("properties", {})
        for name in paths:
            if name not in properties:
                raise UsageError(
                    f"tool {self.name}: paths names {name!r}, which is not one of its "
                    f"parameters ({', '.join(properties) or 'none'})"
                )
            if not _accepts_text(properties[name]):
                raise UsageError(
                    f"tool {self.name}: path parameter {name!r} must be a string or a list of "
                    "strings"
                )
        _check_limit(f"tool {self.name}: timeout", self.timeout, number=True)
        _check_limit(f"tool {self.name}: max_result_chars", self.max_result_chars, number=False)

    @property
    def spec(self) -> ToolSpec:
        """The neutral declaration sent to the model (the same object every time)."""
        # One object per tool: its JSON, digest and token count are then memoised once, not
        # redone for every request that declares it.
        found = _SPECS.get(self)
        if found is None:
            found = _SPECS.put(self, ToolSpec(self.name, self.description, self.parameters))
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (the decorator keeps functions usable)."""
        return self.fn(*args, **kwargs)

    async def invoke(
        self,
        arguments: dict[str, Any],
        *,
        context: ToolContext | None = None,
        config: Config | None = None,
    ) -> ToolOutcome:
        """Validate ``arguments`` and run the function; every failure becomes an error result.

        The result text is cleaned and bounded.

        Args:
            arguments: The call's arguments, checked against the tool's schema.
            context: Handed to a function that asks for it (default: the current folder as the
                project).
            config: Supplies the default timeout and result limit, which the tool's own
                declaration overrides.
        """
        config = config or Config()
        limit = self.max_result_chars
        if limit is None:
            limit = config.max_tool_result_chars
        outcome = await self._run(arguments, context, config)
        return ToolOutcome(clean_text(outcome.content, limit), outcome.is_error)

    async def _run(
        self, arguments: dict[str, Any], context: ToolContext | None, config: Config
    ) -> ToolOutcome:
        problem = validate_arguments(self.parameters, arguments)
        if problem is not None:
            return ToolOutcome(f"Invalid arguments for tool {self.name}: {problem}", True)
        kwargs = dict(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = context or ToolContext(Path.cwd())
        seconds = self.timeout if self.timeout is not None else config.tool_timeout
        scope = asyncio.timeout(seconds or None)
        try:
            async with scope:
                value = await self._call(kwargs)
        except TimeoutError as exc:
            if scope.expired():
                return ToolOutcome(
                    f"Tool {self.name} did not finish within {seconds:g} seconds; the call was "
                    "abandoned and its result will not be used.",
                    True,
                )
            return _failure(self.name, exc)
        except Exception as exc:  # a tool's failure is the model's information, not a crash
            return _failure(self.name, exc)
        return _outcome(self.name, value)

    async def _call(self, kwargs: dict[str, Any]) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**kwargs)
        value = await run_on_daemon_thread(self.fn, kwargs, name=f"agentsession-tool-{self.name}")
        if inspect.isawaitable(value):
            value = await value
        return value


def _outcome(name: str, value: Any) -> ToolOutcome:
    """What the tool returned, as text; a value that cannot become text is an error result.

    The tool has run by now: its call must get a result (a crash here would leave the call
    recorded as never finished, and the model might make it again).
    """
    try:
        if isinstance(value, ToolOutcome):
            return ToolOutcome(_to_text(value.content), bool(value.is_error))
        return ToolOutcome(_to_text(value))
    except Exception as exc:
        return ToolOutcome(
            f"Tool {name} ran, but its result cannot be shown as text: {type(exc).__name__}: {exc}",
            True,
        )


def _failure(name: str, exc: BaseException) -> ToolOutcome:
    return ToolOutcome(f"Tool {name} failed: {type(exc).__name__}: {exc}", True)


def _check_limit(what: str, value: float | None, *, number: bool) -> None:
    if value is None:
        return
    kinds: tuple[type, ...] = (int, float) if number else (int,)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0:
        kind = "number" if number else "integer"
        raise UsageError(f"{what} must be None or a non-negative {kind}, got {value!r}")


def _accepts_text(prop: dict[str, Any]) -> bool:
    """Whether a parameter's schema admits a string or a list of strings (a path argument)."""
    if "anyOf" in prop:
        return any(_accepts_text(option) for option in prop["anyOf"])
    kind = prop.get("type")
    if kind is None and "enum" not in prop:
        return True  # untyped (Any)
    if kind == "array":
        return _accepts_text(prop.get("items", {}))
    return kind == "string"


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "read",
    paths: Sequence[str] | str = (),
    destructive: bool = False,
    timeout: float | None = None,
    max_result_chars: int | None = None,
    defer: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "read",
    paths: Sequence[str] | str = (),
    destructive: bool = False,
    timeout: float | None = None,
    max_result_chars: int | None = None,
    defer: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool: ``@tool`` or ``@tool(effect="write", paths=["path"])``.

    Args:
        fn: The function (sync or async); its type hints and docstring's ``Args:`` make the
            schema.
        name: The tool's name (default: the function's name).
        description: What the model reads about it (default: the docstring's first part).
        effect: What the tool does: ``read``, ``write``, ``execute`` or ``network``; the
            permission preset decides on it.
        paths: The arguments that are file-system paths it touches (checked against the
            project folder).
        destructive: Make presets that ask for approval ask for this tool too.
        timeout: Seconds before a call is stopped (default: ``Config.tool_timeout``; ``0``
            disables it).
        max_result_chars: The bound on the result text (default:
            ``Config.max_tool_result_chars``; ``0`` disables it).
        defer: Keep the tool out of requests until the model finds it with ``search_tools``.

    Raises:
        UsageError: The effect or the name is invalid, ``paths`` names no text argument, a
            limit is negative, or the signature takes ``*args``/``**kwargs``.
    """
    if effect not in _EFFECTS:
        raise UsageError(f"tool effect must be one of {_EFFECTS}, got {effect!r}")

    def wrap(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        if not _NAME.match(tool_name):
            raise UsageError(f"tool name {tool_name!r} must match {_NAME.pattern}")
        summary, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
        parameters, context_param = _schema_for(func, arg_docs)
        return Tool(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=parameters,
            fn=func,
            effect=effect,
            paths=(paths,) if isinstance(paths, str) else tuple(paths),
            destructive=bool(destructive),
            timeout=timeout,
            max_result_chars=max_result_chars,
            context_param=context_param,
            defer=bool(defer),
        )

    return wrap(fn) if fn is not None else wrap


def _schema_for(
    func: Callable[..., Any], arg_docs: dict[str, str]
) -> tuple[dict[str, Any], str | None]:
    """The JSON schema of ``func``'s parameters, and the name of its ``ToolContext`` parameter."""
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:
        raise UsageError(f"cannot resolve type hints of tool {func.__name__}: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    context_param: str | None = None
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {func.__name__} cannot take *args or **kwargs")
        if param.kind is param.POSITIONAL_ONLY:
            raise UsageError(f"tool {func.__name__}: parameter {param.name} is positional-only")
        hint = hints.get(param.name, Any)
        if hint is ToolContext:
            if context_param is not None:
                raise UsageError(f"tool {func.__name__} has two ToolContext parameters")
            context_param = param.name
            continue
        prop = _json_type(hint, f"{func.__name__}.{param.name}")
        if param.name in arg_docs:
            prop = {**prop, "description": arg_docs[param.name]}
        if param.default is not param.empty:
            if isinstance(param.default, str | int | float | bool) or param.default is None:
                prop = {**prop, "default": param.default}
        else:
            required.append(param.name)
        properties[param.name] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return schema, context_param


def _json_type(hint: Any, where: str) -> dict[str, Any]:
    if hint is Any:
        return {}
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        inner = [_json_type(a, where) for a in options]
        if len(get_args(hint)) != len(options):
            inner.append({"type": "null"})
        return inner[0] if len(inner) == 1 else {"anyOf": inner}
    if origin is Literal:
        values = list(get_args(hint))
        return {"enum": values}
    if origin in (list, Sequence, tuple) or hint in (list, tuple):
        args = get_args(hint)
        item = _json_type(args[0], where) if args and args[0] is not Ellipsis else {}
        return {"type": "array", "items": item} if item else {"type": "array"}
    if origin is dict or hint is dict:
        return {"type": "object"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if hint in simple:
        return {"type": simple[hint]}
    if hint is type(None):
        return {"type": "null"}
    raise UsageError(f"tool parameter {where}: unsupported type {hint!r} for a JSON schema")


def validate_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    """A description of how ``arguments`` break ``schema``, or ``None`` when they fit.

    Covers what ``_schema_for`` produces: object properties, required, no extras, scalar types,
    arrays, enums and unions.
    """
    return _check(schema, arguments, "arguments")


_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}
"""Each JSON schema type's test, made once (not a dict of new functions per checked value)."""


def _check(schema: dict[str, Any], value: Any, path: str) -> str | None:
    if "anyOf" in schema:
        problems = [_check(s, value, path) for s in schema["anyOf"]]
        return None if any(p is None for p in problems) else f"{path}: {problems[0]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of {schema['enum']!r}, got {value!r}"
    kind = schema.get("type")
    if kind is not None and not _TYPE_CHECKS[kind](value):
        return f"{path} must be of type {kind}, got {type(value).__name__}"
    if kind == "array" and "items" in schema:
        for i, item in enumerate(value):
            problem = _check(schema["items"], item, f"{path}[{i}]")
            if problem:
                return problem
    if kind == "object" and "properties" in schema:
        props: dict[str, Any] = schema["properties"]
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            return f"missing required {', '.join(missing)}"
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(props))
            if extra:
                return f"unexpected {', '.join(extra)} (accepted: {', '.join(props) or 'none'})"
        for key, sub in props.items():
            if key in value:
                problem = _check(sub, value[key], key)
                if problem:
                    return problem
    return None
