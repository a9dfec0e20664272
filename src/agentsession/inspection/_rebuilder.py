"""Past requests rebuilt from the log, one epoch projected once and each request proved.

``rebuild.rebuild_all`` and ``rebuild.rebuild`` (the public names) run a ``Rebuilder`` over a
log: each dispatch's request is rebuilt as it stood right before its dispatch record, from the
epoch in force, its model view cut at the dispatch, the window and the tool declarations, and
the dispatch record's digest proves it byte for byte. Within an epoch the next request is
almost always the one before it plus the messages logged since; that guess is taken only when
the recorded digest proves it, so a whole session costs about one projection of its log and
one hash of each new message.
"""

from __future__ import annotations

import bisect
import hashlib
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from .._frozen import frozen
from ..boundary import build_request, epoch_tools, window_of
from ..codec import builder, canonical_json
from ..config import Config
from ..log import (
    AssistantEntry,
    ContextEpoch,
    Dispatch,
    MidConversationSystemMessage,
    Record,
)
from ..log.fingerprint import chain_link, mismatch, part_digest
from ..projection import ViewMessage, project
from ..request import AssistantMessage, Message, Request, ToolSpec, standing_tools
from ..window import Window, message_count, select_window
from ._carried import Projected, carried

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = ["Rebuilder", "Rebuilt"]

_MESSAGE = operator.attrgetter("message")
_SEQS = operator.attrgetter("seqs")
_POSITION = operator.itemgetter(0)


@frozen
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


class Rebuilder:
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
        self._parts: dict[tuple[int, ...], str] = {}  # part digests, as ``_encoded``
        # Per epoch: each view message's records by its identity, the last seq of each view
        # message, and the mid-conversation messages with their positions.
        self._origins: dict[int, dict[int, tuple[int, ...]]] = {}
        self._lasts: dict[int, list[int]] = {}
        self._mids: dict[int, list[tuple[int, MidConversationSystemMessage]]] = {}
        self._last: _Resume | None = None
        self._digests: dict[int, tuple[object, str]] = {}  # part digests, by the part's identity
        self._projected: Projected | None = None
        # What each request that extends the one before makes, built with their fields
        # stored at once (``codec.builder``): thousands of each in a long session.
        self._made = (builder(Rebuilt), builder(Request), builder(_Resume))

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
            after = bisect.bisect_right(self.epochs, key)
            end = self.epochs[after] if after < len(self.epochs) else len(self.records)
            last = self._projected  # the epoch before, whose view this one mostly repeats
            whole = None if epoch is None else carried(self.records, lo, end, epoch, last)
            if whole is None:
                whole = project(self.records[lo:end], epoch)
            if epoch is not None:
                self._projected = Projected(lo, end, epoch, whole)
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

    def _cut(self, key: int, whole: list[ViewMessage], seq: int) -> int | None:
        """How many of the epoch's view messages came before ``seq`` (``None``: not a prefix)."""
        lasts = self._lasts[key]
        if lasts or not whole:
            return bisect.bisect_left(lasts, seq)
        return None

    def _view_at(self, key: int, whole: list[ViewMessage], seq: int) -> list[ViewMessage]:
        """The epoch's view cut before ``seq``: the messages whose records all came earlier."""
        cut = self._cut(key, whole, seq)
        if cut is not None:
            return whole[:cut]
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
        logged = self._mids[key]
        before = bisect.bisect_left(logged, at, key=_POSITION)  # mid-conversation messages
        cut = self._cut(key, whole, seq)
        resumed = self._resumed(key, whole, cut, before, dispatch)
        if resumed is not None:
            request, why = resumed
            return self._made[0](number, seq, dispatch, epoch, request, not why, why)
        mids = [m for _, m in logged[:before]]
        view = whole[:cut] if cut is not None else self._view_at(key, whole, seq)
        declared, unknown = _declarations(mids, epoch, self.specs, self.tools)
        baseline = epoch.baseline if epoch is not None else ()
        first: tuple[Request, _Hash | None, bytes] | None = None
        self._last = None
        for window in _windows(view, self.config):
            for provider in _providers(self.records, at, view):
                candidate = build_request(view, window, baseline, declared, provider)
                differs = self._fixed_part_differs(candidate, dispatch)  # then no digest matches
                found, hashed, tail = (
                    (None, None, b"") if differs else self._digest(candidate, self._origins[key])
                )
                first = first or (candidate, hashed, tail)
                if found == dispatch.digest:
                    if cut is not None:
                        made = (candidate, hashed, tail, unknown, None)
                        self._last = _Resume(key, cut, len(mids), *made)
                    return Rebuilt(number, seq, dispatch, epoch, candidate, True)
            if unknown or differs:
                break  # another window cannot mend the tools or the system part
        assert first is not None
        request, hashed, tail = first
        if cut is not None and dispatch.messages_digest:  # else nothing can prove it
            link = self._chained(request.messages, self._origins[key])
            if self._sent_messages(request, dispatch, link):
                self._last = _Resume(key, cut, len(mids), request, hashed, tail, unknown, link)
        why = mismatch(request, dispatch, unknown)
        return Rebuilt(number, seq, dispatch, epoch, request, False, why)

    def _resumed(
        self, key: int, whole: list[ViewMessage], cut: int | None, mids: int, dispatch: Dispatch
    ) -> tuple[Request, str] | None:
        """The request before this one in its epoch, extended by the messages logged since.

        Within an epoch the next request is almost always the last one plus the view messages
        that came after it, with the same tools and system part (no mid-conversation message
        came between them, so the declarations are the same). That guess is checked the way
        any rebuild is, by the dispatch record's digest — hashed on from the last request's
        messages, so only the new ones are hashed — and is exact when the digest matches.
        When only the tool declarations keep it from matching (they are not known here, or
        differ), the guess stands if its messages and system part are what the dispatch
        record's part digests say was sent, with the same words of why it is not exact as a
        rebuild in full gives. Otherwise the request is rebuilt in full. Returns the request
        and why it is not exact ("": it is), or ``None``: no guess, or a wrong one.
        """
        last = self._last
        if last is None or cut is None or last.key != key or last.mids != mids:
            return None
        if cut < last.cut:
            return None
        added = whole[last.cut : cut]
        before = last.request
        new = tuple(map(_MESSAGE, added))
        request = self._made[1](
            system=before.system,
            messages=before.messages + new,
            tools=before.tools,
            sources=before.sources + tuple(map(_SEQS, added)),
        )
        # No mid-conversation message came since the full rebuild: the standing tools are its.
        standing = last.standing
        if standing is None and dispatch.tools_digest:
            standing = self._part_digest(standing_tools(request))
        hashed = None
        if not dispatch.tools_digest or standing == dispatch.tools_digest:
            if last.hashed is None:
                return None  # its digest was not followed: rebuilt in full
            hashed = last.hashed.copy()
            if new:
                origin = self._origins[key]
                texts = ", ".join([self._text(message, origin) for message in new])
                joined = ", " + texts if before.messages else texts
                hashed.update(joined.encode("utf-8", "surrogatepass"))
            done = hashed.copy()
            done.update(last.tail)
            if done.hexdigest()[:32] == dispatch.digest:
                made = (hashed, last.tail, last.unknown, None, standing)
                self._last = self._made[2](key, cut, mids, request, *made)
                return request, ""
            if not last.unknown and dispatch.tools_digest:
                return None  # the tools are right, so the messages or the system part are not
        # Else the tools differ from those sent, so the digest cannot match (its hash is not
        # followed): the message chain decides.
        origin = self._origins[key]
        if last.link is None:
            link = self._chained(request.messages, origin)
        else:
            link = self._chained(new, origin, last.link)
        if not self._sent_messages(request, dispatch, link):
            return None
        why = mismatch(request, dispatch, last.unknown)
        proved = (hashed, last.tail, last.unknown, link, standing)
        self._last = self._made[2](key, cut, mids, request, *proved)
        return request, why

    def _sent_messages(self, request: Request, dispatch: Dispatch, link: str) -> bool:
        """Whether ``request``'s messages and system part are those ``dispatch`` recorded.

        ``link`` is the last link of the request's message chain. The record's message chain
        and system digest prove them without the tool declarations (a record written before
        they were kept holds neither: nothing is proved).
        """
        if not dispatch.messages_digest or not dispatch.system_digest:
            return False
        if dispatch.message_count != len(request.messages):
            return False
        if self._part_digest(request.system) != dispatch.system_digest:
            return False
        return link == dispatch.messages_digest

    def _part_digest(self, part: tuple[object, ...]) -> str:
        """``part_digest(part)``, kept by the part's identity: an epoch's requests share theirs."""
        kept = self._digests.get(id(part))
        if kept is None or kept[0] is not part:
            kept = self._digests[id(part)] = (part, part_digest(part))
        return kept[1]

    def _fixed_part_differs(self, request: Request, dispatch: Dispatch) -> bool:
        """Whether the tools or the system part differ from what ``dispatch`` recorded."""
        tools, system = dispatch.tools_digest, dispatch.system_digest
        return bool(tools and self._part_digest(standing_tools(request)) != tools) or bool(
            system and self._part_digest(request.system) != system
        )

    def _chained(
        self, messages: Sequence[Message], origin: Mapping[int, tuple[int, ...]], link: str = ""
    ) -> str:
        """``chain_link`` over ``messages`` from ``link``; part digests kept by seqs, as texts."""
        for message in messages:
            seqs = origin.get(id(message))
            if seqs is None:
                link = chain_link(link, message)
                continue
            part = self._parts.get(seqs)
            if part is None:
                text = self._text(message, origin).encode("utf-8", "surrogatepass")
                part = self._parts[seqs] = hashlib.sha256(text).hexdigest()[:32]
            link = hashlib.sha256((link + part).encode()).hexdigest()[:32]
        return link

    def _text(self, message: Message, origin: Mapping[int, tuple[int, ...]]) -> str:
        """The canonical text of one message, kept per projected record (see ``_digest``)."""
        seqs = origin.get(id(message))
        if seqs is None:
            return canonical_json(message)
        text = self._encoded.get(seqs)
        if text is None:
            text = self._encoded[seqs] = canonical_json(message)
        return text

    def _digest(
        self, request: Request, origin: Mapping[int, tuple[int, ...]]
    ) -> tuple[str, _Hash, bytes]:
        """``request.digest(request)``, each projected record's message encoded once.

        The canonical text of a projected message is kept by its records' seqs (a later epoch
        projects the same record into a new, equal object), and the request's text is joined
        from those pieces exactly as ``request.digest`` joins them. Also returned: the hash
        state after the messages and the rest of the text, for the next request to resume.
        """
        texts = [self._text(message, origin) for message in request.messages]
        hashed = hashlib.sha256(
            f'{{"messages": [{", ".join(texts)}'.encode("utf-8", "surrogatepass")
        )
        tail = (
            f'], "system": {canonical_json(request.system)},'
            f' "tools": {canonical_json(request.tools)}}}'
        ).encode("utf-8", "surrogatepass")
        done = hashed.copy()
        done.update(tail)
        return done.hexdigest()[:32], hashed, tail


@frozen
class _Resume:
    """The last request rebuilt exactly, for the next one of its epoch to extend.

    ``cut`` view messages of epoch ``key`` came before it, and ``mids`` mid-conversation
    messages of that epoch; ``hashed`` is the SHA-256 state after its messages' text and
    ``tail`` the rest of its text (its system part and tools; ``hashed`` is ``None`` once its
    tools were found to differ from those sent, so no digest of it can match); ``unknown`` names
    the tools declared whose declarations are not known here; ``link`` is the last link of its
    message chain (``None``: not needed so far); ``standing`` the digest of its standing tools
    (``None``: not needed so far). Its messages are those that were sent: its digest, or its
    message chain, proved them.
    """

    key: int
    cut: int
    mids: int
    request: Request
    hashed: _Hash | None
    tail: bytes
    unknown: tuple[str, ...]
    link: str | None
    standing: str | None = None


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
    # By index: no copy of the rest of the log, and no walk over the records before it (an
    # ``islice`` from ``at`` steps through every one of them).
    for index in range(at + 1, len(records)):
        entry = records[index].entry
        if isinstance(entry, Dispatch):
            break
        if isinstance(entry, AssistantEntry):
            answer = entry.provider
            break
    carrying = [
        v.message.provider
        for v in view
        if isinstance(v.message, AssistantMessage) and v.message.provider_data
    ]
    if not carrying:
        return [answer]
    return list(dict.fromkeys([answer, *carrying, ""]))
