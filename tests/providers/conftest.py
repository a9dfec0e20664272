"""Fixtures for the provider tests: the loopback server and the SDK type check."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from provider_fakes import LocalServer, check_sdk_types, serve


@pytest.fixture
def server() -> Iterator[LocalServer]:
    yield from serve()


@pytest.fixture
def sdk_types() -> Callable[[str, dict[str, Any]], None]:
    return check_sdk_types
