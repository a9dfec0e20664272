"""Inspection: past requests rebuilt from the log, proved by their dispatch records' digests.

The digests and the expected cache outcome are stamped on each dispatch record by the write
path (``log.fingerprint``); the diagnosis is therefore the same in a new process as in the one
that sent the previous request. They are named here too for readers of the inspection.

A past request is rebuilt from the log alone, as it stood right before its dispatch record: the
epoch in force (its baseline, its history start, its update messages so far), the model view
projected from the records before the dispatch, the window, and the tool declarations the epoch
named. The dispatch record's digest proves the rebuild byte for byte; what the log does not hold
(tool schemas, the application's window cap) comes from the caller, and a rebuild that does not
reproduce the digest says so instead of passing for the real thing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..config import Config
from ..errors import UsageError
from ..log import CacheDiagnosis, Record
from ..log.fingerprint import diagnose, fingerprinted, mismatch
from ..request import ToolSpec
from ._rebuilder import Rebuilder, Rebuilt

__all__ = [
    "CacheDiagnosis",
    "Rebuilt",
    "diagnose",
    "fingerprinted",
    "mismatch",
    "rebuild",
    "rebuild_all",
]


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
