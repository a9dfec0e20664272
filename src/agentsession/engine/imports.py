"""An imported session is data, not authority: what an import keeps of a session file.

A session file can come from anywhere and can be forged, so the importing runtime keeps its
conversation and none of its authority:

- the session starts at the importer's default permission preset: when the file's log ends on
  another preset, a ``permission_changed`` entry back to the default is appended (recorded, so
  the log says why the preset changed);
- approvals the file remembers ("always" for a tool) are dropped, recorded by an
  ``approvals_dropped`` entry naming the tools; a pending call approved in the file is never run
  on that approval (a decision without a result closes as interrupted);
- the id must follow the rules of ids the package creates (``valid_session_id``): no path
  separators, no leading dot, no control characters, at most 128 characters;
- the title is cleaned as ``rename`` cleans titles (one plain line);
- the file's System Context (epoch baselines and update messages, the exporter's ``core.agent``
  instructions among them) never reaches the importer's model: an epoch with reason ``import``
  and nothing in it is appended, and the first request after the import starts a new epoch whose
  baseline the importing runtime renders from its own components, carrying nothing over
  (``engine/admission``). The file's conversation stays in view; its epochs stay in the log.

The line size and nesting limits are the session file's own (``store.session_file``).
"""

from __future__ import annotations

import dataclasses
import re

from ..errors import SessionFileError
from ..log import (
    ApprovalDecided,
    ApprovalRequested,
    ApprovalsDropped,
    ContextEpoch,
    LogEntry,
    MidConversationSystemMessage,
    PermissionChanged,
    now,
)
from ..store.session_file import SessionFile
from .titles import MAX_TITLE_CHARS, clean_title

__all__ = ["admit_import", "valid_session_id"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
REASON = "imported: a session file brings no approvals"


def valid_session_id(session_id: str) -> bool:
    """Whether ``session_id`` is an id the package could have created (and is safe as a name).

    Created ids are 32 hex digits; imported ones may be any run of ASCII letters, digits, ``.``,
    ``_`` and ``-`` starting with a letter or digit, up to 128 characters: fit for a file name,
    a URL path and a terminal, never ``..`` or a path.
    """
    return bool(_ID.fullmatch(session_id))


def admit_import(parsed: SessionFile, default_preset: str, *, path: str = "") -> SessionFile:
    """``parsed`` as the importing runtime stores it (see the module doc); refusal raises."""
    info = parsed.info
    if not valid_session_id(info.id):
        raise SessionFileError(
            f"the session id {info.id!r} is not one this package could have created (letters,"
            " digits, '.', '_', '-'; at most 128; not starting with '.' or '-')",
            path=path,
            line=1,
        )
    if info.title is not None:
        title = clean_title(info.title)
        if len(title) > MAX_TITLE_CHARS:  # a file is data: shortened, as rename would refuse it
            title = title[: MAX_TITLE_CHARS - 1].rstrip() + "…"
        info = dataclasses.replace(info, title=title or None)
    added = _reset_authority(parsed.entries, default_preset)
    context = _set_context_aside(parsed.entries)
    return dataclasses.replace(parsed, info=info, entries=(*parsed.entries, *added, *context))


def _set_context_aside(entries: tuple[LogEntry, ...]) -> list[LogEntry]:
    """An empty ``import`` epoch after the file's own, so none of its context is carried on.

    Numbered past every epoch and update message the file holds, so none of them belongs to it;
    its history starts where the file's last epoch's did, so the conversation stays in view.
    """
    if not any(isinstance(e, ContextEpoch | MidConversationSystemMessage) for e in entries):
        return []  # nothing to set aside (a version-2 file stays as it was)
    numbers = [-1]
    history_start, summary_seq = 0, None
    for entry in entries:
        if isinstance(entry, ContextEpoch):
            numbers.append(entry.epoch)
            history_start, summary_seq = entry.history_start, entry.summary_seq
        elif isinstance(entry, MidConversationSystemMessage):
            numbers.append(entry.epoch)
    epoch = ContextEpoch(
        epoch=max(numbers) + 1,
        baseline=(),
        checkpoint=(),
        history_start=history_start,
        reason="import",
        summary_seq=summary_seq,
        timestamp=now(),
        tools=(),
    )
    return [epoch]


def _reset_authority(entries: tuple[LogEntry, ...], default_preset: str) -> list[LogEntry]:
    stamp = now()
    preset = default_preset
    asked: dict[str, str] = {}
    always: set[str] = set()
    for entry in entries:
        match entry:
            case PermissionChanged():
                preset = entry.preset
            case ApprovalRequested():
                asked[entry.call_id] = entry.name
            case ApprovalDecided(approved=True, always=True) if entry.call_id in asked:
                always.add(asked[entry.call_id])  # what the gate would remember
            case _:
                pass
    added: list[LogEntry] = []
    if preset != default_preset:
        added.append(PermissionChanged(default_preset, preset, stamp))
    if always:
        added.append(ApprovalsDropped(tuple(sorted(always)), REASON, stamp))
    return added
