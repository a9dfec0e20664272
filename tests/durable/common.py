"""What the durable tests share: a turn driven step by step, and a log compared without clocks."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import agentsession as ags
from agentsession.durable import (
    Settled,
    admit_prompt,
    last_seq,
    model_step,
    run_tool,
    settle_turn,
)
from agentsession.log import LogEntry, Record, dump_entry

#: Fields that hold the wall clock's time, which two runs never share.
_CLOCK_FIELDS = ("timestamp", "sent_at", "first_token_at", "started_at")


async def drive(
    runtime: ags.Runtime, session_id: str, text: str, *, twice: bool = False
) -> Settled:
    """One turn as an engine runs it: each step in order; with ``twice`` each step runs again."""
    expected = await last_seq(runtime, session_id)
    admitted = await admit_prompt(runtime, session_id, expected, text)
    if twice:
        assert await admit_prompt(runtime, session_id, expected, text) == admitted
    after, step = admitted.seq, 1
    while True:
        responded = await model_step(runtime, session_id, after, step)
        if twice:
            assert await model_step(runtime, session_id, after, step) == responded
        if not responded.calls:
            break
        for call_id in responded.calls:
            ran = await run_tool(runtime, session_id, responded.seq, call_id, first_attempt=True)
            if twice:
                again = await run_tool(
                    runtime, session_id, responded.seq, call_id, first_attempt=False
                )
                assert again == ran
            after = ran.seq
        step += 1
    return await settle_turn(runtime, session_id, admitted.seq)


def shape(records: Sequence[Record]) -> list[tuple[int, str, str]]:
    """Each entry's seq, kind and stored JSON with its clock fields blanked."""
    shaped = []
    for record in records:
        entry = record.entry
        names = {f.name for f in dataclasses.fields(entry)}
        blank = {name: "" for name in _CLOCK_FIELDS if name in names}
        blanked: LogEntry = dataclasses.replace(entry, **blank)  # type: ignore[arg-type]
        kind, _, data = dump_entry(blanked)
        shaped.append((record.seq, kind, data))
    return shaped
