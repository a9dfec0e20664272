"""Tools: plain Python functions the model can call.

``@tool`` turns a sync or async function into a ``Tool`` with a JSON schema derived from its type
hints and docstring (``Args:`` section for parameter descriptions). Calling a tool never raises
into the session: arguments that do not match the schema and exceptions inside the function both
become an error result the model reads. ``effect`` declares what the tool does so a permission
preset can be enforced on it, independent of any prompt text.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin, overload

from .errors import UsageError
from .request import ToolSpec

__all__ = ["Effect", "Tool", "ToolOutcome", "tool"]

Effect: TypeAlias = Literal["read", "write", "execute", "network"]
_EFFECTS = ("read", "write", "execute", "network")
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call produced: the text the model reads, and whether it is an error."""

    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    """A callable tool with its declaration."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] = field(repr=False)
    effect: Effect = "read"

    @property
    def spec(self) -> ToolSpec:
        """The neutral declaration sent to the model."""
        return ToolSpec(self.name, self.description, self.parameters)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the underlying function directly (the decorator keeps functions usable)."""
        return self.fn(*args, **kwargs)

    async def invoke(self, arguments: dict[str, Any]) -> ToolOutcome:
        """Validate ``arguments`` and run the function; every failure becomes an error result."""
        problem = validate_arguments(self.parameters, arguments)
        if problem is not None:
            return ToolOutcome(f"Invalid arguments for tool {self.name}: {problem}", True)
        try:
            if inspect.iscoroutinefunction(self.fn):
                value = await self.fn(**arguments)
            else:
                value = await asyncio.to_thread(self.fn, **arguments)
                if inspect.isawaitable(value):
                    value = await value
        except Exception as exc:  # a tool's failure is the model's information, not a crash
            return ToolOutcome(f"Tool {self.name} failed: {type(exc).__name__}: {exc}", True)
        return ToolOutcome(_to_text(value))


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, effect: Effect = "read"
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "read",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a function as a tool: ``@tool`` or ``@tool(effect="write")``."""
    if effect not in _EFFECTS:
        raise UsageError(f"tool effect must be one of {_EFFECTS}, got {effect!r}")

    def wrap(func: Callable[..., Any]) -> Tool:
        tool_name = name or func.__name__
        if not _NAME.match(tool_name):
            raise UsageError(f"tool name {tool_name!r} must match {_NAME.pattern}")
        summary, arg_docs = _parse_docstring(inspect.getdoc(func) or "")
        return Tool(
            name=tool_name,
            description=description if description is not None else summary,
            parameters=_schema_for(func, arg_docs),
            fn=func,
            effect=effect,
        )

    return wrap(fn) if fn is not None else wrap


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and the ``Args:`` entries."""
    lines = doc.splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        stripped = line.strip()
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and " " not in stripped:  # next section (Returns:, …)
                in_args = False
                continue
            match = re.match(r"^(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", stripped)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 4:
                current = match.group(1)
                args[current] = match.group(2)
            elif current and stripped:
                args[current] = f"{args[current]} {stripped}".strip()
            continue
        summary.append(line)
    return "\n".join(summary).strip(), args


def _schema_for(func: Callable[..., Any], arg_docs: dict[str, str]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(func)
    except Exception as exc:
        raise UsageError(f"cannot resolve type hints of tool {func.__name__}: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(func).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {func.__name__} cannot take *args or **kwargs")
        if param.kind is param.POSITIONAL_ONLY:
            raise UsageError(f"tool {func.__name__}: parameter {param.name} is positional-only")
        hint = hints.get(param.name, Any)
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
    return schema


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


def _check(schema: dict[str, Any], value: Any, path: str) -> str | None:
    if "anyOf" in schema:
        problems = [_check(s, value, path) for s in schema["anyOf"]]
        return None if any(p is None for p in problems) else f"{path}: {problems[0]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{path} must be one of {schema['enum']!r}, got {value!r}"
    kind = schema.get("type")
    checks: dict[str, Callable[[Any], bool]] = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
        "array": lambda v: isinstance(v, list),
        "object": lambda v: isinstance(v, dict),
    }
    if kind is not None and not checks[kind](value):
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
