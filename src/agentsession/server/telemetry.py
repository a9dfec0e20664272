"""OpenTelemetry traces of turns, following the GenAI semantic conventions (the ``otel`` extra).

One span tree per turn: ``invoke_agent`` (the turn) over one ``chat`` span per provider call and
one ``execute_tool`` span per tool call. ``chat`` spans carry the model, the usage (input,
output and cache-read tokens, always integers: estimated with the runtime's token counter when
the provider reports none, and marked so), the finish reasons, the cache diagnosis and the
context epoch. The spans are made from the turn's events and the entries each step committed,
so the core knows nothing of tracing. Off unless an observer is given to ``create_app``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Span, Status, StatusCode

from .._frozen import frozen
from ..budget import TokenCounter
from ..events import (
    ApprovalNeeded,
    Event,
    StepCommitted,
    ToolCallStarted,
    ToolResultEvent,
    TurnFinished,
)
from ..log import AssistantEntry, ContextEpoch, Dispatch, Record
from ..log.stored import dump_entry
from ..session import Session
from .turns import TurnObserver

__all__ = ["OtlpTracing", "SpanObserver", "otel_observer", "otlp_tracing"]

_SYSTEM = "agentsession"


def _provider_name(model: str) -> str:
    return model.partition(":")[0] or "unknown"


class SpanObserver:
    """Spans of one turn, made as its events arrive."""

    def __init__(
        self, tracer: trace.Tracer, session: Session, epoch: int | None, counter: TokenCounter
    ) -> None:
        self._tracer = tracer
        self._counter = counter
        self._model = session.model.name
        self._estimated_context = 0
        self._epoch = epoch
        self._turn = tracer.start_span(
            "invoke_agent",
            kind=trace.SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": _SYSTEM,
                "gen_ai.conversation.id": session.id,
                "gen_ai.request.model": self._model,
                "gen_ai.provider.name": _provider_name(self._model),
            },
        )
        self._context = trace.set_span_in_context(self._turn)
        self._chat: Span | None = None
        self._tools: dict[str, Span] = {}

    def on_event(self, event: Event, records: list[Record]) -> None:
        """Open and close spans as the turn moves on."""
        match event:
            case StepCommitted(what="admission"):
                self._admitted(records)
            case StepCommitted(what="response"):
                self._responded(records)
            case ToolCallStarted(call=call):
                self._tools[call.id] = self._tracer.start_span(
                    "execute_tool",
                    context=self._context,
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": call.name,
                        "gen_ai.tool.call.id": call.id,
                    },
                )
            case ToolResultEvent(call_id=call_id, is_error=failed):
                span = self._tools.pop(call_id, None)
                if span is not None:
                    if failed:
                        span.set_status(Status(StatusCode.ERROR, "the tool reported an error"))
                    span.end()
            case ApprovalNeeded(request=request):
                self._turn.add_event("approval_needed", {"gen_ai.tool.name": request.name})
            case TurnFinished(result=result):
                self._turn.set_attribute("gen_ai.response.finish_reasons", [result.stop_reason])
                self._turn.set_attribute("agentsession.steps", result.steps)
            case _:
                pass

    def _admitted(self, records: list[Record]) -> None:
        self._end_chat(None)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": self._model,
            "gen_ai.provider.name": _provider_name(self._model),
        }
        for record in records:
            entry = record.entry
            if isinstance(entry, ContextEpoch):
                self._epoch = entry.epoch
            if isinstance(entry, Dispatch):
                attributes["gen_ai.request.model"] = entry.model
                attributes["agentsession.cache.diagnosis"] = entry.cache
                attributes["agentsession.step"] = entry.step
                attributes["agentsession.dispatch.seq"] = record.seq
            else:
                self._estimated_context += self._tokens(record)
        if self._epoch is not None:
            attributes["agentsession.epoch"] = self._epoch
        self._chat = self._tracer.start_span("chat", context=self._context, attributes=attributes)

    def _responded(self, records: list[Record]) -> None:
        span = self._chat
        if span is None:
            return
        for record in records:
            entry = record.entry
            if not isinstance(entry, AssistantEntry):
                continue
            usage = entry.usage
            output = self._tokens(record)
            # A provider that reports nothing (or a 0 it cannot mean): the counter's estimate.
            input_tokens = usage.input_tokens or self._estimated_context
            output_tokens = usage.output_tokens or output
            estimated = not (usage.input_tokens and usage.output_tokens)
            span.set_attribute("gen_ai.usage.input_tokens", int(input_tokens))
            span.set_attribute("gen_ai.usage.output_tokens", int(output_tokens))
            span.set_attribute(
                "gen_ai.usage.cache_read.input_tokens", int(usage.cached_input_tokens)
            )
            span.set_attribute(
                "gen_ai.usage.cache_creation.input_tokens", int(usage.cache_write_tokens)
            )
            span.set_attribute("agentsession.usage.estimated", estimated)
            if entry.model:
                span.set_attribute("gen_ai.response.model", entry.model)
            reason = "tool_calls" if entry.tool_calls else "stop"
            span.set_attribute("gen_ai.response.finish_reasons", [reason])
            self._estimated_context += output
        self._end_chat(None)

    def _tokens(self, record: Record) -> int:
        text = dump_entry(record.entry)[2]
        try:
            return self._counter.count(text)
        except Exception:
            return max(1, len(text) // 4)

    def _end_chat(self, error: BaseException | None) -> None:
        if self._chat is not None:
            if error is not None:
                self._chat.set_status(Status(StatusCode.ERROR, type(error).__name__))
            self._chat.end()
            self._chat = None

    def on_end(self, error: BaseException | None) -> None:
        """Close whatever is open; a failed or cancelled turn is marked as an error."""
        self._end_chat(error)
        for span in self._tools.values():
            span.set_status(Status(StatusCode.ERROR, "the tool call did not finish"))
            span.end()
        self._tools.clear()
        if error is not None:
            self._turn.set_status(Status(StatusCode.ERROR, type(error).__name__))
            self._turn.set_attribute("error.type", type(error).__name__)
        self._turn.end()


def otel_observer(
    provider: trace.TracerProvider, counter: TokenCounter
) -> Callable[[Session, int | None], TurnObserver]:
    """An observer factory for ``create_app(observer=...)`` making spans with ``provider``."""
    tracer = provider.get_tracer("agentsession.server")
    return lambda session, epoch: SpanObserver(tracer, session, epoch, counter)


@frozen
class OtlpTracing:
    """Traces sent over OTLP/HTTP; ``shutdown()`` flushes what is still batched."""

    provider: TracerProvider
    observer: Callable[[Session, int | None], TurnObserver]

    def shutdown(self) -> None:
        """Flush and stop the exporter."""
        self.provider.shutdown()


def otlp_tracing(endpoint: str, counter: TokenCounter) -> OtlpTracing:
    """Spans batched (the SDK's standard delay) and sent to ``endpoint`` over OTLP/HTTP."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": _SYSTEM}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return OtlpTracing(provider, otel_observer(provider, counter))
