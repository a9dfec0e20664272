"""Test helpers for applications and store authors: the store contract, scripted-model helpers.

``StoreContract`` is the suite every store passes (subclass it under a ``Test…`` name and
define ``open_store``); ``calls``, ``failure``, ``user_texts``, ``updates``, ``tool_results``
and ``assert_prefix_stable`` go with the package's scripted model. Importing this module
needs nothing beyond the package itself.
"""

from __future__ import annotations

from .scripted import (
    assert_prefix_stable,
    calls,
    failure,
    tool_results,
    updates,
    user_texts,
)
from .store_contract import StoreContract

__all__ = [
    "StoreContract",
    "assert_prefix_stable",
    "calls",
    "failure",
    "tool_results",
    "updates",
    "user_texts",
]
