"""The server's tests need the ``server`` extra (``make test`` installs it)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")
