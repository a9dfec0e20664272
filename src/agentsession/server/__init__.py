"""``agentsession serve``: sessions over HTTP (the ``server`` extra: Starlette and uvicorn).

``create_app(runtime)`` is the ASGI app; embed it in any ASGI server, or run
``agentsession --db URL --model MODEL serve --host H --port P``.
"""

from __future__ import annotations

from .app import create_app

__all__ = ["create_app"]
