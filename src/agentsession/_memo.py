"""Memos of values computed from frozen objects, keyed by the object's identity.

The same frozen values (a window message, a tool declaration) go into request after request;
their JSON, digest and token count never change, so each is computed once. A key is the object
itself: the memo holds a reference to it, so its ``id`` cannot be reused while the entry lives,
and a hit is checked with ``is``. Objects need not be hashable (messages hold dicts). The memo is
bounded: when full, the oldest half is dropped. Thread-safe.

``PrefixMemo`` keeps the state of a fold over a tuple (a running hash, a token sum), so the next,
longer tuple of the same objects folds only what it adds. ``conforms`` keeps, per class, whether
its objects satisfy a runtime-checkable protocol; ``one_shot``, per thread, the C encoder
``json`` would build for every value it encodes.

Kept per class too: the field names of a dataclass (``field_names``), and, for a class met often,
``codec.encode``'s walk and its canonical text written out as code (``compile_encoder``,
``compile_text``, ``canonical_writer``): each field read as an attribute, a scalar written
without a call. They give what the walk gives, keys in the same order (property tests); a
process that encodes a handful of values never compiles.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
import operator
import threading
from collections.abc import Callable
from itertools import islice
from json.encoder import encode_basestring
from typing import Any, Generic, TypeVar

__all__ = [
    "ENCODERS",
    "SCALARS",
    "TEXTS",
    "Encoder",
    "IdentityMemo",
    "PrefixMemo",
    "TextEncoder",
    "canonical_writer",
    "compile_encoder",
    "compile_text",
    "conforms",
    "field_names",
    "met_often",
    "one_shot",
]

V = TypeVar("V")
S = TypeVar("S")


class IdentityMemo(Generic[V]):
    """At most ``size`` values, each for one object, found by that object's identity."""

    def __init__(self, size: int = 8_192) -> None:
        self._size = max(2, size)
        self._items: dict[int, tuple[object, V]] = {}
        self._lock = threading.Lock()

    def get(self, obj: object) -> V | None:
        """The value kept for ``obj`` (this very object), or ``None``."""
        hit = self._items.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        return None

    def put(self, obj: object, value: V) -> V:
        """Keep ``value`` for ``obj``; returns ``value``."""
        with self._lock:
            if len(self._items) >= self._size:
                for key in list(islice(self._items, self._size // 2)):
                    del self._items[key]
            self._items[id(obj)] = (obj, value)
        return value

    def __len__(self) -> int:
        return len(self._items)


class PrefixMemo(Generic[S]):
    """States of a fold over tuples, resumed from the last tuple kept that the next one extends.

    Consecutive requests of a session carry the same message objects and a few new ones at the
    end. The state after the last tuple folded is kept per first element (by identity: a session
    window's first message); a later tuple that starts with exactly those objects resumes from
    it and folds only its new elements. Resuming checks every kept element with ``is`` (in C:
    far cheaper than folding it again). A kept state must never be changed: copy it to go on.
    At most ``size`` tuples are kept; when full, the oldest half is dropped. Thread-safe.
    """

    def __init__(self, size: int = 256) -> None:
        self._size = max(2, size)
        self._items: dict[int, tuple[tuple[object, ...], S]] = {}
        self._lock = threading.Lock()

    def resume(self, items: tuple[object, ...]) -> tuple[int, S] | None:
        """How many leading ``items`` a kept state covers, and that state (``None``: none)."""
        if not items:
            return None
        hit = self._items.get(id(items[0]))
        if hit is None:
            return None
        kept, state = hit
        if len(kept) > len(items) or not all(map(operator.is_, kept, items)):
            return None
        return len(kept), state

    def keep(self, items: tuple[object, ...], state: S) -> None:
        """Keep ``state``, the fold over all of ``items`` (which must not be empty)."""
        with self._lock:
            if len(self._items) >= self._size:
                for key in list(islice(self._items, self._size // 2)):
                    del self._items[key]
            self._items[id(items[0])] = (items, state)


_CONFORMS: dict[tuple[type, type], bool] = {}


def conforms(obj: object, protocol: type) -> bool:
    """``isinstance(obj, protocol)`` for a runtime-checkable protocol of methods, once per class.

    Such a check looks every member of the protocol up at each call (10–20 µs on Python 3.11,
    several times per turn); the members are methods, so the object's class decides, and its
    answer is kept. Narrow with ``typing.cast`` after a ``True``.
    """
    key = (type(obj), protocol)
    found = _CONFORMS.get(key)
    if found is None:
        found = _CONFORMS[key] = isinstance(obj, protocol)
    return found


#: The C encoder ``json`` builds afresh inside every ``JSONEncoder.encode`` (absent: none).
_C_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)


class _Prepared(threading.local):
    """One thread's C encoder for one set of ``JSONEncoder`` settings, and its circle check."""

    def __init__(self, settings: json.JSONEncoder) -> None:
        self.markers: dict[int, Any] = {}
        self.run = _C_MAKE_ENCODER(
            self.markers if settings.check_circular else None,
            settings.default,
            _text_encoder(settings),
            settings.indent,
            settings.key_separator,
            settings.item_separator,
            settings.sort_keys,
            settings.skipkeys,
            settings.allow_nan,
        )


def _text_encoder(settings: json.JSONEncoder) -> Callable[[str], str]:
    if settings.ensure_ascii:
        return json.encoder.encode_basestring_ascii
    return json.encoder.encode_basestring


def one_shot(settings: json.JSONEncoder) -> Callable[[Any], str]:
    """``settings.encode``, with its C encoder built once per thread instead of at every call.

    ``JSONEncoder.encode`` builds a C encoder for every value it encodes, which costs more than
    encoding a small value; the package encodes several at every step. The text is the same:
    this is the C encoder ``encode`` would build, with the same settings. Its circle check keeps
    the containers being encoded and leaves none behind, also after an error (cleared here).
    """
    if _C_MAKE_ENCODER is None or settings.indent is not None:
        return settings.encode
    prepared = _Prepared(settings)
    text = _text_encoder(settings)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return text(value)  # what ``encode`` answers for a string
        state = prepared
        try:
            return "".join(state.run(value, 0))
        except BaseException:
            state.markers.clear()
            raise

    return encode


# -- per class: field names and compiled encoders ---------------------------------------------

Encoder = Callable[[Any], dict[str, Any]]
TextEncoder = Callable[[Any], str]

#: The types ``encode`` returns as they are (by exact type).
SCALARS = frozenset({str, int, float, bool, type(None)})
#: Each class's compiled encoder, once it has been met often.
ENCODERS: dict[type, Encoder] = {}
#: Each class's compiled canonical-text writer, once it has been met often.
TEXTS: dict[type, TextEncoder] = {}
#: Values of a class walked before its encoder is compiled (compiling costs tens of µs).
COMPILE_AFTER = 16

_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}
_MET: dict[type, int] = {}


def field_names(cls: type) -> tuple[str, ...] | None:
    """The field names of dataclass ``cls`` in order (``None``: not a dataclass), kept per class.

    ``dataclasses.fields`` builds them afresh at each call; encoding asks for every value.
    """
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        pass
    names = None
    if dataclasses.is_dataclass(cls) and not issubclass(cls, type):
        names = tuple(f.name for f in dataclasses.fields(cls))
    _FIELD_NAMES[cls] = names
    return names


def met_often(cls: type, met: dict[type, int] = _MET) -> bool:
    """Counts a value of ``cls`` in ``met``; whether more than ``COMPILE_AFTER`` have been met."""
    count = met[cls] = met.get(cls, 0) + 1
    return count > COMPILE_AFTER


def compile_encoder(cls: type, names: tuple[str, ...], encode: Callable[[Any], Any]) -> Encoder:
    """The encoder of dataclass ``cls`` (fields ``names``), kept in ``ENCODERS``.

    It returns ``{name: encode(value.name), …}``; ``encode`` returns a value of a ``SCALARS``
    type as it is, so it is called only for the others. A name that is not a plain identifier
    is read with ``getattr``.
    """
    scope: dict[str, Any] = {"encode": encode, "SCALARS": SCALARS, "getattr": getattr}
    lines = ["def encode_fields(value):"]
    for i, name in enumerate(names):
        read = f"value.{name}"
        if not name.isidentifier() or keyword.iskeyword(name):
            scope[f"name{i}"] = name
            read = f"getattr(value, name{i})"
        lines.append(f"    item{i} = {read}")
        lines.append(f"    if type(item{i}) not in SCALARS:")
        lines.append(f"        item{i} = encode(item{i})")
    pairs = ", ".join(f"{name!r}: item{i}" for i, name in enumerate(names))
    lines.append(f"    return {{{pairs}}}")
    exec("\n".join(lines), scope)  # the code is written here from field names only
    encoder: Encoder = scope["encode_fields"]
    ENCODERS[cls] = encoder
    return encoder


def compile_text(cls: type, names: tuple[str, ...], text: TextEncoder) -> TextEncoder:
    """The canonical text of a value of dataclass ``cls`` (fields ``names``), kept in ``TEXTS``.

    ``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)`` written straight from the
    fields: the keys in sorted order with the default separators, a string escaped as ``json``
    escapes it, ``None``, a ``bool`` and an ``int`` (of exactly those types) written as ``json``
    writes them, and any other field value by ``text`` (its own canonical text).
    """
    scope: dict[str, Any] = {"STRING": encode_basestring, "TEXT": text, "INT": int.__repr__}
    scope["getattr"] = getattr
    lines = ["def text_fields(value):"]
    joined = []
    for i, name in enumerate(sorted(names)):
        read = f"value.{name}"
        if not name.isidentifier() or keyword.iskeyword(name):
            scope[f"name{i}"] = name
            read = f"getattr(value, name{i})"
        lines.append(f"    item = {read}")
        lines.append("    kind = type(item)")
        lines.append(f"    if kind is str: text{i} = STRING(item)")
        lines.append(f'    elif item is None: text{i} = "null"')
        lines.append(f'    elif kind is bool: text{i} = "true" if item else "false"')
        lines.append(f"    elif kind is int: text{i} = INT(item)")
        lines.append(f"    else: text{i} = TEXT(item)")
        joined.append(f"{encode_basestring(name) + ': '!r} + text{i}")
    body = ' + ", " + '.join(joined) or '""'
    lines.append(f'    return "{{" + {body} + "}}"')
    exec("\n".join(lines), scope)  # the code is written here from field names only
    encoder: TextEncoder = scope["text_fields"]
    TEXTS[cls] = encoder
    return encoder


def canonical_writer(fallback: TextEncoder) -> TextEncoder:
    """``fallback`` (``json.dumps(encode(value), sort_keys=True, ensure_ascii=False)``), faster.

    The same text composed element-wise: a string escaped as ``json`` escapes it, a tuple or list
    joined from its items' texts, a dataclass met often written by its ``compile_text`` writer;
    anything else (and a class met rarely) is left to ``fallback``.
    """
    met: dict[type, int] = {}

    def text(value: Any) -> str:
        cls = type(value)
        if cls is str:
            return encode_basestring(value)
        compiled = TEXTS.get(cls)
        if compiled is not None:
            return compiled(value)
        if cls is tuple or cls is list:
            return "[" + ", ".join(map(text, value)) + "]"
        names = field_names(cls)
        if names is not None and met_often(cls, met):
            return compile_text(cls, names, text)(value)
        return fallback(value)

    return text
