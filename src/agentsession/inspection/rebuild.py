"""Inspection: the expected prompt-cache outcome of a request, and past requests rebuilt.

A provider caches a request's prefix: tools, then system, then messages. A request is compared
with the one dispatched before it in the session and the first thing that breaks the prefix is
named, with the reasons Anthropic reports (``model_changed``, ``tools_changed``,
``system_changed``, ``messages_changed``), or ``hit`` when the new request extends the old one.

The comparison needs only digests, which every ``Dispatch`` record carries: one for the tools,
one for the system part and a chain over the messages (each link hashes the previous link and one
message), so "the old messages are a prefix of the new ones" is one chain value compared at the
old length. The diagnosis is therefore the same in a new process as in the one that sent the
previous request, and it is stored on each dispatch record beside the usage the provider reports.

A past request is rebuilt from the log alone, as it stood right before its dispatch record: the
epoch in force (its baseline, its history start, its update messages so far), the model view
projected from the records before the dispatch, the window, and the tool declarations the epoch
named. The dispatch record's digest proves the rebuild byte for byte; what the log does not hold
(tool schemas, the application's window cap) comes from the caller, and a rebuild that does not
reproduce the digest says so instead of passing for the real thing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from .._memo import IdentityMemo, PrefixMemo
from ..config import Config
from ..errors import UsageError
from ..log import CacheDiagnosis, Dispatch, Record
from ..request import Request, ToolSpec, standing_tools
from ._rebuilder import Rebuilder, Rebuilt, mismatch, part_digest

__all__ = [
    "CacheDiagnosis",
    "Rebuilt",
    "diagnose",
    "fingerprinted",
    "mismatch",
    "rebuild",
    "rebuild_all",
]


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


# -- rebuilding past requests ---------------------------------------------------------------


def rebuild_all(
    records: Sequence[Record],
    *,
    specs: Mapping[str, ToolSpec],
    config: Config,
    tools: Sequence[str] = (),
) -> list[Rebuilt]:
    """Every dispatched request of a log (``records`` in seq order, from seq 0), rebuilt.

    ``specs`` are the tool declarations the caller knows, by name (the log keeps only names);
    ``tools`` names the application's tools, which epochs written before tool names were
    recorded declared. ``config`` gives the window; a request the config does not reproduce
    (the application's window cap differs) is found among the other windows the same history
    allows, and its digest decides. Each epoch is projected once, and a request that extends the
    one before it is proved by hashing on from that one's messages, so the whole pass costs
    about one projection of the log plus one encoding and hash of each new message.
    """
    rebuilder = Rebuilder(records, specs, config, tools)
    return [rebuilder.rebuild(at, n) for n, at in enumerate(rebuilder.dispatches, start=1)]


def rebuild(
    records: Sequence[Record],
    number: int,
    *,
    specs: Mapping[str, ToolSpec],
    config: Config,
    tools: Sequence[str] = (),
) -> Rebuilt:
    """The ``number``-th dispatched request (from 1) rebuilt; ``UsageError`` when there is none."""
    rebuilder = Rebuilder(records, specs, config, tools)
    found = len(rebuilder.dispatches)
    if not 1 <= number <= found:
        raise UsageError(f"there is no dispatched request {number}: the session has {found}")
    return rebuilder.rebuild(rebuilder.dispatches[number - 1], number)
