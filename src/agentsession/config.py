"""Runtime configuration: one frozen value, validated on construction."""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Union

from .errors import UsageError

__all__ = ["Config", "ModelPrice"]


@dataclass(frozen=True, kw_only=True)
class ModelPrice:
    """USD per million tokens of one model.

    ``input`` is uncached input; ``cached_input`` input read from the provider's prompt cache;
    ``cache_write`` input written to it with the short lifetime (Anthropic 5 min, OpenAI's
    explicit breakpoints); ``cache_write_long`` written with the long one (Anthropic 1 h).
    ``None`` for a write price means writes cost the input price (providers that charge
    nothing extra). ``source`` and ``date`` say where and when the figures were read.
    """

    input: float
    cached_input: float
    output: float
    cache_write: float | None = None
    cache_write_long: float | None = None
    source: str = ""
    date: str = ""
    kind: Literal["model_price"] = "model_price"

    def __post_init__(self) -> None:
        for name in ("input", "cached_input", "output", "cache_write", "cache_write_long"):
            value = getattr(self, name)
            if value is None and name.startswith("cache_write"):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise UsageError(f"ModelPrice.{name} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise UsageError(f"ModelPrice.{name} must be a finite number >= 0, got {value!r}")

    @property
    def write(self) -> float:
        """USD per million tokens written with the short lifetime."""
        return self.input if self.cache_write is None else self.cache_write

    @property
    def write_long(self) -> float:
        """USD per million tokens written with the long lifetime."""
        return self.write if self.cache_write_long is None else self.cache_write_long


@dataclass(frozen=True, kw_only=True)
class Config:
    """Limits and switches of a runtime; every field has the spec's default where it sets one.

    ``max_transcript_messages`` caps the history messages of one request (a tool call and its
    result count as two); ``window_step`` is how many user turns the window start moves at once;
    ``None`` (the default) uses the cost policy instead: once the cap is exceeded the window
    drops to ``window_keep`` of the cap (default 0.65) in one move, and moves early, at no
    extra cost, when the provider's cache has expired anyway and the window is three quarters
    of the way to the cap (see benchmarks/README.md);
    ``context_window`` is the token budget of one request; ``auto_compact`` enables every
    automatic compaction path; ``max_steps`` bounds the model calls of one prompt;
    ``provider_retries`` is how often a transient provider failure is retried inside a step.
    ``reserve_output_tokens`` is the room a request must leave for the reply; None derives it
    from the model's output limit, 0 lets a request fill the whole budget.
    ``elision_chunk`` is how many counted messages the elision edge of a turn longer than the
    window moves at once (default: half the cap), so such a turn keeps its prefix for several
    steps; 1 elides as little as possible at every step.
    ``lease_ttl`` is how many seconds a session's lease lasts without renewal: another process
    may drive (and recover) a session only after its holder released it or let it expire.
    ``titles=False`` turns off the one extra model call that names a session after its first
    turn (the first words of the first prompt are used instead). ``environment`` lists the facts
    ``core.environment`` states: ``"cwd"`` (it sends the working directory's path to the
    provider), ``"platform"``, ``"git"``; empty turns the component off.
    ``load_project_instructions=False`` skips the project's instruction files (``AGENTS.md``,
    ``CLAUDE.md``) and keeps only the global user file; ``instructions_above_project=False``
    reads them from ``project_dir`` and the folders below it only, never from the folders above
    it up to the repository root (a server whose session folders lie in a repository of its
    own); ``load_project_mcp=False`` ignores the
    project's ``.mcp.json`` (a tool that only reads sessions needs no servers).

    ``max_tool_result_chars`` bounds one tool result (head and tail kept; ``None`` or ``0``
    disables it) and ``tool_timeout`` one tool call in seconds (``None`` or ``0``: no limit); a
    tool's own declaration overrides both. ``permission_preset`` names the preset of new
    sessions; ``permission_presets`` adds user-defined presets by name, each a mapping of
    ``read``, ``write_project``, ``write_elsewhere``, ``execute``, ``network`` to ``"allow"``,
    ``"ask"`` or ``"deny"`` (validated by ``agentsession.permissions.preset_table``).
    ``sandbox`` is where ``run_command`` runs under presets that do not let tools act anywhere:
    ``"auto"`` in bubblewrap when it works here, ``"bwrap"`` always there (a runtime cannot be
    made without it), ``"none"`` never sandboxed (see ``agentsession.tools.sandbox``).
    ``max_import_line_bytes`` is the longest line ``import_session`` reads (16 MiB).

    ``cache_ttl`` is the lifetime asked for the provider's prompt cache where the provider offers
    a choice (Anthropic): ``"5m"``, ``"1h"`` or ``"auto"`` (1 h only when the session's measured
    gaps between requests make it cheaper; with ``idle_policy="auto"`` a pause that needs the
    hour can get it by a lift, which that choice weighs). ``provider_cache_diagnostics`` asks
    providers that can explain a cache miss to do so on every call after the first. ``prices``
    overrides the shipped price table (USD per million tokens), keyed by model string or bare
    model name.

    ``compaction`` is how history is compacted: ``"local"`` (the default) — a summary written by
    the session's model with a request that extends the live one, so the provider reads it from
    its prompt cache (a configured summariser of another model gets the history as plain text);
    ``"provider"`` asks for the provider's own compaction where the model offers it (Anthropic's
    compaction block; OpenAI's ``responses.compact`` on the Responses format, where the installed
    SDK has it), between turns; ``"auto"`` does so only where the ledger's prices say it costs no
    more than the local summary (OpenAI's compaction takes no tools, so with tools it cannot read
    the cache and ``auto`` mostly compacts locally). Elsewhere both compact locally.

    ``cost_alert_usd``: when a session's total cost (``session.cost().total_usd``) crosses this
    many USD, ``session.stream()`` yields a ``CostAlert`` after the response that crossed it.

    ``idle_policy``: what ``Runtime.tend_idle()`` does for a session whose provider cache is
    about to expire: ``"off"`` (the default) nothing; ``"auto"`` the cheapest of keeping the
    cache warm, compacting while it is warm and letting it expire, by the session's gaps, size
    and prices (``ledger.idle``). Each model call it makes is a billed side call.

    ``title_timeout`` bounds the model call that names a session, in seconds (``None`` or ``0``:
    no limit); it runs after the turn's result is delivered, and the first words of the first
    prompt stand in when it fails, times out or the session closes first.

    ``max_loaded_tools`` is how many deferred tools ``search_tools`` keeps loaded at once (the
    least recently found leave first; see ``engine.deferred``).
    """

    max_loaded_skills: int = 3
    max_loaded_tools: int = 16
    max_transcript_messages: int = 60
    window_step: int | None = None
    window_keep: float = 0.65
    context_window: int = 200_000
    auto_compact: bool = True
    compact_threshold: float = 0.9
    keep_user_turns: int = 2
    max_steps: int = 100
    provider_retries: int = 2
    retry_base_delay: float = 0.5
    timezone: str | None = None
    reserve_output_tokens: int | None = None
    titles: bool = True
    elision_chunk: int | None = None
    lease_ttl: float = 30.0
    environment: tuple[str, ...] = ("cwd", "platform", "git")
    load_project_instructions: bool = True
    instructions_above_project: bool = True
    load_project_mcp: bool = True
    max_tool_result_chars: int | None = 40_000
    tool_timeout: float | None = 300.0
    permission_preset: str = "workspace-write"
    permission_presets: Mapping[str, Mapping[str, str]] = field(default_factory=dict, hash=False)
    sandbox: str = "auto"
    max_import_line_bytes: int = 16 * 1024 * 1024
    cache_ttl: str = "auto"
    provider_cache_diagnostics: bool = True
    prices: Mapping[str, ModelPrice] = field(default_factory=dict, hash=False)
    title_timeout: float | None = 10.0
    compaction: str = "local"
    cost_alert_usd: float | None = None
    idle_policy: str = "off"

    @property
    def window_keep_messages(self) -> int | None:
        """What the cost policy keeps after a window move; ``None`` with an explicit step."""
        if self.window_step is not None:
            return None
        return max(1, int(self.max_transcript_messages * self.window_keep))

    @property
    def effective_elision_chunk(self) -> int:
        """The elision chunk in use: the configured one, or half the window cap."""
        if self.elision_chunk is not None:
            return self.elision_chunk
        return max(1, (self.max_transcript_messages + 1) // 2)

    def __post_init__(self) -> None:
        _check_types(self)
        positive = {
            "max_loaded_skills": self.max_loaded_skills,
            "max_loaded_tools": self.max_loaded_tools,
            "max_transcript_messages": self.max_transcript_messages,
            "context_window": self.context_window,
            "max_steps": self.max_steps,
            "max_import_line_bytes": self.max_import_line_bytes,
        }
        for name, value in positive.items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise UsageError(f"Config.{name} must be a positive integer, got {value!r}")
        if isinstance(self.lease_ttl, bool) or not self.lease_ttl > 0:
            raise UsageError(f"Config.lease_ttl must be a positive number, got {self.lease_ttl!r}")
        chunk = self.elision_chunk
        if chunk is not None and (
            not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1
        ):
            raise UsageError(
                f"Config.elision_chunk must be None or a positive integer, got {chunk!r}"
            )
        unknown = sorted(set(self.environment) - {"cwd", "platform", "git"})
        if unknown or isinstance(self.environment, str):
            raise UsageError(
                "Config.environment lists facts among 'cwd', 'platform', 'git';"
                f" got {self.environment!r}"
            )
        reserve = self.reserve_output_tokens
        if reserve is not None and (
            not isinstance(reserve, int) or isinstance(reserve, bool) or reserve < 0
        ):
            raise UsageError(
                f"Config.reserve_output_tokens must be None or a non-negative integer, "
                f"got {reserve!r}"
            )
        if reserve is not None and reserve >= self.context_window:
            raise UsageError(
                f"Config.reserve_output_tokens ({reserve}) leaves no room in "
                f"Config.context_window ({self.context_window})"
            )
        if self.provider_retries < 0:
            raise UsageError("Config.provider_retries must be >= 0")
        if self.keep_user_turns < 0:
            raise UsageError("Config.keep_user_turns must be >= 0")
        if not 0 < self.compact_threshold <= 1:
            raise UsageError("Config.compact_threshold must be in (0, 1]")
        if self.retry_base_delay < 0:
            raise UsageError("Config.retry_base_delay must be >= 0")
        _optional_limit("max_tool_result_chars", self.max_tool_result_chars, (int,))
        _optional_limit("tool_timeout", self.tool_timeout, (int, float))
        _optional_limit("title_timeout", self.title_timeout, (int, float))
        if not isinstance(self.permission_preset, str) or not self.permission_preset:
            raise UsageError("Config.permission_preset must name a preset")
        if not isinstance(self.permission_presets, Mapping):
            raise UsageError("Config.permission_presets must map preset names to their rules")
        if self.sandbox not in ("auto", "bwrap", "none"):
            raise UsageError(
                f"Config.sandbox must be 'auto', 'bwrap' or 'none', got {self.sandbox!r}"
            )
        self._check_cache_and_prices()

    def _check_cache_and_prices(self) -> None:
        step = self.window_step
        if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 1):
            raise UsageError(f"Config.window_step must be None or a positive integer, got {step!r}")
        keep = self.window_keep
        if isinstance(keep, bool) or not isinstance(keep, int | float) or not 0 < keep < 1:
            raise UsageError(f"Config.window_keep must be in (0, 1), got {keep!r}")
        if self.compaction not in ("local", "provider", "auto"):
            raise UsageError(
                f"Config.compaction must be 'local', 'provider' or 'auto', got {self.compaction!r}"
            )
        alert = self.cost_alert_usd
        if alert is not None and (
            isinstance(alert, bool)
            or not isinstance(alert, int | float)
            or not 0 < alert < math.inf  # an alert that can never fire is None
        ):
            raise UsageError(
                f"Config.cost_alert_usd must be None or a finite amount > 0 USD, got {alert!r}"
            )
        if self.idle_policy not in ("auto", "off"):
            raise UsageError(
                f"Config.idle_policy must be 'auto' or 'off', got {self.idle_policy!r}"
            )
        if self.cache_ttl not in ("auto", "5m", "1h"):
            raise UsageError(
                f"Config.cache_ttl must be 'auto', '5m' or '1h', got {self.cache_ttl!r}"
            )
        if not isinstance(self.prices, Mapping) or not all(
            isinstance(k, str) and isinstance(v, ModelPrice) for k, v in self.prices.items()
        ):
            raise UsageError("Config.prices must map model names to ags.ModelPrice values")


@functools.cache
def _hints() -> tuple[tuple[str, Any], ...]:
    hints = typing.get_type_hints(Config)
    return tuple((f.name, hints[f.name]) for f in fields(Config))


def _fits(value: object, hint: Any) -> bool:
    """Whether ``value`` is of the declared type ``hint`` (``bool`` is no number here)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_fits(value, option) for option in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return isinstance(value, tuple) and all(_fits(v, item) for v in value)
    if origin is Mapping:
        return isinstance(value, Mapping)
    if origin is Literal:
        return value in typing.get_args(hint)
    return True


def _shown(hint: Any) -> str:
    names = {bool: "True or False", int: "an integer", float: "a number", str: "a string"}
    if typing.get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_shown(option) for option in typing.get_args(hint))
    if hint is type(None):
        return "None"
    if typing.get_origin(hint) is tuple:
        return "a tuple of strings"
    if typing.get_origin(hint) is Mapping:
        return "a mapping"
    return names.get(hint, str(hint))


def _check_types(config: Config) -> None:
    """Refuse a field of ``config`` that is not of its declared type.

    The ``UsageError`` names the field and the value, before any value is judged
    (``titles="no"`` is no ``True``).
    """
    for name, hint in _hints():
        value = getattr(config, name)
        if name == "environment" and isinstance(value, list):
            value = tuple(value)  # a list of facts is as good as a tuple; stored as one
            object.__setattr__(config, name, value)
        if not _fits(value, hint):
            raise UsageError(f"Config.{name} must be {_shown(hint)}, got {value!r}")


def _optional_limit(name: str, value: object, kinds: tuple[type, ...]) -> None:
    """``None`` or a non-negative number of the given kinds (``0`` disables the limit)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0:  # type: ignore[operator]
        raise UsageError(f"Config.{name} must be None or >= 0, got {value!r}")
