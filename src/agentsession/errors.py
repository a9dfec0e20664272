"""The error tree: one root, developer misuse apart from provider and storage failures.

```
AgentSessionError
├── UsageError                 the caller used the API wrongly (bad argument, bad config)
│   ├── SessionBusyError       an operation that needs an idle session ran during a turn
│   ├── UnknownFormatError     ags.lower() got a wire format it does not know
│   └── UnknownModelError      ags.get_model() got a model string it cannot resolve
├── SessionNotFoundError       no session with that id in the store
├── ConflictError              another writer appended to the same session first
├── BudgetExceededError        the request does not fit the context window (nothing admitted)
├── MaxStepsExceededError      one prompt made more model calls than Config.max_steps
├── RequestValidationError     a lowered request breaks its wire format's rules (a bug report)
├── ContextLoadError           a context component's loader raised (nothing admitted)
├── ProviderError              the model provider failed; admitted context stays stored
│   ├── TransientProviderError rate limit, 5xx, timeout, a cut stream: retried inside the step
│   ├── ContextOverflowError   the provider says the request is longer than its context
│   └── CredentialsError       no credentials for the provider
└── StoreError                 the store failed or holds something unreadable
    ├── CorruptEntryError      a stored row cannot be decoded
    └── SessionFileError       a session file cannot be imported (names the line)
```

Vendor exceptions are translated once per vendor, from the SDK's typed exceptions, with
``raise … from`` so the original stays available as ``__cause__``; a ``ProviderError`` keeps the
HTTP status, the error body and the response headers the provider sent.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

__all__ = [
    "AgentSessionError",
    "BudgetExceededError",
    "ConflictError",
    "ContextLoadError",
    "ContextOverflowError",
    "CorruptEntryError",
    "CredentialsError",
    "MaxStepsExceededError",
    "ProviderError",
    "RequestValidationError",
    "SessionBusyError",
    "SessionFileError",
    "SessionNotFoundError",
    "StoreError",
    "TransientProviderError",
    "UnknownFormatError",
    "UnknownModelError",
    "UsageError",
]


class AgentSessionError(Exception):
    """Root of every error this package raises on purpose."""


class UsageError(AgentSessionError, ValueError):
    """The caller used the API wrongly: a bad argument, a bad configuration, a wrong state."""


class SessionBusyError(UsageError):
    """An idle-only operation was called while a turn runs or a write is pending."""


class UnknownFormatError(UsageError):
    """``lower()`` was asked for a wire format it does not know."""


class UnknownModelError(UsageError):
    """``get_model()`` was given a model string it cannot resolve.

    ``suggestion`` is a close name the caller may have meant (``None``: none known), so that a
    message for another audience (the server's) can offer it in its own words.
    """

    suggestion: str | None = None


class SessionNotFoundError(AgentSessionError, LookupError):
    """The store has no session with the given id.

    Args:
        session_id: The id asked for.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(f"no session with id {session_id!r}")
        self.session_id = session_id


class ConflictError(AgentSessionError):
    """Another writer appended to the session first; nothing of this write was stored.

    Args:
        message: What conflicted.
        session_id: The session written to.
        expected_seq: For an append, the seq this write expected to be the log's next.
        found_seq: For an append, the log's actual next seq.
        holder: For a session another process drives, the lease's owner.
    """

    def __init__(
        self,
        message: str,
        *,
        session_id: str = "",
        expected_seq: int | None = None,
        found_seq: int | None = None,
        holder: str | None = None,
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.expected_seq = expected_seq
        self.found_seq = found_seq
        self.holder = holder


class BudgetExceededError(AgentSessionError):
    """The request does not fit the model's context budget; nothing was admitted.

    Args:
        message: What did not fit.
        text: The user input, carried back so the caller can keep it.
        tokens: The request's size in tokens.
        budget: The budget it exceeded.
        contributors: The biggest parts of the request with their token counts, largest first.
    """

    def __init__(
        self,
        message: str,
        *,
        text: str | None = None,
        tokens: int = 0,
        budget: int = 0,
        contributors: tuple[tuple[str, int], ...] = (),
    ) -> None:
        super().__init__(message)
        self.text = text
        self.tokens = tokens
        self.budget = budget
        self.contributors = contributors


class MaxStepsExceededError(AgentSessionError):
    """One prompt made more model calls than ``Config.max_steps`` allows."""


class RequestValidationError(AgentSessionError):
    """A lowered request breaks its wire format's rules; raised before anything is sent.

    This is a bug report.

    Args:
        message: The rule broken.
        fmt: The wire format.
        position: The index of the offending message, when one is.
    """

    def __init__(self, message: str, *, fmt: str = "", position: int | None = None) -> None:
        where = f" at message {position}" if position is not None else ""
        super().__init__(f"{fmt}: {message}{where}" if fmt else f"{message}{where}")
        self.fmt = fmt
        self.position = position


class ProviderError(AgentSessionError):
    """The model provider failed. Admitted context stays stored; ``session.retry()`` resumes.

    Args:
        message: What failed.
        status: The HTTP status (``None`` when no response arrived).
        body: The error body as the SDK parsed it (a dict for JSON, else text).
        headers: The response headers with lower-case names (empty when there were none).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: object = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers: Mapping[str, str] = {k.lower(): v for k, v in (headers or {}).items()}

    @property
    def retry_after(self) -> float | None:
        """Seconds the provider asked to wait before retrying, or ``None`` when it did not say.

        Read from ``Retry-After`` (delta-seconds or an HTTP date, counted from now) or the
        millisecond variant ``retry-after-ms`` some providers send; never negative.
        """
        millis = _seconds(self.headers.get("retry-after-ms"))
        if millis is not None:
            return millis / 1000
        value = self.headers.get("retry-after")
        if value is None:
            return None
        seconds = _seconds(value)
        if seconds is not None:
            return seconds
        from email.utils import parsedate_to_datetime  # rarely needed: not at import time

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:  # an HTTP date is always GMT
            return None
        return max(0.0, when.timestamp() - time.time())


def _seconds(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 and seconds != float("inf") else None


class TransientProviderError(ProviderError):
    """A failure worth retrying with the same request: rate limit, 5xx, timeout, a cut stream."""


class ContextOverflowError(ProviderError):
    """The provider refused the request as longer than the model's context window.

    Retrying the same request cannot succeed; compacting the history (or a model with a larger
    window) can.
    """


class CredentialsError(ProviderError):
    """No usable credentials for the provider (e.g. the API key variable is unset)."""


class StoreError(AgentSessionError):
    """The store failed (refused a write, is not a database) or holds unreadable data."""


class CorruptEntryError(StoreError):
    """A stored log row cannot be decoded: unknown kind, newer version, or malformed JSON.

    Args:
        message: What is wrong with the row.
        session_id: The session it belongs to.
        seq: Its seq in the log, when known.
    """

    def __init__(self, message: str, *, session_id: str = "", seq: int | None = None) -> None:
        where = f" (session {session_id}, seq {seq})" if seq is not None else ""
        super().__init__(f"{message}{where}")
        self.session_id = session_id
        self.seq = seq


class SessionFileError(StoreError):
    """A session file cannot be imported: a corrupt line, an unknown or newer version.

    Nothing of the file was imported.

    Args:
        message: The problem.
        path: The file.
        line: The 1-based line number of the first problem (``None`` when the file as a whole
            is unreadable).
    """

    def __init__(self, message: str, *, path: str = "", line: int | None = None) -> None:
        where = f"{path}:{line}: " if path and line else f"line {line}: " if line else ""
        super().__init__(f"{where}{message}")
        self.path = path
        self.line = line


class ContextLoadError(AgentSessionError):
    """A context component's loader raised (or returned something it may not): the prompt fails.

    Nothing was admitted; the session takes the next prompt once the loader works again. A
    loader that means "temporarily unavailable" returns ``ags.UNAVAILABLE`` instead. The
    loader's exception is ``__cause__``.

    Args:
        key: The component's key.
        detail: What went wrong.
    """

    def __init__(self, key: str, detail: str) -> None:
        super().__init__(f"context component {key} failed to load: {detail}")
        self.key = key
