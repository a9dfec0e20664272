"""What the real SDK clients share: credentials, error translation, the streaming skeleton.

Each vendor client lowers the request (running its validator) before it touches the network,
creates its official SDK client lazily (the package imports without any SDK installed), and
translates vendor exceptions into the package's error tree with ``raise ... from``. A client
streams by default; ``streaming=False`` asks for one complete response, and both paths build the
assistant message with the same function, so the result is identical either way.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Any

from ..errors import CredentialsError, ProviderError, TransientProviderError, UsageError
from ..request import Request
from .base import ModelEvent, ModelProfile
from .lower import lower

__all__ = ["SDKModel", "parse_arguments", "translate_error"]

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})


def translate_error(exc: BaseException, vendor: str) -> ProviderError:
    """Map a vendor SDK exception to the package's error tree."""
    if isinstance(exc, ProviderError):
        return exc
    name = type(exc).__name__
    text = f"{vendor}: {str(exc) or name}"
    if "ResponseValidation" in name:
        return ProviderError(f"{vendor}: malformed response: {exc}")
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int):
        status = getattr(exc, "code", None)
    if isinstance(status, int) and 100 <= status < 600:
        if status in _TRANSIENT_STATUS or status >= 500:
            return TransientProviderError(text, status=status)
        if status in (401, 403):
            return CredentialsError(text, status=status)
        return ProviderError(text, status=status)
    if "Timeout" in name or "Connect" in name or "Connection" in name:
        return TransientProviderError(text)
    if isinstance(exc, ValueError | KeyError | TypeError | AttributeError | IndexError):
        return ProviderError(f"{vendor}: malformed response: {exc}")
    return ProviderError(text)


def parse_arguments(raw: str | None, vendor: str) -> dict[str, Any]:
    """Tool-call arguments from the JSON string a provider sent."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ProviderError(f"{vendor}: malformed tool-call arguments: {raw[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ProviderError(f"{vendor}: tool-call arguments are not an object: {raw[:200]!r}")
    return value


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

    if importlib.util.find_spec(module) is None:
        raise UsageError(f"the {module} SDK is not installed; pip install 'agentsession[{extra}]'")


class SDKModel(ABC):
    """A model served through an official SDK: lowering, lazy client, error translation."""

    vendor: str = ""
    wire_format: str = ""

    def __init__(
        self,
        model: str,
        *,
        profile: ModelProfile,
        name: str,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 120.0,
        streaming: bool = True,
    ) -> None:
        self.model = model
        self._profile = profile
        self._name = name
        self._api_key = api_key
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

    def lower(self, request: Request) -> dict[str, Any]:
        """The validated body this client would send for ``request``."""
        return lower(request, self.wire_format, profile=self._profile, model=self.model)

    async def aclose(self) -> None:
        """Close the SDK client and its connections (a later call opens a new one)."""
        sdk, self._sdk = self._sdk, None
        if sdk is not None:
            await self._close_sdk(sdk)

    async def _close_sdk(self, sdk: Any) -> None:
        await sdk.close()

    @abstractmethod
    def _make_sdk(self) -> Any:
        """Create the vendor SDK client (raises ``CredentialsError`` without a key)."""

    @abstractmethod
    def _events(self, sdk: Any, body: dict[str, Any]) -> AsyncIterator[ModelEvent]:
        """Send ``body`` and yield events, ending with one ``ModelDone``."""

    async def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        """Lower, validate and send ``request``; yield text, tool calls, then ``ModelDone``."""
        body = self.lower(request)  # raises before anything is sent
        if self._sdk is None:
            self._sdk = self._make_sdk()
        try:
            async for event in self._events(self._sdk, body):
                yield event
        except ProviderError:
            raise
        except Exception as exc:
            raise translate_error(exc, self.vendor) from exc
