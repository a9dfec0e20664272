"""``ScriptedModel``: the offline model for demos and tests.

Replies are consumed in order: a ``str`` is assistant text, a list of ``ToolCall`` is a tool-call
turn, an ``AssistantMessage`` is both at once (its text streams first, then its calls), an
``Exception`` instance is raised as a provider failure: a ``ProviderError`` (transient, context
overflow, …) keeps its type, any other ends the prompt as a ``ProviderError`` caused by it
(DESIGN §4), the package's own errors included. Alternatively one callable gets
each request and returns such a reply. Every neutral request is recorded in ``.requests``.

Its usage figures are guesses (a quarter of the characters), so its default profile says it
reports no usage and writes no titles; a caller that passes ``profile=`` gets that profile as
given, capabilities included (e.g. to stand in for a real provider in a test).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import replace
from typing import TypeAlias

from .._memo import IdentityMemo, PrefixMemo
from ..errors import AgentSessionError, ProviderError, UsageError
from ..request import (
    AssistantMessage,
    Request,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    new_call_id,
    text_of,
)
from .base import (
    ModelDone,
    ModelEvent,
    ModelProfile,
    ModelTextDelta,
    ModelToolCall,
    ReplyStopReason,
)

__all__ = ["Reply", "ScriptedModel", "demo_script"]

Reply: TypeAlias = str | Sequence[ToolCall] | AssistantMessage | BaseException

_STREAM_CHUNK = 16
_PROFILE = ModelProfile(provider="scripted", reports_usage=False, writes_titles=False)


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


_GUESSED: PrefixMemo[int] = PrefixMemo()
"""Per message tuple: the guessed tokens of its messages (the next request adds its new ones)."""

_SYSTEM_GUESSED: IdentityMemo[int] = IdentityMemo(64)
"""Per system part (the same tuple step after step): the guessed tokens of its sections."""


def _input_tokens(request: Request) -> int:
    """The guessed input tokens of ``request``: a quarter of each text's characters."""
    messages = request.messages
    found = _GUESSED.resume(messages)
    done, guessed = found if found is not None else (0, 0)
    guessed += sum(_estimate_tokens(text_of(m.content)) for m in messages[done:])
    if len(messages) > done:
        _GUESSED.keep(messages, guessed)
    system = request.system
    found_system = _SYSTEM_GUESSED.get(system)
    if found_system is None:
        found_system = _SYSTEM_GUESSED.put(system, sum(_estimate_tokens(t) for _, t in system))
    return found_system + guessed


class ScriptedModel:
    """A model that plays back scripted replies and records every request it got.

    Args:
        replies: One reply per provider call, in order: a string (a text reply), a list of
            ``ToolCall`` (a tool-calling reply), an ``AssistantMessage``, or an exception to
            raise; or a function from the request to such a reply.
        name: The model's name (in the log and in price lookups).
        profile: Its capabilities (default: native system messages anywhere, no usage figures,
            no titles).
    """

    def __init__(
        self,
        replies: Iterable[Reply] | Callable[[Request], Reply] = (),
        *,
        name: str = "scripted",
        profile: ModelProfile | None = None,
    ) -> None:
        self._name = name
        self._profile = profile if profile is not None else _PROFILE
        self._script: list[Reply] | None
        self._fn: Callable[[Request], Reply] | None
        if callable(replies):
            self._script, self._fn = None, replies
        else:
            self._script, self._fn = list(replies), None
        self.requests: list[Request] = []

    @property
    def name(self) -> str:
        """The model name recorded in the log."""
        return self._name

    @property
    def profile(self) -> ModelProfile:
        """The capabilities given, else: native system messages anywhere, no usage, no titles."""
        return self._profile

    @property
    def remaining(self) -> int:
        """How many scripted replies are left (0 for a callable script)."""
        return len(self._script) if self._script is not None else 0

    def _next_reply(self, request: Request) -> Reply:
        if self._fn is not None:
            return self._fn(request)
        assert self._script is not None
        if not self._script:
            raise ProviderError("ScriptedModel has no scripted reply left for this request")
        return self._script.pop(0)

    async def stream(self, request: Request) -> AsyncIterator[ModelEvent]:
        """Record ``request`` and yield the next scripted reply as events.

        Args:
            request: The neutral request (recorded in ``requests``).

        Raises:
            ProviderError: The script has no reply left, or the reply is an exception of this
                package (any other exception is raised as it is).
            UsageError: A scripted reply holds a tool call that is not a ``ToolCall``.
        """
        self.requests.append(request)
        reply = self._next_reply(request)
        if isinstance(reply, AgentSessionError) and not isinstance(reply, ProviderError):
            # DESIGN §4: an exception a scripted reply raises is a provider failure, also one
            # of the package's own (a scripted StoreError is not the session's store failing).
            detail = str(reply) or type(reply).__name__
            raise ProviderError(f"{self._name}: {type(reply).__name__}: {detail}") from reply
        if isinstance(reply, BaseException):
            raise reply  # the turn translates it, recording what was raised first
        input_tokens = _input_tokens(request)
        if isinstance(reply, str):
            reply = AssistantMessage(content=reply)
        elif not isinstance(reply, AssistantMessage):
            reply = AssistantMessage(tool_calls=tuple(reply))
        for i in range(0, len(reply.content), _STREAM_CHUNK):
            yield ModelTextDelta(reply.content[i : i + _STREAM_CHUNK])
        calls: list[ToolCall] = []
        for call in reply.tool_calls:
            if not isinstance(call, ToolCall):
                raise UsageError(
                    "ScriptedModel replies must be str, a list of ToolCall, an AssistantMessage"
                    f" or an exception; got {type(call).__name__}"
                )
            if not call.id:
                call = _with_id(call)
            calls.append(call)
            yield ModelToolCall(call)
        message = _played(reply, tuple(calls))
        usage = Usage(input_tokens=input_tokens, output_tokens=_estimate_tokens(message.content))
        stop: ReplyStopReason = "tool_calls" if message.tool_calls else "end_turn"
        yield ModelDone(message=message, usage=usage, model=self._name, stop_reason=stop)


def _with_id(call: ToolCall) -> ToolCall:
    """``call`` with a fresh id (built directly: ``dataclasses.replace`` costs several µs)."""
    if type(call) is ToolCall:
        return ToolCall(call.name, call.arguments, new_call_id())
    return replace(call, id=new_call_id())


def _played(reply: AssistantMessage, calls: tuple[ToolCall, ...]) -> AssistantMessage:
    """``reply`` as this model sends it: ``calls`` (ids given) and the provider's name."""
    if type(reply) is AssistantMessage:
        return AssistantMessage(reply.content, calls, "scripted", reply.provider_data)
    return replace(reply, tool_calls=calls, provider="scripted")


def _demo_reply(request: Request) -> Reply:
    """Call ``count_words`` on the newest user text; after its result, answer with it."""
    last = request.messages[-1] if request.messages else None
    for message in reversed(request.messages):
        if isinstance(message, ToolResultMessage):
            last = message
            break
        if isinstance(message, UserMessage):
            break
    if isinstance(last, ToolResultMessage):
        return f"(scripted demo model) `{last.name}` returned **{text_of(last.content)}**."
    users = [m for m in request.messages if isinstance(m, UserMessage)]
    text = text_of(users[-1].content) if users else ""
    if not any(tool.name == "count_words" for tool in request.tools):
        # Switched to mid-session (``/model scripted:demo``): the session's tools are not the
        # demo's, and a call of a tool the request does not offer is only ever refused.
        return f"(scripted demo model) {len(text.split())} words, counted without a tool."
    return [ToolCall("count_words", {"text": text})]


def demo_script() -> ScriptedModel:
    """The offline demo's model (``scripted:demo``): a real multi-step turn for every message.

    It asks for the demo's ``count_words`` tool on the user's text, then answers with its result;
    the command line's demo and its fallback without a provider play it (``cli/demo``).
    """
    return ScriptedModel(_demo_reply, name="scripted:demo")
