"""Marks for turns that ended without a reply, for reading a transcript.

The user transcript holds user, assistant and tool messages only, so a turn that was cancelled,
whose process was killed, or whose provider call failed shows as a user message with nothing
after it. These marks say what the log knows: each is keyed by the number of transcript
messages before which it belongs (it follows the last message of its turn).
"""

from __future__ import annotations

from collections.abc import Sequence

from .log import TRANSCRIPT_KINDS, Dispatch, Interrupted, ProviderFailed, Record
from .recovery import step_state

__all__ = ["turn_marks"]


def turn_marks(records: Sequence[Record]) -> dict[int, str]:
    """Transcript position → what happened to the turn that ended there without a reply."""
    marks: dict[int, str] = {}
    count = 0
    failed: str | None = None
    last_dispatch = -1
    for index, record in enumerate(records):
        entry = record.entry
        if isinstance(entry, Dispatch):
            last_dispatch = index
        elif isinstance(entry, Interrupted):
            marks[count] = f"interrupted: {entry.reason}"
        elif isinstance(entry, ProviderFailed):
            failed = f"no reply: the provider call failed ({entry.error_type})"
        elif entry.kind in TRANSCRIPT_KINDS:
            if entry.kind == "assistant":
                failed = None
            elif entry.kind == "user" and failed is not None:
                marks.setdefault(count, failed)
                failed = None
            count += 1
    if failed is not None:
        marks.setdefault(count, failed)
    if last_dispatch >= 0:
        state = step_state(records[last_dispatch:])
        if not state.settled and not state.paused:
            marks.setdefault(count, "unfinished: its process ended, or it is still running")
    return marks
