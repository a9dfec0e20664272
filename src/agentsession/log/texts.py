"""Baseline texts kept once per session: an epoch refers to a long section text by its hash.

A window advance starts a new epoch whose baseline is, most of the time, the one before it;
rewriting every section at every advance made epochs a large share of the log. From version 4
on, each ``[key, text]`` pair of an epoch's stored baseline holds either its text or ``[ref]``:
the reference of a text its store keeps once per session, ``text_ref(text)`` (the first 16
bytes of the text's SHA-256, base64url, 22 characters). A store writes an epoch with every text
of at least ``SHARED_TEXT`` characters by reference and keeps the texts beside the log (a text
already kept is not written again; one with a NUL or a lone surrogate, which not every store can
keep as a column, stays inline); reading resolves each reference from the texts the store
read with the row. ``log.dump_entry`` still writes every text inline, a form that needs nothing
beside it (session files, comparisons); both are version 4.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from ..hygiene import has_surrogates

__all__ = ["SHARED_TEXT", "refs_in", "resolved", "shared", "text_ref"]

#: Shorter texts stay inline: a reference costs about 26 bytes.
SHARED_TEXT = 32


def text_ref(text: str) -> str:
    """The reference of a kept text (lone surrogates hash as their code points)."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


def shared(payload: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """``payload`` (an epoch's, texts inline) with its long texts by reference, and the texts."""
    texts: dict[str, str] = {}
    baseline: list[Any] = []
    for key, text in payload.get("baseline", []):
        if len(text) >= SHARED_TEXT and _keepable(text):
            ref = text_ref(text)
            texts[ref] = text
            baseline.append([key, [ref]])
        else:
            baseline.append([key, text])
    if not texts:
        return payload, texts
    return {**payload, "baseline": baseline}, texts


def _keepable(text: str) -> bool:
    """Whether every store can keep ``text`` as a column value.

    A NUL (PostgreSQL refuses it) or a lone surrogate (no UTF-8 form) stays inline, where the
    entry's JSON escapes it.
    """
    return "\x00" not in text and not has_surrogates(text)


def refs_in(payload: Any) -> list[str]:
    """The references an epoch payload holds (none when it is not shaped like one)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("baseline"), list):
        return []
    return [item[1][0] for item in payload["baseline"] if _is_ref(item)]


def resolved(payload: dict[str, Any], texts: Mapping[str, str]) -> dict[str, Any]:
    """``payload`` with every reference replaced by its text; ``ValueError`` for a missing one."""
    refs = refs_in(payload)
    if not refs:
        return payload
    baseline: list[Any] = []
    for item in payload["baseline"]:
        if _is_ref(item):
            text = texts.get(item[1][0])
            if text is None:
                raise ValueError(
                    f"the text of baseline section {item[0]!r} ({item[1][0]}) is not stored"
                )
            item = [item[0], text]
        baseline.append(item)
    return {**payload, "baseline": baseline}


def _is_ref(item: Any) -> bool:
    return (
        isinstance(item, list)
        and len(item) == 2
        and isinstance(item[1], list)
        and len(item[1]) == 1
        and isinstance(item[1][0], str)
    )
