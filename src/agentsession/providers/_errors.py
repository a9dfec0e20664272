"""The vendor-neutral half of error translation: an HTTP failure or a transport failure to a type.

Each vendor module maps its SDK's typed exceptions (status errors, timeouts, connection errors,
response validation) and hands the status, the parsed body and the headers to ``status_error``,
which picks the class once for all vendors: 401/403 are credentials, a "context too long" body
is a ``ContextOverflowError``, rate limits and 5xx are transient. Transport exceptions that an
SDK lets through (Gemini surfaces its HTTP library's own) are recognised by their type in the
HTTP libraries already loaded, never by their name.

The OpenAI and Anthropic SDKs are generated alike and share one exception shape: one table,
``SHARED_SHAPE``, translates both (``sdk_error``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

from ..errors import (
    ContextOverflowError,
    CredentialsError,
    ProviderError,
    TransientProviderError,
)

__all__ = [
    "SHARED_SHAPE",
    "body_message",
    "is_context_overflow",
    "sdk_error",
    "status_error",
    "transport_error",
]

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})

# Error codes/types that a provider sends inside an otherwise successful (200) stream, or in a
# failed Responses object, and that are worth the same request again.
_TRANSIENT_CODES = frozenset(
    {
        "server_error",
        "rate_limit_exceeded",
        "rate_limit_error",
        "overloaded_error",
        "api_error",
        "internal",
        "unavailable",
        "resource_exhausted",
    }
)

# How providers and OpenAI-compatible servers say "the prompt does not fit the context": OpenAI
# (code context_length_exceeded; "exceeds the context window"), Anthropic ("prompt is too long",
# "input length and `max_tokens` exceed context limit"), Gemini ("The input token count (…)
# exceeds the maximum number of tokens allowed"), llama.cpp (type exceed_context_size_error,
# "exceeds the available context size"), vLLM ("maximum context length", "maximum model length").
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_PHRASES = (
    "context_length_exceeded",
    "exceed_context_size_error",
    "maximum context length",
    "maximum model length",
    "exceeds the context window",
    "exceeds the available context size",
    "exceed context limit",
    "prompt is too long",
    "input token count",
)
_FIELDS = ("code", "type", "status", "message")


def _fields(body: object, depth: int = 0) -> Iterator[tuple[str, str]]:
    """The ``(key, text)`` pairs of the error fields of a parsed body, nested ``error`` included."""
    if depth > 3:
        return
    if isinstance(body, str):
        yield "message", body
    elif isinstance(body, Mapping):
        for key in _FIELDS:
            value = body.get(key)
            if isinstance(value, str | int) and not isinstance(value, bool):
                yield key, str(value)
        inner = body.get("error")
        if inner is not None:
            yield from _fields(inner, depth + 1)
    elif isinstance(body, list) and len(body) == 1:
        yield from _fields(body[0], depth + 1)


def body_message(body: object) -> str | None:
    """The human message a provider put in its error body, if any."""
    messages = [text for key, text in _fields(body) if key == "message"]
    return messages[-1] if messages else None


def is_context_overflow(status: int | None, body: object) -> bool:
    """Whether a failure says the request is longer than the model's context window."""
    if status is not None and not (400 <= status < 500 or status == 500):
        return False
    for key, text in _fields(body):
        lowered = text.lower()
        if key in ("code", "type") and lowered in _OVERFLOW_CODES:
            return True
        if key == "message" and any(phrase in lowered for phrase in _OVERFLOW_PHRASES):
            return True
    return False


def _transient_code(body: object) -> bool:
    return any(
        key in ("code", "type", "status") and text.lower() in _TRANSIENT_CODES
        for key, text in _fields(body)
    )


def status_error(
    vendor: str,
    status: int | None,
    body: object,
    *,
    headers: Mapping[str, str] | None = None,
    fallback: str = "",
) -> ProviderError:
    """The error for a failed call with HTTP ``status`` (``None`` or 2xx: an error event).

    An error that arrives inside a successful stream, or in a failed response object, has no
    failure status of its own; its body's code decides whether it is transient.
    """
    detail = body_message(body) or fallback or "the provider reported an error"
    where = f"HTTP {status}: " if status is not None and status >= 400 else ""
    text = f"{vendor}: {where}{detail}"
    kwargs: dict[str, Any] = {"status": status, "body": body, "headers": headers}
    if status in (401, 403):
        return CredentialsError(text, **kwargs)
    if is_context_overflow(status, body):
        return ContextOverflowError(text, **kwargs)
    if status is None or status < 400:
        if _transient_code(body):
            return TransientProviderError(text, **kwargs)
        return ProviderError(text, **kwargs)
    if status in _TRANSIENT_STATUS or status >= 500:
        return TransientProviderError(text, **kwargs)
    return ProviderError(text, **kwargs)


def _transport_types() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, connection failures) of the HTTP libraries this process has loaded.

    An exception of a library's type implies the library is imported, so looking only in
    ``sys.modules`` finds every type that can occur without importing anything.
    """
    timeouts: list[type[BaseException]] = [TimeoutError]
    failures: list[type[BaseException]] = [ConnectionError]
    for name in ("httpx", "httpx2"):
        module: Any = sys.modules.get(name)
        if module is not None:
            timeouts.append(module.TimeoutException)
            # NetworkError: connect/read/write failures; RemoteProtocolError: the peer closed
            # the connection mid-response, e.g. a stream cut before its end.
            failures += [module.NetworkError, module.RemoteProtocolError]
    aiohttp: Any = sys.modules.get("aiohttp")
    if aiohttp is not None:
        timeouts.append(aiohttp.ServerTimeoutError)
        failures += [aiohttp.ClientConnectionError, aiohttp.ClientPayloadError]
    return tuple(timeouts), tuple(failures)


def transport_error(exc: BaseException, vendor: str) -> TransientProviderError | None:
    """A timeout or a dropped connection as a transient error; ``None`` for anything else."""
    timeouts, failures = _transport_types()
    if isinstance(exc, timeouts):
        return TransientProviderError(f"{vendor}: the request timed out ({type(exc).__name__})")
    if isinstance(exc, failures):
        detail = str(exc) or type(exc).__name__
        return TransientProviderError(f"{vendor}: the connection failed: {detail}")
    return None


def _timed_out(exc: Any, source: str) -> ProviderError:
    return TransientProviderError(f"{source}: the request timed out")


def _connection_failed(exc: Any, source: str) -> ProviderError:
    cause = exc.__cause__
    detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
    return TransientProviderError(f"{source}: the connection failed: {detail}")


def _malformed(exc: Any, source: str) -> ProviderError:
    return ProviderError(
        f"{source}: malformed response: {exc.message}",
        status=exc.status_code,
        body=exc.body,
        headers=exc.response.headers,
    )


def _failed_status(exc: Any, source: str) -> ProviderError:
    # An ``error`` event inside a stream can arrive here too, with the stream's status 200.
    headers = exc.response.headers
    return status_error(source, exc.status_code, exc.body, headers=headers, fallback=exc.message)


def _error_event(exc: Any, source: str) -> ProviderError:
    return status_error(source, None, exc.body, fallback=exc.message)


#: The exceptions of the SDKs that share one shape (``openai``, ``anthropic``), by their class
#: name in the SDK module, subclasses before their bases, and what each becomes.
SHARED_SHAPE: tuple[tuple[str, Callable[[Any, str], ProviderError]], ...] = (
    ("APITimeoutError", _timed_out),
    ("APIConnectionError", _connection_failed),
    ("APIResponseValidationError", _malformed),
    ("APIStatusError", _failed_status),
    ("APIError", _error_event),
)


def sdk_error(sdk: ModuleType, exc: Exception, source: str) -> ProviderError | None:
    """The package error for an exception of an SDK of the shared shape; ``None`` if none fits."""
    for name, translate in SHARED_SHAPE:
        if isinstance(exc, getattr(sdk, name)):
            return translate(exc, source)
    return transport_error(exc, source)
