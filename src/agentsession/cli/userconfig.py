"""The command line's configuration file: default model, named providers, preset, aliases.

The file is ``$XDG_CONFIG_HOME/agentsession/config.toml`` (``~/.config/…`` when the variable
is unset; ``AGENTSESSION_CONFIG`` names another file). It is optional; when present it is
validated as a whole and a mistake is one ``UsageError`` naming the file and the key::

    model = "local:qwen3"            # default model: NAME:MODEL, or any model string
    preset = "workspace-write"       # default permission preset of a new session
    system = "You are terse."        # default application instructions of a new session

    [providers.local]                # a named provider: "local:<model>"
    base_url = "http://127.0.0.1:8080/v1"
    api_key_env = "LOCAL_API_KEY"    # the variable the key is read from (without it:
                                     # none for openai-chat, else the vendor's own)
    format = "openai-chat"           # openai-chat (default), openai-responses,
                                     # anthropic-messages or gemini

    [aliases]
    fast = "openai:gpt-4.1-mini"

    [prices."local:qwen3"]          # USD per million tokens (``ags.ModelPrice``'s fields)
    input = 0.2                      # required: input, cached_input, output
    cached_input = 0.02
    output = 0.8
    cache_write = 0.25               # optional: cache_write, cache_write_long, source, date

A model string ``NAME:MODEL`` whose ``NAME`` is a configured provider talks to that provider's
server with that wire format; the session records ``NAME:MODEL``, so continuing it finds the
same provider again. Keys never live in the file: it names the variable that holds one.

``[prices."PROVIDER:MODEL"]`` prices a model as ``Config(prices=...)`` does (see
``agentsession.ledger.prices``): the command line and ``serve`` pass them to every runtime they
make, and ``cost`` reads them, so all three agree with ``session.cost()``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType

from .._frozen import frozen
from ..config import ModelPrice
from ..errors import UnknownModelError, UsageError

__all__ = [
    "DEFAULT_MODELS",
    "FORMAT_PREFIX",
    "ProviderConfig",
    "UserConfig",
    "config_path",
    "load_config",
    "suggest",
]

FORMAT_PREFIX = {
    "openai-chat": "openai-compatible",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
}
"""A provider's wire format and the built-in prefix that speaks it."""

DEFAULT_MODELS = (
    ("OPENAI_API_KEY", "openai:gpt-4.1"),
    ("ANTHROPIC_API_KEY", "anthropic:claude-sonnet-5-5"),
    ("GEMINI_API_KEY", "gemini:gemini-2.5-pro"),
    ("GOOGLE_API_KEY", "gemini:gemini-2.5-pro"),
)
"""The model used when none is configured and a vendor's key variable is set, in this order."""

_TOP = ("model", "preset", "system", "providers", "aliases", "prices")
_PROVIDER = ("base_url", "api_key_env", "format")
_PRICE = ("input", "cached_input", "output", "cache_write", "cache_write_long", "source", "date")


@frozen
class ProviderConfig:
    """One ``[providers.NAME]`` table."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    format: str = "openai-chat"

    def spec(self, model: str) -> str:
        """The built-in model string this provider's ``model`` is sent as."""
        prefix = FORMAT_PREFIX[self.format]
        if prefix == "openai-compatible":
            return f"openai-compatible:{self.base_url}#{model}"
        return f"{prefix}:{model}"


@frozen
class UserConfig:
    """The parsed file (empty when there is none); ``path`` is where it was looked for."""

    path: Path
    exists: bool = False
    model: str | None = None
    preset: str | None = None
    system: str | None = None
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)

    def expand(self, spec: str) -> str:
        """``spec`` with an alias replaced by what it stands for."""
        return self.aliases.get(spec, spec)

    def provider_of(self, spec: str) -> ProviderConfig | None:
        """The configured provider a ``NAME:MODEL`` string names, if any."""
        name, sep, _ = spec.partition(":")
        return self.providers.get(name) if sep else None


def config_path() -> Path:
    """Where the configuration file is looked for."""
    named = os.environ.get("AGENTSESSION_CONFIG")
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "agentsession" / "config.toml"


def _fail(path: Path, message: str) -> UsageError:
    return UsageError(f"config file {path}: {message}")


def _text(path: Path, where: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, f"{where} must be a non-empty string")
    return value


def _unknown(path: Path, where: str, table: Mapping[str, object], known: tuple[str, ...]) -> None:
    for key in table:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(known)})"
            raise _fail(path, f"unknown key {where}{key!r}{hint}")


def _provider(path: Path, name: str, table: object) -> ProviderConfig:
    where = f"[providers.{name}]"
    if not isinstance(table, dict):
        raise _fail(path, f"{where} must be a table")
    _unknown(path, f"in {where}: ", table, _PROVIDER)
    if not name.replace("-", "").replace("_", "").isalnum():
        raise _fail(path, f"provider name {name!r} may hold letters, digits, '-' and '_' only")
    fmt = table.get("format", "openai-chat")
    if fmt not in FORMAT_PREFIX:
        raise _fail(path, f"{where} format {fmt!r}; use one of {', '.join(FORMAT_PREFIX)}")
    base_url = table.get("base_url")
    if base_url is not None:
        base_url = _text(path, f"{where} base_url", base_url).rstrip("/")
        if not base_url.startswith(("http://", "https://")):
            raise _fail(path, f"{where} base_url must start with http:// or https://")
    elif fmt == "openai-chat":
        raise _fail(path, f"{where} needs a base_url (the server's …/v1 address)")
    key_env = table.get("api_key_env")
    if key_env is not None:
        key_env = _text(path, f"{where} api_key_env", key_env)
        if key_env.startswith("$") or "=" in key_env:
            raise _fail(path, f'{where} api_key_env names a variable, e.g. "MY_API_KEY"')
    return ProviderConfig(name, base_url, key_env, fmt)


def _price(path: Path, name: str, table: object) -> ModelPrice:
    where = f'[prices."{name}"]'
    if not isinstance(table, dict):
        raise _fail(path, f"{where} must be a table")
    _unknown(path, f"in {where}: ", table, _PRICE)
    missing = [key for key in ("input", "cached_input", "output") if key not in table]
    if missing:
        raise _fail(path, f"{where} needs {', '.join(missing)} (USD per million tokens)")
    for key in ("source", "date"):
        if not isinstance(table.get(key, ""), str):
            raise _fail(path, f"{where} {key} must be a string")
    try:
        return ModelPrice(**table)
    except UsageError as exc:
        raise _fail(path, f"{where}: {exc}") from None


def load_config(path: Path | None = None) -> UserConfig:
    """The configuration file, validated; an empty configuration when there is none."""
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return UserConfig(path)
    except OSError as exc:
        raise _fail(path, exc.strerror or str(exc)) from exc
    import tomllib  # here: without a configuration file nothing is parsed

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise _fail(path, str(exc)) from exc
    _unknown(path, "", data, _TOP)
    optional = {k: _text(path, k, data[k]) for k in ("model", "preset", "system") if k in data}
    providers_table = data.get("providers", {})
    aliases_table = data.get("aliases", {})
    prices_table = data.get("prices", {})
    if not all(isinstance(t, dict) for t in (providers_table, aliases_table, prices_table)):
        raise _fail(path, "[providers], [aliases] and [prices] must be tables")
    prices = {name: _price(path, name, t) for name, t in prices_table.items()}
    providers = {name: _provider(path, name, t) for name, t in providers_table.items()}
    aliases = {name: _text(path, f"alias {name!r}", value) for name, value in aliases_table.items()}
    return UserConfig(
        path,
        True,
        optional.get("model"),
        optional.get("preset"),
        optional.get("system"),
        MappingProxyType(providers),
        MappingProxyType(aliases),
        MappingProxyType(prices),
    )


def suggest(spec: str, config: UserConfig, known_prefixes: tuple[str, ...]) -> UnknownModelError:
    """An unknown model string's error, with a "did you mean" from what is configured."""
    prefix = spec.partition(":")[0]
    names = [*config.providers, *known_prefixes]
    close = difflib.get_close_matches(prefix, names, n=1)
    aliases = difflib.get_close_matches(spec, list(config.aliases), n=1)
    meant = aliases[0] if aliases else None
    if meant is None and close and ":" in spec:
        meant = close[0] + spec[len(prefix) :]
    hint = f"; did you mean {meant!r}?" if meant else "; see: agentsession models"
    error = UnknownModelError(f"unknown model {spec!r}{hint}")
    error.suggestion = meant
    return error
