"""The stored form of log entries: one JSON object per entry, versioned per kind.

``dump_entry`` writes ``(kind, version, json)``; ``load_entry`` reads every version ever written
by upgrading older payloads step by step (``log.upgrades``), so old databases and session files keep
loading. A few kinds keep their fields packed (``_PACKED``, see ``log.packed``): unpacking gives
the fields an unpacked payload holds. The table of entry types is derived from the ``LogEntry``
union, so a new kind cannot be forgotten in one of two lists.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, get_args

from .._frozen import frozen
from ..codec import (
    DecodeError,
    Mismatch,
    decode_entry,
    encode,
    fast_decoder,
    lean,
    lean_text,
    one_shot,
    twin,
)
from ..errors import CorruptEntryError
from .entries import (
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    Interrupted,
    MidConversationSystemMessage,
    ModelSwitched,
    Omitted,
    ProviderFailed,
    RuntimeContextSnapshot,
    SideCall,
    Summary,
    SystemPromptCheckpoint,
    ToolResultEntry,
    UserEntry,
)
from .inbox import InputCancelled, InputDelivered, InputQueued
from .packed import pack_dispatch, pack_dispatch_values, unpack_dispatch
from .state import (
    ApprovalDecided,
    ApprovalRequested,
    ApprovalsDropped,
    InstructionsFound,
    PermissionChanged,
    SkillActivated,
    SkillLoaded,
    SkillStoreWrite,
    SkillUnloaded,
    ToolLoaded,
    ToolUnloaded,
)
from .texts import refs_in, resolved, shared
from .upgrades import UPGRADES as _UPGRADES

__all__ = [
    "TRANSCRIPT_KINDS",
    "VERSIONS",
    "LogEntry",
    "Record",
    "dump_entry",
    "dump_row",
    "load_entry",
    "new_record",
    "quick_entry",
    "text_refs",
]

Packer = Callable[[dict[str, Any]], dict[str, Any]]


LogEntry: TypeAlias = (
    UserEntry
    | AssistantEntry
    | ToolResultEntry
    | MidConversationSystemMessage
    | ContextEpoch
    | SystemPromptCheckpoint
    | Dispatch
    | ProviderFailed
    | Interrupted
    | Summary
    | ModelSwitched
    | Omitted
    | RuntimeContextSnapshot
    | PermissionChanged
    | SkillLoaded
    | SkillUnloaded
    | SkillActivated
    | SkillStoreWrite
    | ToolLoaded
    | ToolUnloaded
    | InstructionsFound
    | ApprovalRequested
    | ApprovalDecided
    | ApprovalsDropped
    | SideCall
    | InputQueued
    | InputDelivered
    | InputCancelled
)

#: Entry kinds that make up the user transcript (``session.messages``).
TRANSCRIPT_KINDS: tuple[str, ...] = ("user", "assistant", "tool_result")

_TYPES: dict[str, type[Any]] = {
    str(cls.__dataclass_fields__["kind"].default): cls for cls in get_args(LogEntry)
}

#: The version each kind is written with today.
VERSIONS: dict[str, int] = {
    **dict.fromkeys(_TYPES, 1),
    "epoch": 4,
    "dispatch": 3,
    "assistant": 4,
    "tool_result": 2,
    "side_call": 2,
    "summary": 2,
}


#: Stored forms that keep their fields packed: (kind, version) -> (pack, unpack). ``pack``
#: takes every encoded field of the current version; ``unpack`` gives them back (``ValueError``
#: when the payload is not one).
_PACKED: dict[tuple[str, int], tuple[Packer, Packer]] = {
    ("dispatch", 3): (pack_dispatch, unpack_dispatch),
}
_DISPATCH_V3 = VERSIONS["dispatch"] == 3  # the form ``pack_dispatch_values`` writes
#: Kinds whose current form is packed: their JSON is not the lean payload's.
_PACKED_KINDS = frozenset(kind for kind, version in _PACKED if VERSIONS[kind] == version)


@frozen(slots=True)
class Record:
    """A stored entry with its position in the session log."""

    seq: int
    entry: LogEntry


def new_record(seq: int, entry: LogEntry) -> Record:
    """``Record(seq, entry)`` without its frozen ``__init__``'s setattr per field.

    A read decodes a window of rows, each a record: it is built as the class's slotted twin,
    which then becomes a ``Record`` (see ``codec.twin``).
    """
    record = _NEW(_RECORD_TWIN)
    record.seq = seq
    record.entry = entry
    record.__class__ = Record
    return record  # type: ignore[no-any-return]


_NEW = object.__new__
_RECORD_TWIN: Any = twin(Record)


def dump_entry(entry: LogEntry) -> tuple[str, int, str]:
    """The stored form of ``entry``: its kind, the current version of that kind, and JSON.

    A field holding its default value is left out, also inside nested values (reading fills it
    in again): most entries carry several (no tool calls, no provider data, usage figures of
    0), and the log keeps every entry.
    Every text is inline: the form needs nothing beside it (see ``dump_row``).
    """
    kind = entry.kind
    return kind, VERSIONS[kind], _text(entry, kind)


def dump_row(entry: LogEntry) -> tuple[str, int, str, dict[str, str]]:
    """``dump_entry`` as a store writes it: an epoch's long baseline texts by reference.

    The texts referred to come back beside the row, by reference, for the store to keep once
    per session (see ``log.texts``).
    """
    kind = entry.kind
    if kind != "epoch":
        return kind, VERSIONS[kind], _text(entry, kind), {}
    payload, texts = shared(_payload(entry))
    return kind, VERSIONS[kind], _json(payload), texts


def text_refs(kind: str, version: int, data: str) -> list[str]:
    """The kept texts a stored row refers to (none when it cannot be read: loading says why)."""
    global _JUST_READ
    if kind != "epoch" or version < 4:
        return []
    try:
        payload = _parsed(data)
    except (json.JSONDecodeError, TypeError):
        return []
    _JUST_READ = (data, payload)
    return refs_in(payload)


#: The row ``text_refs`` parsed last and its payload: a store asks for an epoch's references
#: just before it decodes that very row, which then needs no second parse (``_parsed_row``).
_JUST_READ: tuple[str, Any] | None = None


def _parsed_row(data: str) -> Any:
    """``_parsed(data)``, or the payload ``text_refs`` just parsed from this very string.

    The string is held with its payload, so ``is`` cannot match another one that happens to
    take its place in memory; each payload is given out once (decoding may add its ``kind``).
    """
    global _JUST_READ
    held = _JUST_READ
    if held is not None and held[0] is data:
        _JUST_READ = None
        return held[1]
    return _parsed(data)


def _text(entry: LogEntry, kind: str) -> str:
    """The stored JSON of ``entry``: written straight from its fields where its form is plain."""
    if kind not in _PACKED_KINDS:
        text = lean_text(entry)
        if text is not None:
            return text
    return _json(_payload(entry))


def _payload(entry: LogEntry) -> dict[str, Any]:
    if type(entry) is Dispatch and _DISPATCH_V3:
        # Two a turn: packed straight from its fields (all scalars: ``encode`` keeps them).
        return pack_dispatch_values(
            entry.model,
            entry.step,
            entry.digest,
            entry.cache,
            entry.timestamp,
            entry.tools_digest,
            entry.system_digest,
            entry.messages_digest,
            entry.message_count,
        )
    packed = _PACKED.get((entry.kind, VERSIONS[entry.kind]))
    if packed is not None:
        return packed[0](encode(entry))
    payload: dict[str, Any] = lean(entry)
    return payload


def _json(payload: dict[str, Any]) -> str:
    # Compact: the log keeps every entry, and a space after each separator is a byte per field.
    text = _COMPACT_JSON(payload)
    if text.isascii():  # a C check of the string's kind: ASCII always has a UTF-8 form
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # Lone surrogates (a model's JSON can hold "\ud800") have no UTF-8 form; JSON escapes
        # carry them losslessly into any store or file.
        text = json.dumps(payload, ensure_ascii=True, separators=_COMPACT)
    return text


_COMPACT = (",", ":")
#: ``json.dumps(…, ensure_ascii=False, separators=_COMPACT)`` without building an encoder per
#: call (every stored entry is encoded: the encoder's construction was a third of a small one).
#: No circle check: a payload is built afresh at every depth (``lean``, ``encode``, the packers),
#: so a value that holds itself fails there, never here; the check cost an entry ~1.5k instructions.
_COMPACT_JSON = one_shot(
    json.JSONEncoder(ensure_ascii=False, separators=_COMPACT, check_circular=False)
)


def load_entry(
    kind: str,
    version: int,
    data: str,
    *,
    session_id: str = "",
    seq: int | None = None,
    texts: Mapping[str, str] | None = None,
) -> LogEntry:
    """Decode a stored entry of any known version; ``CorruptEntryError`` when it cannot be.

    ``texts`` holds the kept texts the row refers to, by reference (see ``text_refs``).
    """
    cls = _TYPES.get(kind)
    if cls is None:
        raise CorruptEntryError(f"unknown entry kind {kind!r}", session_id=session_id, seq=seq)
    current = VERSIONS[kind]
    if version > current:
        raise CorruptEntryError(
            f"entry kind {kind!r} has version {version}, newer than this agentsession reads"
            f" ({current}); upgrade agentsession",
            session_id=session_id,
            seq=seq,
        )
    try:
        payload = _parsed_row(data)
    except (json.JSONDecodeError, TypeError) as exc:
        raise CorruptEntryError(
            f"entry is not valid JSON: {exc}", session_id=session_id, seq=seq
        ) from exc
    if not isinstance(payload, dict):
        raise CorruptEntryError("entry is not a JSON object", session_id=session_id, seq=seq)
    packed = _PACKED.get((kind, version))
    if packed is not None:
        try:
            payload = packed[1](payload)
        except ValueError as exc:
            raise CorruptEntryError(
                f"malformed {kind!r} entry: {exc}", session_id=session_id, seq=seq
            ) from exc
    while version < current:
        upgrade = _UPGRADES.get((kind, version))
        if upgrade is None:
            raise CorruptEntryError(
                f"no upgrade for {kind!r} version {version}", session_id=session_id, seq=seq
            )
        payload = upgrade(payload)
        version += 1
    if kind == "epoch":
        try:
            payload = resolved(payload, texts or {})
        except ValueError as exc:
            raise CorruptEntryError(
                f"malformed {kind!r} entry: {exc}", session_id=session_id, seq=seq
            ) from exc
    payload.setdefault("kind", kind)
    if payload["kind"] != kind:
        raise CorruptEntryError(
            f"entry says kind {payload['kind']!r} but is stored as {kind!r}",
            session_id=session_id,
            seq=seq,
        )
    try:
        entry: LogEntry = decode_entry(cls, payload)
    except DecodeError as exc:
        raise CorruptEntryError(
            f"malformed {kind!r} entry: {exc}", session_id=session_id, seq=seq
        ) from exc
    return entry


def quick_entry(kind: Any, version: Any, data: Any) -> LogEntry | None:
    """``load_entry`` of a row in its kind's current form, or ``None`` when it needs more.

    A row of a kind stored as it is (no older version to upgrade, no packing, no kept texts),
    compact JSON whose fields all fit: the entry, parsed and built with nothing else around it.
    Anything else, a damaged row included, gives ``None``, and ``load_entry`` reads the row
    again and says what is wrong with it: the answer is the same either way, only faster.
    """
    build = _QUICK.get(kind) or _quick_for(kind)
    if version != build[0] or type(version) is not int or type(data) is not str:
        return None
    try:
        payload, end = _SCAN(data, 0)
    except (StopIteration, ValueError):
        return None
    # A row leaves its kind out (its column holds it), and the kind field's default is that
    # kind: nothing to add to the payload, only a different kind to refuse.
    if end != len(data) or type(payload) is not dict or payload.get("kind", kind) != kind:
        return None
    try:
        entry: LogEntry = build[1](payload)
    except Mismatch:
        return None
    return entry


#: Each kind ``quick_entry`` has seen: its current version and its payload's decoder (version
#: -1: not a kind it reads).
_QUICK: dict[Any, tuple[int, Callable[[dict[str, Any]], Any]]] = {}


def _never(payload: dict[str, Any]) -> Any:
    raise Mismatch


def _quick_for(kind: Any) -> tuple[int, Callable[[dict[str, Any]], Any]]:
    cls: Any = _TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return (-1, _never)  # not remembered: an unknown kind could be anything
    plain = kind != "epoch" and (kind, VERSIONS[kind]) not in _PACKED
    found = _QUICK[kind] = (VERSIONS[kind], fast_decoder(cls)) if plain else (-1, _never)
    return found


_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _parsed(data: str) -> Any:
    """``json.loads(data)``: the scanner alone for a compact stored row, ``loads`` otherwise.

    A row this package wrote is one JSON value with nothing around it; anything else (blanks
    around it, a damaged row) goes through ``json.loads``, which parses it or says why not.
    """
    try:
        value, end = _SCAN(data, 0)
    except (StopIteration, TypeError):
        return json.loads(data)
    return value if end == len(data) else json.loads(data)
