"""Routes that show what the model saw and was sent: ``context``, ``request``, ``report``, ``cost``.

They read the log only; nothing is admitted. ``request`` answers in the neutral form or in a
wire format (``?format=openai-chat`` …); ``?step=N`` rebuilds the N-th dispatched request.
``cost`` is ``session.cost()`` as JSON: USD from the provider-reported usage, ``null`` figures
and the model in ``no_price`` where no price is known (never a guess).

Nothing here holds the event loop for long. ``context`` and ``report`` of a long session on a
store another process can open are rebuilt and rendered in a child process (``inspect_pool``),
so they take nothing from the process's interpreter; the rest, and every inspection on other
stores, rebuild on a worker thread (``session.inspect``), where the view is encoded, the report
rendered and the cost summed too.
"""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..codec import encode
from ..errors import UsageError
from ..inspection.report import render_report
from ..inspection.views import Inspection
from ..ledger import cost_fields
from ..providers import lower
from ..providers.cache_controls import CacheControls
from ..providers.wire import sent_body
from ..request import Request as RequestValue
from .inspect_pool import Kind, context_json, report_headers
from .spooled_body import SpooledBody, body_response
from .state import ServerState

__all__ = ["inspect_routes"]


def _state(request: Request) -> ServerState:
    state: ServerState = request.app.state.server
    return state


async def _inspection(request: Request) -> Inspection:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    session = await state.workspaces.open(session_id)
    try:
        return await session.inspect()
    finally:
        await session.close()


async def _inspected_or_sent(
    request: Request, kind: Kind, *, generated: str = "", version: str = ""
) -> Inspection | tuple[int, bytes | SpooledBody]:
    """The inspection rebuilt here, or the status and body a child process answered.

    The caller is checked and the session opened here, before anything goes to a child.
    """
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    session = await state.workspaces.open(session_id)
    try:
        inputs = await session._inspection_inputs()
        if state.inspections.takes(inputs.info):
            sent = await state.inspections.answer(
                kind, inputs.info, inputs=inputs, generated=generated, version=version
            )
            if sent is not None:
                return sent
        return await session._inspected(inputs)
    finally:
        await session.close()


def _step(request: Request) -> int | None:
    raw = request.query_params.get("step")
    if raw is None:
        return None
    if not raw.isdecimal() or int(raw) < 1:
        raise UsageError(f"'step' must be a positive whole number, got {raw!r}")
    return int(raw)


async def context(request: Request) -> Response:
    found = await _inspected_or_sent(request, "context")
    if isinstance(found, tuple):
        return body_response(*found, media_type="application/json")
    return JSONResponse(await asyncio.to_thread(context_json, found))


async def request_body(request: Request) -> Response:
    inspection = await _inspection(request)
    step = _step(request)
    if step is not None:
        if not 1 <= step <= len(inspection.requests):
            raise UsageError(
                f"there is no dispatched request {step}: the session has {len(inspection.requests)}"
            )
        found = inspection.requests[step - 1]
        neutral, model_name = found.request, found.model
        controls = inspection.controls.get(found.seq)
    elif inspection.next_request is None:
        raise UsageError(f"cannot preview the next request: {inspection.next_error}")
    else:
        neutral, model_name, controls = (
            inspection.next_request.request,
            inspection.model,
            inspection.next_controls,
        )
    fmt = request.query_params.get("format", "neutral")
    if fmt == "neutral":
        encoded = await asyncio.to_thread(encode, neutral)
        body: Any = {k: v for k, v in encoded.items() if k != "sources"}
    else:
        state = _state(request)
        body = await asyncio.to_thread(_sent, state, neutral, fmt, model_name, controls)
    return JSONResponse({"session_id": inspection.session_id, "format": fmt, "request": body})


def _sent(
    state: ServerState,
    neutral: RequestValue,
    fmt: str,
    model_name: str,
    controls: CacheControls | None,
) -> dict[str, Any]:
    """``neutral`` in ``fmt`` as the runtime's model sent it, or the format's plain lowering.

    As sent (cache controls, streaming flags) when the request was that model's and ``fmt`` is
    its format.
    """
    model = state.workspaces.models.named(model_name)
    if model is None or model.profile.wire_format != fmt:
        return lower(neutral, fmt)
    profile = model.profile
    return sent_body(
        neutral,
        fmt,
        profile=profile,
        model=getattr(model, "model", None),
        controls=controls,
        streaming=bool(getattr(model, "streaming", True)),
    )


@functools.cache  # read once: it scans the installed packages (about 1 ms, on the loop)
def _version() -> str:
    try:
        return installed("agentsession")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


async def report(request: Request) -> Response:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    found = await _inspected_or_sent(request, "report", generated=stamp, version=_version())
    if isinstance(found, tuple):
        status, body = found
        if status != 200:
            return body_response(status, body, media_type="application/json")
        return body_response(status, body, media_type="text/html", headers=report_headers())
    page = await asyncio.to_thread(render_report, found, generated=stamp, version=_version())
    return HTMLResponse(page, headers=report_headers())


async def cost(request: Request) -> Response:
    state = _state(request)
    session_id = request.path_params["id"]
    await state.allowed(request, session_id)
    info = await state.runtime.store.get_session(session_id)
    if state.inspections.takes(info):
        prices = state.runtime.config.prices
        sent = await state.inspections.answer("cost", info, prices=prices)
        if sent is not None:
            return body_response(*sent, media_type="application/json")
    session = await state.workspaces.open(session_id)
    try:
        summary = await asyncio.to_thread(session.cost)
    finally:
        await session.close()
    return JSONResponse({"session_id": session_id, **cost_fields(summary)})


def inspect_routes() -> list[Route]:
    """The inspection routes."""
    return [
        Route("/sessions/{id}/context", context, methods=["GET"]),
        Route("/sessions/{id}/request", request_body, methods=["GET"]),
        Route("/sessions/{id}/report", report, methods=["GET"]),
        Route("/sessions/{id}/cost", cost, methods=["GET"]),
    ]
