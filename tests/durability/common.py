"""What the durability tests share: a scripted plan, a tool with a side effect, the log checks.

The model is scripted by the prompt itself: ``"<tag> prompt <k>: <rounds>x<width>"`` asks for
``rounds`` rounds of ``width`` parallel ``work`` calls, then a text answer. The reply depends on
the request only, so a step re-sent after a crash gets the same kind of answer. The ``work``
tool appends its call id to a side file (one ``write`` on an ``O_APPEND`` descriptor: a line is
whole and survives the process being killed right after), which proves how often each call ran.

``check_log`` reads one session's final log and counts every way it could be wrong: a gap in the
seqs, a tool call without exactly one result, a dispatched request that cannot be rebuilt byte
for byte from the log or that breaks a wire format's rules, a mid-conversation change whose hash
is not ``content_hash`` of its update (or that announces no change). Tests assert it finds
nothing; the crash-soak benchmark prints the counts.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import agentsession as ags
from agentsession.context import content_hash
from agentsession.inspection.rebuild import rebuild_all
from agentsession.log import (
    AssistantEntry,
    ContextEpoch,
    LogEntry,
    MidConversationSystemMessage,
    Record,
    ToolResultEntry,
    UserEntry,
    dump_entry,
)
from agentsession.request import AssistantMessage, UserMessage

FORMATS = ("openai-chat", "openai-responses", "anthropic-messages", "gemini")
_PLAN = re.compile(r"prompt (\d+): (\d+)x(\d+)")


def plan_prompt(tag: str, k: int) -> str:
    """The text of prompt ``k``: 0, 1 or 2 rounds of 1 or 2 parallel tool calls."""
    rounds = (k * 7 + len(tag)) % 3
    width = 1 + (k % 2)
    return f"{tag} prompt {k}: {rounds}x{width}"


def text_of(content: object) -> str:
    """The text of a message's content (text parts joined)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, Iterable) else ()
    return "".join(p.text for p in parts if isinstance(p, ags.TextPart))


def planned_reply(request: ags.Request, signature: str = "") -> str | list[ags.ToolCall]:
    """The scripted answer to ``request``: the next round of calls its prompt asks for, or text."""
    users = [i for i, m in enumerate(request.messages) if isinstance(m, UserMessage)]
    assert users, "every request carries its prompt"
    prompt = text_of(request.messages[users[-1]].content)
    found = _PLAN.search(prompt)
    assert found is not None, prompt
    k, rounds, width = (int(g) for g in found.groups())
    done = sum(isinstance(m, AssistantMessage) for m in request.messages[users[-1] :])
    if done < rounds:
        # Ids from the plan, so that runs compare request by request; unique in a session.
        tag = prompt[: found.start()].strip().replace(" ", "_")
        return [
            ags.ToolCall("work", {"n": k * 10 + done, "by": signature}, f"{tag}.{k}.{done}.{i}")
            for i in range(width)
        ]
    return f"{signature} answered: {prompt}"


def invalid_formats(request: ags.Request) -> list[str]:
    """The wire formats that refuse ``request`` (``lower`` validates every body it makes)."""
    refused = []
    for fmt in FORMATS:
        try:
            ags.lower(request, fmt)
        except ags.RequestValidationError as exc:
            refused.append(f"{fmt}: {exc}")
    return refused


def side_tool(side: Path) -> ags.Tool:
    """``work``: appends its call id to ``side`` (the proof of how often each call ran)."""

    @ags.tool(effect="write")
    def work(n: int, by: str, context: ags.ToolContext) -> str:
        """Do one numbered piece of work.

        Args:
            n: The piece of work.
            by: Who asked.
        """
        fd = os.open(side, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{context.call_id}\n".encode())
        finally:
            os.close(fd)
        return f"work {n} done for {by}"

    return work


def side_runs(side: Path) -> Counter[str]:
    """How many times each call id ran, from the side file."""
    if not side.exists():
        return Counter()
    return Counter(line for line in side.read_text(encoding="utf-8").splitlines() if line)


def fingerprint(entry: LogEntry) -> str:
    """A short digest of an entry's stored form (kind, version and JSON)."""
    kind, version, data = dump_entry(entry)
    return hashlib.sha256(f"{kind}\0{version}\0{data}".encode()).hexdigest()[:20]


@dataclass
class LogReport:
    """What is wrong with one session's log; every list empty means nothing is."""

    gaps: list[str] = field(default_factory=list)
    unpaired: list[str] = field(default_factory=list)
    inexact: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    checkpoints: list[str] = field(default_factory=list)
    requests: int = 0

    def problems(self) -> list[str]:
        return [*self.gaps, *self.unpaired, *self.inexact, *self.invalid, *self.checkpoints]


def check_log(
    records: Sequence[Record], tools: Sequence[ags.Tool], config: ags.Config
) -> LogReport:
    """Check one session's whole log (``records`` from seq 0); see the module docstring."""
    report = LogReport()
    seqs = [r.seq for r in records]
    if seqs != list(range(len(records))):
        report.gaps.append(f"seqs are not 0..{len(records) - 1}: {seqs}")
    _check_pairs(records, report)
    specs = {t.name: t.spec for t in tools}
    rebuilt = rebuild_all(records, specs=specs, config=config, tools=[t.name for t in tools])
    report.requests = len(rebuilt)
    for item in rebuilt:
        if not item.exact:
            report.inexact.append(f"request {item.number} (seq {item.seq}): {item.mismatch}")
        report.invalid.extend(
            f"request {item.number}: {why}" for why in invalid_formats(item.request)
        )
    _check_checkpoints(records, report)
    return report


def _check_pairs(records: Sequence[Record], report: LogReport) -> None:
    calls: Counter[str] = Counter()
    results: Counter[str] = Counter()
    for record in records:
        entry = record.entry
        if isinstance(entry, AssistantEntry):
            calls.update(c.id for c in entry.tool_calls)
        elif isinstance(entry, ToolResultEntry):
            if entry.call_id not in calls:
                report.unpaired.append(f"seq {record.seq}: a result before its call")
            results[entry.call_id] += 1
    for call_id, count in calls.items():
        if count != 1 or results[call_id] != 1:
            report.unpaired.append(f"call {call_id}: {count} calls, {results[call_id]} results")


def _check_checkpoints(records: Sequence[Record], report: LogReport) -> None:
    """Each update's hash is its text's, and each one changes the epoch's checkpoint."""
    state: dict[str, str] = {}
    for record in records:
        entry = record.entry
        if isinstance(entry, ContextEpoch):
            state = dict(entry.checkpoint)
        elif isinstance(entry, MidConversationSystemMessage):
            for change in entry.changes:
                if change.update is None:
                    state.pop(change.key, None)
                    continue
                if change.hash != content_hash(change.update):
                    report.checkpoints.append(f"seq {record.seq}: {change.key} hash mismatch")
                if state.get(change.key) == change.hash:
                    report.checkpoints.append(f"seq {record.seq}: {change.key} did not change")
                state[change.key] = str(change.hash)


def transcript(records: Sequence[Record]) -> list[tuple[str, str]]:
    """The user transcript as (role, text) pairs, tool call ids left out (they are random)."""
    shown: list[tuple[str, str]] = []
    for record in records:
        entry = record.entry
        if isinstance(entry, UserEntry):
            shown.append(("user", text_of(entry.content)))
        elif isinstance(entry, AssistantEntry):
            calls = ",".join(f"{c.name}{sorted(c.arguments.items())}" for c in entry.tool_calls)
            shown.append(("assistant", f"{entry.content}|{calls}"))
        elif isinstance(entry, ToolResultEntry):
            shown.append(("tool", f"{text_of(entry.content)}|{entry.is_error}"))
    return shown
