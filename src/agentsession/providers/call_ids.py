"""Tool-call ids as each wire format accepts them, mapped deterministically at lowering.

Ids come from whichever provider made the call: ``functions.add:0`` from a Kimi-style server,
100-character ids from gateways, ``toolu_…`` from Anthropic. After a model switch the history
goes to a format with other rules (Anthropic refuses anything outside ``[A-Za-z0-9_-]``; OpenAI
Chat refuses ids over 40 characters), and a refused id would refuse every later request.

An id a format accepts stays as it is, so a provider gets its own ids back unchanged. Any other
id becomes its legal characters, cut to fit, plus a hash of the whole original: the same
history always lowers to the same bytes (the prompt cache holds), and two ids stay two. Only
the lowering sees the mapped ids; the log keeps the originals.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from .._frozen import frozen
from ..request import AssistantMessage, Message, Request, ToolResultMessage

__all__ = ["ID_RULES", "IdRule", "id_breach", "map_call_ids", "wire_call_id"]


@frozen
class IdRule:
    """Which tool-call ids a wire format accepts.

    Every character in ``allowed``, at most ``max_length`` of them, at least one.
    """

    allowed: re.Pattern[str]
    max_length: int
    described: str


_SAFE = re.compile(r"[A-Za-z0-9_-]")
_PRINTABLE = re.compile(r"[\x21-\x7e]")

ID_RULES: dict[str, IdRule] = {
    "openai-chat": IdRule(_PRINTABLE, 40, "1-40 printable ASCII characters"),
    "openai-responses": IdRule(_PRINTABLE, 64, "1-64 printable ASCII characters"),
    "anthropic-messages": IdRule(_SAFE, 64, "1-64 characters of [A-Za-z0-9_-]"),
    "gemini": IdRule(_SAFE, 64, "1-64 characters of [A-Za-z0-9_-]"),
}
_HASH = 10  # hex digits of the original id's hash in a mapped id


def id_breach(call_id: str, fmt: str) -> str | None:
    """Why ``call_id`` breaks ``fmt``'s id rule, or ``None`` when it is accepted."""
    rule = ID_RULES[fmt]
    if not call_id or len(call_id) > rule.max_length:
        return f"tool call id {call_id!r} is not {rule.described}"
    if any(not rule.allowed.fullmatch(ch) for ch in call_id):
        return f"tool call id {call_id!r} is not {rule.described}"
    return None


def wire_call_id(call_id: str, fmt: str, salt: int = 0) -> str:
    """``call_id`` as ``fmt`` accepts it: unchanged when legal, else legal characters + hash."""
    if salt == 0 and id_breach(call_id, fmt) is None:
        return call_id
    rule = ID_RULES[fmt]
    seed = call_id if salt == 0 else f"{call_id}\x00{salt}"
    tag = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH]
    legal = "".join(ch if _SAFE.fullmatch(ch) else "_" for ch in call_id).strip("_")
    head = legal[: rule.max_length - _HASH - 1] or "call"
    return f"{head}_{tag}"


def _mapping(request: Request, fmt: str) -> dict[str, str]:
    """Every call id of ``request`` → its wire id, unique, decided in order of appearance."""
    ids: list[str] = []
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            ids.extend(c.id for c in message.tool_calls)
        elif isinstance(message, ToolResultMessage):
            ids.append(message.call_id)
    if all(id_breach(i, fmt) is None for i in ids):
        return {}
    mapping: dict[str, str] = {}
    taken: set[str] = set()
    for original in dict.fromkeys(ids):
        salt = 0
        wire = wire_call_id(original, fmt)
        while wire in taken:  # a legal id equal to another's mapping: vanishingly rare
            salt += 1
            wire = wire_call_id(original, fmt, salt)
        mapping[original] = wire
        taken.add(wire)
    return mapping


def _mapped(message: Message, mapping: dict[str, str]) -> Message:
    if isinstance(message, AssistantMessage) and message.tool_calls:
        calls = tuple(replace(c, id=mapping.get(c.id, c.id)) for c in message.tool_calls)
        return replace(message, tool_calls=calls)
    if isinstance(message, ToolResultMessage):
        return replace(message, call_id=mapping.get(message.call_id, message.call_id))
    return message


def map_call_ids(request: Request, fmt: str) -> Request:
    """``request`` with every tool-call id legal for ``fmt`` (the same object when all are)."""
    mapping = _mapping(request, fmt)
    if not mapping or all(k == v for k, v in mapping.items()):
        return request
    return replace(request, messages=tuple(_mapped(m, mapping) for m in request.messages))
