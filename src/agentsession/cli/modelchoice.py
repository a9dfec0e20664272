"""Which model the command line talks to, and where its key comes from.

A model string is resolved in this order: an alias of the configuration file; the CLI's own
offline demo model (``scripted:demo``); ``NAME:MODEL`` for a provider the file configures (its
``base_url``, ``api_key_env`` and wire format); any string ``get_model`` knows. A string none of
these knows is an error with a "did you mean" drawn from the configured names.

When nothing names a model, ``default_model`` picks one: the file's ``model``; else, when a
vendor's key variable is set, that vendor's default model (said on standard error); else the
demo model. ``models`` lists what the configuration offers and whether each can be used here.
"""

from __future__ import annotations

import os

from .._frozen import frozen
from ..errors import AgentSessionError, CredentialsError, UnknownModelError, UsageError
from ..providers import get_model
from ..providers.base import Model, Preparable
from ..providers.registry import PREFIXES
from .userconfig import DEFAULT_MODELS, UserConfig, suggest

__all__ = ["DEMO_MODEL", "ModelChoice", "Usable"]

DEMO_MODEL = "scripted:demo"

_VENDOR_KEYS = {
    "openai": ("OPENAI_API_KEY",),
    "openai-chat": ("OPENAI_API_KEY",),
    "openai-responses": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}


@frozen
class Usable:
    """One line of ``agentsession models``: a name, what it is, and why it cannot be used."""

    name: str
    what: str
    problem: str | None = None

    @property
    def usable(self) -> bool:
        """Whether a call could be made (SDK installed, key at hand)."""
        return self.problem is None


@frozen
class ModelChoice:
    """The configuration file's view of models."""

    config: UserConfig

    def resolve(self, spec: str) -> Model:
        """The model called ``spec`` (an alias, the demo, a configured provider, a built-in)."""
        spec = self.config.expand(spec)
        if spec == DEMO_MODEL:
            from .demo import demo_model

            return demo_model()
        provider = self.config.provider_of(spec)
        if provider is not None:
            model = spec.partition(":")[2]
            if not model:
                raise UnknownModelError(f"model string {spec!r} names no model after the provider")
            return get_model(
                provider.spec(model),
                base_url=provider.base_url,
                api_key_env=provider.api_key_env,
                name=spec,
            )
        try:
            return get_model(spec)
        except UnknownModelError:
            known = (*PREFIXES, DEMO_MODEL.partition(":")[0])
            raise suggest(spec, self.config, known) from None

    def key_variables(self, spec: str) -> tuple[str, ...]:
        """The environment variables the key for ``spec`` is read from (none: no key is sent)."""
        spec = self.config.expand(spec)
        provider = self.config.provider_of(spec)
        if provider is not None:
            if provider.api_key_env:
                return (provider.api_key_env,)
            spec = provider.spec("x")  # no variable named: the format's own rule
        return _VENDOR_KEYS.get(spec.partition(":")[0], ())

    def explain(self, exc: BaseException, spec: str | None) -> str:
        """``exc``'s message; a refused key also names the variable it was read from."""
        message = str(exc)
        if spec is None or not isinstance(exc, CredentialsError) or exc.status is None:
            return message
        names = [n for n in self.key_variables(spec) if os.environ.get(n)]
        if not names:
            return message
        return f"{message} (the API key was read from {names[0]}; check that variable)"

    def default_model(self) -> tuple[str, str | None]:
        """The model when nothing names one, and the note that says why (``None``: none)."""
        if self.config.model:
            return self.config.model, None
        for variable, spec in DEFAULT_MODELS:
            if os.environ.get(variable):
                return spec, f"{variable} is set: using {spec} (choose another with --model)"
        note = (
            "No model configured (--model, AGENTSESSION_MODEL or the config file); using the"
            " offline scripted demo model."
        )
        return DEMO_MODEL, note

    def ready(self, model: Model) -> None:
        """Refuse a model that cannot be called here (no key, no SDK), before anything is made."""
        if isinstance(model, Preparable):
            model.ensure_ready()

    def models(self) -> list[Usable]:
        """What ``agentsession models`` lists: aliases, configured providers, vendor defaults."""
        rows = [Usable(DEMO_MODEL, "the offline scripted demo model")]
        for name, target in self.config.aliases.items():
            rows.append(Usable(name, f"alias of {target}", self._problem(target)))
        for provider in self.config.providers.values():
            where = provider.base_url or "the vendor's own endpoint"
            what = f"provider: {provider.format} at {where}; use {provider.name}:MODEL"
            rows.append(Usable(f"{provider.name}:MODEL", what, self._problem(f"{provider.name}:x")))
        for _variable, spec in DEFAULT_MODELS:
            if any(r.name == spec for r in rows):
                continue
            rows.append(Usable(spec, f"{spec.partition(':')[0]}'s default", self._problem(spec)))
        return rows

    def _problem(self, spec: str) -> str | None:
        try:
            self.ready(self.resolve(spec))
        except CredentialsError:
            names = self.key_variables(spec)
            return f"no API key: set {' or '.join(names)}" if names else "no API key"
        except (UsageError, AgentSessionError) as exc:
            return str(exc)
        return None
