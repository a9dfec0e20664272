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

import bisect
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from .._memo import IdentityMemo, PrefixMemo
from ..boundary import build_request, epoch_tools, window_of
from ..codec import canonical_json
from ..config import Config
from ..errors import UsageError
from ..log import (
    AssistantEntry,
    CacheDiagnosis,
    ContextEpoch,
    Dispatch,
    MidConversationSystemMessage,
    Record,
)
from ..projection import ViewMessage, project
from ..request import AssistantMessage, Request, ToolSpec, standing_tools
from ..window import Window, message_count, select_window

__all__ = [
    "CacheDiagnosis",
    "Rebuilt",
    "diagnose",
    "fingerprinted",
    "mismatch",
    "rebuild",
    "rebuild_all",
]


def _digest(value: object) -> str:
    text = canonical_json(value)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


_LINKS: IdentityMemo[tuple[str, str]] = IdentityMemo()
"""Per message object: (the link before it, its link). Consecutive requests of an epoch share
their prefix, so each message's link is hashed once while the window does not move."""


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
        link = hashlib.sha256((previous + _digest(message)).encode()).hexdigest()[:32]
        _LINKS.put(message, (previous, link))
        links.append(link)
    if len(messages) > done:
        _CHAINS.keep(messages, tuple(links))
    return links


def fingerprinted(dispatch: Dispatch, request: Request, previous: Dispatch | None) -> Dispatch:
    """``dispatch`` with the digests of ``request`` and its diagnosis against ``previous``."""
    links = _chain(request)
    current = replace(
        dispatch,
        tools_digest=_digest(standing_tools(request)),
        system_digest=_digest(request.system),
        messages_digest=links[-1],
        message_count=len(request.messages),
    )
    return replace(current, cache=diagnose(previous, current, links))


def diagnose(previous: Dispatch | None, current: Dispatch, links: list[str]) -> CacheDiagnosis:
    """The cache outcome to expect for the request fingerprinted as ``current``.

    ``links`` is that request's message chain; ``previous`` is the session's last dispatch
    record (``None``: there was none); one written by an older version, without digests, gives
    ``unknown``.
    """
    if previous is None:
        return "first"
    if previous.model != current.model:
        return "model_changed"
    if not previous.tools_digest:
        return "unknown"
    if previous.tools_digest != current.tools_digest:
        return "tools_changed"
    if previous.system_digest != current.system_digest:
        return "system_changed"
    if previous.message_count >= len(links):
        return "messages_changed"
    if links[previous.message_count] != previous.messages_digest:
        return "messages_changed"
    return "hit"


# -- rebuilding past requests ---------------------------------------------------------------


@dataclass(frozen=True)
class Rebuilt:
    """A dispatched request rebuilt from the log as it was when it was dispatched.

    ``number`` counts dispatches from 1; ``seq`` is the dispatch record's. ``exact`` says that the
    rebuilt request's digest equals the one the dispatch record holds (byte for byte what was
    sent); otherwise ``mismatch`` says which part differs and why.
    """

    number: int
    seq: int
    dispatch: Dispatch
    epoch: ContextEpoch | None
    request: Request
    exact: bool
    mismatch: str = ""


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
    allows, and its digest decides. Each epoch is projected once, so the whole pass costs about
    one projection of the log plus one encoding per request.
    """
    rebuilder = _Rebuilder(records, specs, config, tools)
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
    rebuilder = _Rebuilder(records, specs, config, tools)
    found = len(rebuilder.dispatches)
    if not 1 <= number <= found:
        raise UsageError(f"there is no dispatched request {number}: the session has {found}")
    return rebuilder.rebuild(rebuilder.dispatches[number - 1], number)


class _Rebuilder:
    """Rebuilds the dispatches of one log, projecting each epoch once.

    The model view of a dispatch is its epoch's view cut at the dispatch (projection maps each
    record on its own). A projected message is a function of its log record alone, so its
    encoding is computed once per record, whichever epoch projects it again; a message the
    request builder replaced (an elision note, provider data left out) is encoded afresh.
    """

    def __init__(
        self,
        records: Sequence[Record],
        specs: Mapping[str, ToolSpec],
        config: Config,
        tools: Sequence[str],
    ) -> None:
        self.records = records
        self.specs = specs
        self.config = config
        self.tools = tools
        self.seqs = [r.seq for r in records]
        self.dispatches = [i for i, r in enumerate(records) if isinstance(r.entry, Dispatch)]
        self.epochs = [i for i, r in enumerate(records) if isinstance(r.entry, ContextEpoch)]
        self._views: dict[int, tuple[int, list[ViewMessage]]] = {}
        self._encoded: dict[tuple[int, ...], str] = {}
        # Per epoch: each view message's records by its identity, the last seq of each view
        # message, and the mid-conversation messages with their positions.
        self._origins: dict[int, dict[int, tuple[int, ...]]] = {}
        self._lasts: dict[int, list[int]] = {}
        self._mids: dict[int, list[tuple[int, MidConversationSystemMessage]]] = {}

    def _epoch_view(self, epoch_at: int | None) -> tuple[int, list[ViewMessage]]:
        """Where the epoch's records start, and the model view of all of them."""
        key = -1 if epoch_at is None else epoch_at
        if key not in self._views:
            epoch: ContextEpoch | None = None
            lo = 0
            if epoch_at is not None:
                found = self.records[epoch_at]
                assert isinstance(found.entry, ContextEpoch)
                epoch = found.entry
                start = min(epoch.history_start, found.seq)
                if epoch.summary_seq is not None:
                    start = min(start, epoch.summary_seq)
                lo = bisect.bisect_left(self.seqs, start)
            later = [i for i in self.epochs if i > key]
            end = later[0] if later else len(self.records)
            whole = project(self.records[lo:end], epoch)
            self._views[key] = (lo, whole)
            self._origins[key] = {id(v.message): v.seqs for v in whole}
            lasts = [v.seqs[-1] for v in whole]
            self._lasts[key] = lasts if lasts == sorted(lasts) else []
            self._mids[key] = [
                (i, r.entry)
                for i, r in enumerate(self.records[lo:end], start=lo)
                if isinstance(r.entry, MidConversationSystemMessage)
            ]
        return self._views[key]

    def _view_at(self, key: int, whole: list[ViewMessage], seq: int) -> list[ViewMessage]:
        """The epoch's view cut before ``seq``: the messages whose records all came earlier."""
        lasts = self._lasts[key]
        if lasts or not whole:
            return whole[: bisect.bisect_left(lasts, seq)]
        return [v for v in whole if v.seqs[-1] < seq]  # not in seq order: look at each

    def rebuild(self, at: int, number: int) -> Rebuilt:
        dispatch = self.records[at].entry
        assert isinstance(dispatch, Dispatch)
        position = bisect.bisect_left(self.epochs, at)
        epoch_at = self.epochs[position - 1] if position else None
        epoch: ContextEpoch | None = None
        if epoch_at is not None:
            entry = self.records[epoch_at].entry
            assert isinstance(entry, ContextEpoch)
            epoch = entry
        key = -1 if epoch_at is None else epoch_at
        _, whole = self._epoch_view(epoch_at)
        seq = self.records[at].seq
        view = self._view_at(key, whole, seq)
        mids = [m for i, m in self._mids[key] if i < at]
        declared, unknown = _declarations(mids, epoch, self.specs, self.tools)
        baseline = epoch.baseline if epoch is not None else ()
        first: Request | None = None
        for window in _windows(view, self.config):
            for provider in _providers(self.records, at, view):
                candidate = build_request(view, window, baseline, declared, provider)
                first = first or candidate
                if self._digest(candidate, self._origins[key]) == dispatch.digest:
                    return Rebuilt(number, seq, dispatch, epoch, candidate, True)
            if unknown or _fixed_part_differs(candidate, dispatch):
                break  # another window cannot mend the tools or the system part
        assert first is not None
        return Rebuilt(
            number, seq, dispatch, epoch, first, False, mismatch(first, dispatch, unknown)
        )

    def _digest(self, request: Request, origin: Mapping[int, tuple[int, ...]]) -> str:
        """``request.digest(request)``, each projected record's message encoded once.

        The canonical text of a projected message is kept by its records' seqs (a later epoch
        projects the same record into a new, equal object), and the request's text is joined
        from those pieces exactly as ``request.digest`` joins them.
        """
        texts = []
        for message in request.messages:
            seqs = origin.get(id(message))
            if seqs is None:
                texts.append(canonical_json(message))
                continue
            text = self._encoded.get(seqs)
            if text is None:
                text = self._encoded[seqs] = canonical_json(message)
            texts.append(text)
        whole = (
            f'{{"messages": [{", ".join(texts)}],'
            f' "system": {canonical_json(request.system)},'
            f' "tools": {canonical_json(request.tools)}}}'
        )
        return hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _declarations(
    before: Sequence[MidConversationSystemMessage],
    epoch: ContextEpoch | None,
    specs: Mapping[str, ToolSpec],
    tools: Sequence[str],
) -> tuple[tuple[ToolSpec, ...], tuple[str, ...]]:
    """The declarations the request carried (by the names the log holds) and unknown names.

    ``before`` are the mid-conversation messages logged before the request.
    """
    if epoch is None:
        names: Sequence[str] = tools
    else:
        mids = [m for m in before if m.epoch == epoch.epoch]
        names = epoch_tools(epoch, mids, tools).declared
    unknown = tuple(n for n in names if n not in specs)
    declared = tuple(specs.get(n) or ToolSpec(n, "", {}) for n in names)
    return declared, unknown


def _fixed_part_differs(request: Request, dispatch: Dispatch) -> bool:
    """Whether the tools or the system part differ from what ``dispatch`` recorded."""
    tools, system = dispatch.tools_digest, dispatch.system_digest
    return bool(tools and _digest(standing_tools(request)) != tools) or bool(
        system and _digest(request.system) != system
    )


def _windows(view: Sequence[ViewMessage], config: Config) -> Iterator[Window]:
    """The configured window first, then every other window the history allows.

    Within an epoch the whole history fits (an advance starts a new epoch), so all messages is
    the next candidate; an over-long newest turn elides depending on the cap, so each cap follows.
    """
    yield window_of(view, config)
    messages = [v.message for v in view]
    counted = message_count(messages)
    yield select_window(messages, max(counted, 1))
    for cap in range(1, counted):
        yield select_window(messages, cap)


def _providers(records: Sequence[Record], at: int, view: Sequence[ViewMessage]) -> list[str]:
    """Providers to build for: the one that answered this dispatch, then the history's own.

    The provider only decides which opaque provider data messages keep, so it matters only when
    some message carries such data.
    """
    answer = ""
    for record in records[at + 1 :]:
        if isinstance(record.entry, Dispatch):
            break
        if isinstance(record.entry, AssistantEntry):
            answer = record.entry.provider
            break
    carrying = [
        v.message.provider
        for v in view
        if isinstance(v.message, AssistantMessage) and v.message.provider_data
    ]
    if not carrying:
        return [answer]
    return list(dict.fromkeys([answer, *carrying, ""]))


def mismatch(request: Request, dispatch: Dispatch, unknown: Sequence[str] = ()) -> str:
    """Which part of ``request`` differs from what ``dispatch`` recorded, in words.

    ``unknown`` names tool declarations the caller could not supply.
    """
    if unknown:
        return "tool declarations not known here: " + ", ".join(unknown)
    if dispatch.tools_digest and _digest(standing_tools(request)) != dispatch.tools_digest:
        return "the tool declarations differ"
    if dispatch.system_digest and _digest(request.system) != dispatch.system_digest:
        return "the system context differs"
    return "the messages differ (another window or history)"
