"""What the real SDK clients share: readiness, credentials, error policy, the streaming skeleton.

Each vendor client lowers the request (running its validator) before it touches the network,
creates its official SDK client lazily (the package imports without any SDK installed) and
maps its SDK's typed exceptions in one function of its own module; whatever that function does
not know leaves through ``provider_failure``. A client streams by default; ``streaming=False``
asks for one complete response, which ``replay`` turns into the same events, so the result is
identical either way. A stream is accepted only when it proves it is whole (the vendor's finish
reason or terminator arrived); an event stream that is not one, or that ends early, is an error.

Credentials: an explicit ``api_key`` wins; else the vendor's environment variables, or the one
``api_key_env`` names. An ``openai-compatible:`` server reads no variable unless one is named,
so ``OPENAI_API_KEY`` is never sent to a third-party base URL by accident.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from ..errors import AgentSessionError, CredentialsError, ProviderError, UsageError
from ..request import Request
from .base import (
    ModelDone,
    ModelEvent,
    ModelProfile,
    ModelTextDelta,
    ModelToolCall,
    provider_failure,
)
from .cache_controls import CacheControls
from .lower import lower
from .wire import controlled

__all__ = [
    "NO_KEY",
    "SDKModel",
    "api_key_from_env",
    "parse_arguments",
    "replay",
    "require_event_stream",
    "require_sdk",
    "usage_count",
]


def usage_count(value: Any) -> int:
    """A usage figure read from an SDK's response: the int it is, else 0 (missing, ``None``)."""
    return value if isinstance(value, int) else 0


NO_KEY = "no-key"
"""The key sent to a keyless OpenAI-compatible server (the SDK insists on one)."""


def replay(done: ModelDone, *, text: bool = True) -> Iterator[ModelEvent]:
    """The events of a complete response: its text, its tool calls, then ``done``.

    ``text=False`` after a stream, whose text was already yielded as it arrived.
    """
    if text and done.message.content:
        yield ModelTextDelta(done.message.content)
    for call in done.message.tool_calls:
        yield ModelToolCall(call)
    yield done


def require_event_stream(headers: Mapping[str, str], vendor: str) -> None:
    """Refuse a successful response that is not an event stream when one was asked for."""
    content_type = headers.get("content-type")
    if content_type is None:
        return  # nothing to judge by; the stream's own terminator check still applies
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "text/event-stream":
        raise ProviderError(
            f"{vendor}: asked for a stream, got a response of type {media or '(none)'}"
        )


def parse_arguments(raw: str | None, *, ended: bool = True) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from the JSON string a provider sent, and what was wrong with them.

    Arguments that are not one JSON object come back empty with the reason; such a call must
    never run (a fragment the output limit cut parses as something else entirely). No text at
    all is a call without arguments (some servers send ``""`` for a tool without parameters)
    only in a reply that ``ended`` normally; in any other it is missing.
    """
    if not raw:
        return {}, None if ended else "missing (the reply did not end normally)"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError:
        return {}, "not valid JSON"
    if not isinstance(value, dict):
        return {}, "not a JSON object"
    return value, None


def api_key_from_env(names: tuple[str, ...], vendor: str) -> str:
    """The first non-empty variable of ``names``, or a clear ``CredentialsError``."""
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    raise CredentialsError(f"{vendor}: no API key; set {' or '.join(names)}")


def require_sdk(module: str, extra: str) -> None:
    """Fail with an install hint when an optional SDK is missing."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package of a dotted name is missing
        found = False
    if not found:
        raise UsageError(f"the {module} SDK is not installed; pip install 'agentsession[{extra}]'")


class SDKModel(ABC):
    """A model served through an official SDK: lowering, lazy client, error translation.

    Satisfies ``Model`` and ``Preparable``. ``api_key_env`` names the environment variable
    to read the key from instead of the vendor's own (``()``: read none, send no real key).
    """

    vendor: str = ""
    wire_format: str = ""
    sdk_module: str = ""
    sdk_extra: str = ""
    key_env: tuple[str, ...] = ()

    def __init__(
        self,
        model: str,
        *,
        profile: ModelProfile,
        name: str,
        api_key: str | None = None,
        api_key_env: str | tuple[str, ...] | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        streaming: bool = True,
    ) -> None:
        self.model = model
        self._profile = profile
        self._name = name
        self._api_key = api_key
        if api_key_env is None:
            self._key_env = self.key_env
        else:
            self._key_env = (api_key_env,) if isinstance(api_key_env, str) else api_key_env
        self._base_url = base_url
        self.timeout = timeout
        self.streaming = streaming
        self._sdk: Any = None

    @property
    def name(self) -> str:
        """The model string this client was made from, e.g. ``"anthropic:claude-opus-4-8"``."""
        return self._name

    @property
    def profile(self) -> ModelProfile:
        """Capabilities that shape lowering and budgeting."""
        return self._profile

    @property
    def base_url(self) -> str | None:
        """The endpoint override (``None``: the SDK's default or its environment variable)."""
        return self._base_url

    @property
    def _source(self) -> str:
        """The name errors carry: the profile's provider (e.g. ``openai-compatible``) or vendor."""
        return self._profile.provider or self.vendor

    def lower(self, request: Request) -> dict[str, Any]:
        """The validated body this client would send for ``request``."""
        return lower(request, self.wire_format, profile=self._profile, model=self.model)

    def ensure_ready(self) -> None:
        """Check the SDK is installed and a key is at hand; no network call.

        Raises ``UsageError`` for a missing SDK and ``CredentialsError`` for a missing key.
        """
        require_sdk(self.sdk_module, self.sdk_extra)
        self._key()

    def _key(self) -> str:
        if self._api_key is not None:
            return self._api_key
        if not self._key_env:
            return NO_KEY
        return api_key_from_env(self._key_env, self._source)

    async def aclose(self) -> None:
        """Close the SDK client and its connections (a later call opens a new one)."""
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            await self._close_sdk(sdk)

    async def _close_sdk(self, sdk: Any) -> None:
        await sdk.close()

    @abstractmethod
    def _make_sdk(self, key: str) -> Any:
        """Create the vendor SDK client with ``key`` (the SDK is known to be installed)."""

    @abstractmethod
    def _map_error(self, exc: Exception) -> ProviderError | None:
        """The package error for one of the SDK's typed exceptions; ``None`` if not one."""

    @abstractmethod
    def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        """Send ``body`` and yield events, ending with one ``ModelDone``."""

    def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        """Lower, validate and send ``request``; yield text, tool calls, then ``ModelDone``."""
        return self._send(self.lower(request))  # lowering raises before anything is sent

    def stream_with(self, request: Request, controls: CacheControls) -> AsyncIterator[ModelEvent]:
        """``stream(request)`` with the cache controls this model's profile supports."""
        return self._send(self._controlled(request, controls))

    async def count_input_tokens(
        self, request: Request, controls: CacheControls | None = None
    ) -> int | None:
        """The provider's own count of the request's input tokens; ``None``: no endpoint.

        Nothing is generated or billed; a failure is a ``ProviderError`` like a call's.
        """
        body = self.lower(request) if controls is None else self._controlled(request, controls)
        try:
            return await self._count(self._client(), body)
        except Exception as exc:
            raise self._failure(exc) from exc

    async def _count(self, sdk: Any, body: dict[str, Any]) -> int | None:
        """The vendor's token-counting call for ``body``; ``None`` where there is none."""
        return None

    def _controlled(self, request: Request, controls: CacheControls) -> dict[str, Any]:
        # The one function the request display uses too (``wire.sent_body``).
        return controlled(request, self.wire_format, self._profile, self.model, controls)

    def _client(self) -> Any:
        if self._sdk is None:
            self.ensure_ready()
            self._sdk = self._make_sdk(self._key())
        return self._sdk

    def _failure(self, exc: Exception) -> Exception:
        mapped = None if isinstance(exc, AgentSessionError) else self._map_error(exc)
        return mapped or provider_failure(exc, self._source)

    async def _send(self, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        sdk = self._client()
        try:
            async for event in self._events(sdk, body):
                yield event
        except Exception as exc:
            failure = self._failure(exc)
            if failure is exc:
                raise
            raise failure from exc
