"""The server's tests need the ``server`` extra (``make test`` installs it)."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("starlette", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")


@pytest.fixture(autouse=True)
def _validated_responses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every response a test in tests/server gets is checked against the OpenAPI document.

    Whole bodies are validated here; a streamed body (read later, perhaps never to its end)
    has its status checked here and its events where ``harness.frames`` parses them.
    """
    import httpx

    from .openapi_check import check_response

    sync_send = httpx.Client.send
    async_send = httpx.AsyncClient.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> httpx.Response:
        response = sync_send(self, request, **kwargs)
        check_response(response, read=not kwargs.get("stream", False))
        return response

    async def asend(
        self: httpx.AsyncClient, request: httpx.Request, **kwargs: Any
    ) -> httpx.Response:
        response = await async_send(self, request, **kwargs)
        check_response(response, read=not kwargs.get("stream", False))
        return response

    monkeypatch.setattr(httpx.Client, "send", send)
    monkeypatch.setattr(httpx.AsyncClient, "send", asend)
