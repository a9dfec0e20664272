"""``get_model()``: a model string to a client satisfying the ``Model`` protocol.

``"openai:gpt-4.1"`` (Responses API; ``"openai-chat:…"`` for Chat Completions),
``"anthropic:claude-opus-4-8"``, ``"gemini:gemini-2.5-pro"`` and
``"openai-compatible:http://127.0.0.1:8080/v1#qwen3"``. Nothing is imported or checked until the
first call, so a model can be built (and its profile read) without an SDK or a key;
``model.ensure_ready()`` checks both without a network call. Only a base URL is checked at
once: one that no request could reach is refused here, not retried as a connection failure.

Keys: ``api_key`` wins; else ``api_key_env`` names the environment variable to read; else the
vendor's own variable. An ``openai-compatible:`` server gets no key from the environment unless
``api_key_env`` names one: ``OPENAI_API_KEY`` belongs to OpenAI, not to whatever server a base
URL points at.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import UnknownModelError, UsageError
from .base import ModelProfile
from .profiles import profile_for

if TYPE_CHECKING:
    from ._client import SDKModel

__all__ = ["PREFIXES", "get_model"]

PREFIXES = (
    "openai",
    "openai-chat",
    "openai-responses",
    "openai-compatible",
    "anthropic",
    "gemini",
)


def check_base_url(url: str) -> None:
    """Refuse a base URL no request could reach, before anything is stored or sent.

    A malformed URL would otherwise fail every call as a "connection failure" and be retried.
    """
    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port that is not a number in range
    except ValueError as exc:
        raise UsageError(f"base URL {url!r} is malformed: {exc}") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"base URL {url!r} is not an http:// or https:// URL with a host")
    if any(ch.isspace() for ch in url) or (port is not None and port == 0):
        raise UsageError(f"base URL {url!r} is malformed")


def get_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    api_key_env: str | None = None,
    profile: ModelProfile | None = None,
    timeout: float = 120.0,
    streaming: bool = True,
    name: str | None = None,
) -> SDKModel:
    """The client for ``spec`` (``"<provider>:<model>"``).

    Args:
        spec: ``"openai:…"``, ``"anthropic:…"``, ``"gemini:…"`` or
            ``"openai-compatible:<base_url>#<model>"``.
        base_url: Overrides the endpoint (tests point it at a loopback server).
        api_key: Overrides the environment (``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``,
            ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``).
        api_key_env: Another variable to read the key from (the only way an
            ``openai-compatible:`` server gets a key from the environment).
        profile: Overrides the per-model profile.
        timeout: Seconds a provider call may take.
        streaming: Stream replies (``False`` asks for the whole reply at once).
        name: The name the model goes by (default: ``spec``), e.g. a configured provider's
            ``"local:qwen3"``.

    Raises:
        UnknownModelError: The provider prefix is unknown or the model name is empty.
        UsageError: The base URL is not an http(s) URL with a host.
    """
    prefix, sep, rest = spec.partition(":")
    if not sep or prefix not in PREFIXES:
        raise UnknownModelError(
            f"cannot resolve model {spec!r}; use one of "
            + ", ".join(
                "'openai-compatible:<base_url>#<model>'"
                if p == "openai-compatible"
                else f"'{p}:<model>'"
                for p in PREFIXES
            )
        )
    model = rest
    if prefix == "openai-compatible":
        url, hash_sign, model = rest.rpartition("#")
        if not hash_sign or not url:
            raise UnknownModelError(
                f"cannot resolve model {spec!r}; use 'openai-compatible:<base_url>#<model>'"
            )
        base_url = base_url or url
    if not model:
        raise UnknownModelError(f"model string {spec!r} names no model")
    if base_url is not None:
        check_base_url(base_url)
    # The clients are imported with the first real model, not with the package: a program on the
    # scripted model never loads them.
    from .anthropic_client import AnthropicModel
    from .gemini_client import GeminiModel
    from .openai_client import OpenAIChatModel, OpenAIResponsesModel

    cls: type[SDKModel]
    key_env: str | tuple[str, ...] | None = api_key_env
    match prefix:
        case "anthropic":
            cls, prof = AnthropicModel, profile or profile_for("anthropic", model)
        case "gemini":
            cls, prof = GeminiModel, profile or profile_for("gemini", model)
        case "openai-compatible":
            cls, prof = OpenAIChatModel, profile or profile_for("openai-compatible", model)
            key_env = api_key_env or ()  # never OPENAI_API_KEY unless named
        case "openai-chat":
            prof = profile or profile_for("openai", model, wire_format="openai-chat")
            cls = OpenAIChatModel
        case _:
            prof = profile or profile_for("openai", model, wire_format="openai-responses")
            cls = OpenAIResponsesModel
    return cls(
        model,
        profile=prof,
        name=name or spec,
        api_key=api_key,
        api_key_env=key_env,
        base_url=base_url,
        timeout=timeout,
        streaming=streaming,
    )
