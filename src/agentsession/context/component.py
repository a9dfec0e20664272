"""Context components: one independently loaded fact of the System Context.

A component has a stable namespaced key (``core.date``, ``plugin.<name>.<key>``) and one loader.
The loader returns, from one coherent sample, ``Rendered(baseline, update)`` — the string used in a
baseline and the absolute current-state string sent when it changed (its hash is the checkpoint
value) — or ``UNAVAILABLE`` (keep the prior state, emit nothing) or ``ABSENT`` (successfully
loaded absence: removal text, once). Loaders may be sync or async. A loader that raises counts as
unavailable, so a broken source never breaks a session; the error is kept for diagnosis.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeAlias

from .._frozen import frozen
from ..errors import ContextLoadError, UsageError
from ..hygiene import replace_surrogates

__all__ = [
    "ABSENT",
    "UNAVAILABLE",
    "Absent",
    "ContextComponent",
    "LoadResult",
    "Loader",
    "Rendered",
    "Unavailable",
    "content_hash",
]

_log = logging.getLogger("agentsession.context")
_KEY = re.compile(r"^[a-z][a-z0-9_-]*(\.[A-Za-z0-9_-]+)+(:[^\s]+)?$")


@frozen
class Rendered:
    """A loaded value: ``baseline`` for a fresh System Context, ``update`` when it changed.

    ``update`` defaults to the baseline text; it must state the full current value, never a diff.
    """

    baseline: str
    update: str | None = None

    @property
    def update_text(self) -> str:
        """The update string (the baseline when none was given)."""
        return self.baseline if self.update is None else self.update


@frozen
class Unavailable:
    """The value cannot be loaded right now: keep the prior state, emit nothing."""

    reason: str = ""
    kind: Literal["unavailable"] = "unavailable"


@frozen
class Absent:
    """The source was loaded and has no value: the component is removed (announced once)."""

    kind: Literal["absent"] = "absent"


UNAVAILABLE: Final = Unavailable()
"""What a loader returns when its source is down for now: the model keeps what it was told."""
_PLAIN: Final = frozenset({str, Rendered, Unavailable, Absent})
ABSENT: Final = Absent()
"""What a loader returns when its fact no longer exists: the removal text is sent once."""

LoadResult: TypeAlias = Rendered | Unavailable | Absent
Loader: TypeAlias = Callable[[], LoadResult | str | Awaitable[LoadResult | str]]


@functools.lru_cache(maxsize=256)
def content_hash(text: str) -> str:
    """The checkpoint hash of an update string.

    Kept for the texts seen last: every boundary hashes each component's update text, which
    is nearly always the one it hashed before.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class ContextComponent:
    """A keyed producer of one System Context fact.

    Args:
        key: The component's key (``plugin.<name>.<key>`` for an application's own, unique
            within a runtime).
        load: Called right before each provider call; returns a plain string (baseline and
            update alike), ``Rendered``, ``UNAVAILABLE`` or ``ABSENT``. May be async.
        removal: The text announced once when the component goes away (default: a line
            naming the key).
    """

    def __init__(self, key: str, load: Loader, *, removal: str | None = None) -> None:
        if not isinstance(key, str) or not _KEY.match(key):
            raise UsageError(
                f"context component key {key!r} must be namespaced like 'plugin.name.key'"
            )
        if not callable(load):
            raise UsageError(f"context component {key}: load must be callable")
        self.key = key
        self._load = load
        self.removal = removal
        self.last_error: BaseException | None = None
        self._checked: Rendered | None = None  # the value last checked, often sampled again

    def __repr__(self) -> str:
        return f"ContextComponent({self.key!r})"

    def removal_text(self) -> str:
        """What the model is told when this component stops applying."""
        return self.removal or removal_text(self.key)

    async def sample(self) -> LoadResult:
        """Load once; ``ContextLoadError`` when the loader raises or returns something else.

        Spec 002: unavailable context is an *expected* temporary inability, which a loader
        says by returning ``UNAVAILABLE``; an exception is unexpected and surfaces, so a broken
        source is fixed instead of silently freezing what the model was told.

        Raises:
            ContextLoadError: The loader raised, or returned neither a string nor a ``Rendered``,
                ``UNAVAILABLE`` or ``ABSENT``.
        """
        try:
            value = self._load()
            # Most loaders are plain functions: their values are answered without the
            # awaitable check's abstract-class lookup.
            if type(value) not in _PLAIN and inspect.isawaitable(value):
                value = await value
        except Exception as exc:
            self.last_error = exc
            raise ContextLoadError(self.key, f"{type(exc).__name__}: {exc}") from exc
        if value is self._checked:
            return value  # a frozen value of str fields, checked already (a loader kept it)
        if isinstance(value, str):
            value = Rendered(value)
        if (
            isinstance(value, Rendered)
            and isinstance(value.baseline, str)
            and isinstance(value.update, str | None)
        ):
            valid = _valid_text(self.key, value)
            if valid is value and type(value) is Rendered:
                self._checked = value
            return valid
        if isinstance(value, Unavailable | Absent):
            return value
        self.last_error = TypeError(f"loader returned {type(value).__name__}")
        raise ContextLoadError(
            self.key,
            f"the loader returned {type(value).__name__}; it must return a str, ags.Rendered,"
            " ags.UNAVAILABLE or ags.ABSENT",
        )


def _valid_text(key: str, value: Rendered) -> Rendered:
    """``value`` with lone surrogates replaced: its text enters the log, hashes and requests.

    A loader that lists file names read with ``surrogateescape`` (``os.listdir`` of a name that
    is not UTF-8) would otherwise make every later request unencodable.
    """
    baseline, replaced = replace_surrogates(value.baseline)
    update = value.update
    if isinstance(update, str):
        update, more = replace_surrogates(update)
        replaced += more
    if not replaced:
        return value
    _log.warning("context component %s: %d lone surrogates replaced with U+FFFD", key, replaced)
    return Rendered(baseline, update)


def removal_text(key: str) -> str:
    """The default removal announcement (the update message names the key above it)."""
    del key  # one text for every key: the combined message already heads it with the key
    return "This context no longer applies; disregard what it said before."
