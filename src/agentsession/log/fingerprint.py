"""The fingerprint of a dispatched request: the digests its ``Dispatch`` record carries.

A provider caches a request's prefix: tools, then system, then messages. Each dispatch record
holds one digest for the tools, one for the system part and a chain over the messages (each
link hashes the previous link and one message), so "the old messages are a prefix of the new
ones" is one chain value compared at the old length. ``fingerprinted`` stamps a record with them
and with the cache outcome to expect against the record before it (``diagnose``: ``hit``, or the
first thing that breaks the prefix, with Anthropic's reasons ``model_changed``,
``tools_changed``, ``system_changed``, ``messages_changed``). It lives beside the records
because the write path stamps every dispatch; the inspection reads the same digests back to
prove a rebuilt request (``mismatch`` says which part differs).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from .._memo import IdentityMemo, PrefixMemo
from ..codec import canonical_json
from ..request import Request, standing_tools
from .entries import CacheDiagnosis, Dispatch

__all__ = ["chain_link", "diagnose", "fingerprinted", "mismatch", "part_digest"]


def part_digest(value: object) -> str:
    """The digest of one part of a request (its tools, its system part), as stored."""
    text = canonical_json(value)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def chain_link(previous: str, message: object) -> str:
    """The link of a request's message chain after ``message``; ``previous``: the one before.

    A dispatch record's ``messages_digest`` is the last link of its request's messages ("" for
    none), so it proves them without the rest of the request.
    """
    return hashlib.sha256((previous + part_digest(message)).encode()).hexdigest()[:32]


_LINKS: IdentityMemo[tuple[str, str, str]] = IdentityMemo()
"""Per message object: (the link before it, its link, its part digest). Consecutive requests of
an epoch share their prefix, so each message's link is hashed once while the window does not
move; when it moves, every link changes, but each message's part digest is kept."""


_CHAINS: PrefixMemo[tuple[str, ...]] = PrefixMemo()
"""Per message tuple: its links. The next request of the epoch resumes from the one before."""


def _chain(request: Request) -> list[str]:
    """``links[i]`` identifies the first ``i`` messages of ``request``."""
    messages = request.messages
    found = _CHAINS.resume(messages)
    done, links = (0, [""]) if found is None else (found[0], list(found[1]))
    for message in messages[done:]:
        previous = links[-1]
        hit = _LINKS.get(message)
        if hit is not None and hit[0] == previous:
            links.append(hit[1])
            continue
        # ``chain_link(previous, message)``, with the message's part digest kept.
        part = hit[2] if hit is not None else part_digest(message)
        link = hashlib.sha256((previous + part).encode()).hexdigest()[:32]
        _LINKS.put(message, (previous, link, part))
        links.append(link)
    if len(messages) > done:
        _CHAINS.keep(messages, tuple(links))
    return links


def fingerprinted(dispatch: Dispatch, request: Request, previous: Dispatch | None) -> Dispatch:
    """``dispatch`` with the digests of ``request`` and its diagnosis against ``previous``."""
    links = _chain(request)
    tools_digest = _part_digest(standing_tools(request))
    system_digest = _part_digest(request.system)
    cache = _diagnosis(previous, dispatch.model, tools_digest, system_digest, links)
    # One copy of the record, not two: it is fingerprinted at every provider call. Built by
    # its fields (``replace`` walks them all at every call); a test holds it to ``replace``.
    return Dispatch(
        dispatch.model,
        dispatch.step,
        dispatch.digest,
        cache,
        dispatch.timestamp,
        tools_digest,
        system_digest,
        links[-1],
        len(request.messages),
    )


_PARTS: IdentityMemo[str] = IdentityMemo(size=256)
"""Per tuple object: its ``part_digest``. A request's system part is its epoch's baseline and
its tools the tuple the boundary keeps while they do not change: the same objects step after
step, frozen (their text is memoised by identity already)."""


def _part_digest(part: tuple[object, ...]) -> str:
    found = _PARTS.get(part)
    return found if found is not None else _PARTS.put(part, part_digest(part))


def diagnose(previous: Dispatch | None, current: Dispatch, links: list[str]) -> CacheDiagnosis:
    """The cache outcome to expect for the request fingerprinted as ``current``.

    ``links`` is that request's message chain; ``previous`` is the session's last dispatch
    record (``None``: there was none); one written by an older version, without digests, gives
    ``unknown``.
    """
    return _diagnosis(previous, current.model, current.tools_digest, current.system_digest, links)


def _diagnosis(
    previous: Dispatch | None, model: str, tools_digest: str, system_digest: str, links: list[str]
) -> CacheDiagnosis:
    if previous is None:
        return "first"
    if previous.model != model:
        return "model_changed"
    if not previous.tools_digest:
        return "unknown"
    if previous.tools_digest != tools_digest:
        return "tools_changed"
    if previous.system_digest != system_digest:
        return "system_changed"
    if previous.message_count >= len(links):
        return "messages_changed"
    if links[previous.message_count] != previous.messages_digest:
        return "messages_changed"
    return "hit"


def mismatch(request: Request, dispatch: Dispatch, unknown: Sequence[str] = ()) -> str:
    """Which part of ``request`` differs from what ``dispatch`` recorded, in words.

    ``unknown`` names tool declarations the caller could not supply.
    """
    if unknown:
        return "tool declarations not known here: " + ", ".join(unknown)
    if dispatch.tools_digest and part_digest(standing_tools(request)) != dispatch.tools_digest:
        return "the tool declarations differ"
    if dispatch.system_digest and part_digest(request.system) != dispatch.system_digest:
        return "the system context differs"
    return "the messages differ (another window or history)"
