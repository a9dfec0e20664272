"""Answering, on the command line, the tool calls a permission preset asks about.

A turn that reaches such a call pauses (``stop_reason == "approval_required"``); the command
line answers every waiting call through one ``Approver`` and then resumes the turn:

- ``TerminalAsker`` asks in the terminal: ``y`` approves the call, ``a`` approves the tool for
  the rest of the session, ``n`` or Enter denies it, and any other text denies it with that
  text as the reason the model reads. Ctrl-C or Ctrl-D stops asking and leaves the call waiting
  (``chat`` asks again, or ``/approve`` / ``/deny`` answer it).
- ``APPROVE_ALL`` (``--yes``) approves each call as it comes, never "always".
- ``DENY_ALL`` is what is left without a terminal (a pipe, ``--json``): nobody can be asked, so
  every such call is denied with a note saying so — the command never waits for input that
  cannot come.

Each decision is shown (a ``approval_answer`` object with ``--json``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..events import ApprovalNeeded, ApprovalRequest
from ..hygiene import visible
from ..session import Session
from .console import JsonOutput, Output, short

__all__ = [
    "APPROVE_ALL",
    "DENY_ALL",
    "NO_TERMINAL",
    "Answer",
    "Approver",
    "Fixed",
    "TerminalAsker",
    "parse_answer",
    "settle",
]

NO_TERMINAL = "nobody could be asked for approval: the command line had no terminal"
QUESTION = "allow? [y]es · [n]o (or type why not) · [a]lways for this session › "


@dataclass(frozen=True)
class Answer:
    """One decision: ``yes``, ``always`` (this tool for the session) or ``no`` with a note."""

    verdict: Literal["yes", "always", "no"]
    note: str = ""
    why: str = ""  # for the user only: how the decision came about


def parse_answer(text: str) -> Answer:
    """The answer a typed line means; anything unclear denies (with the text as the note)."""
    said = " ".join(text.split())
    match said.lower():
        case "y" | "yes":
            return Answer("yes")
        case "a" | "always":
            return Answer("always")
        case "" | "n" | "no":
            return Answer("no", "the user said no")
        case _:
            return Answer("no", said)


class Approver(Protocol):
    """Decides about one waiting call; ``None`` when the user stopped answering."""

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        """The decision about ``request``."""
        ...


class Fixed:
    """The same answer for every call (``--yes``, no terminal, ``/approve``, ``/deny``)."""

    def __init__(self, answer: Answer) -> None:
        self.fixed = answer

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        """See ``Approver.answer``."""
        return self.fixed


APPROVE_ALL = Fixed(Answer("yes", why="--yes"))
DENY_ALL = Fixed(Answer("no", NO_TERMINAL, why="--yes approves such calls"))


class TerminalAsker:
    """Asks in the terminal, one line per waiting call.

    ``detailed`` puts the call's arguments and the preset's reason into the question, for an
    output that does not show them (``--quiet``).
    """

    def __init__(self, *, detailed: bool = False) -> None:
        self.detailed = detailed

    async def answer(self, request: ApprovalRequest) -> Answer | None:
        """See ``Approver.answer``."""
        from prompt_toolkit import PromptSession

        prompt: PromptSession[str] = PromptSession()
        asked = f"{request.name}: {QUESTION}"
        if self.detailed:
            arguments = short(json.dumps(request.arguments, ensure_ascii=False))
            asked = f"{request.name}({arguments}): {request.reason}\n{QUESTION}"
        asked = visible(asked)  # the model chose the arguments: no escape reaches the terminal
        try:
            typed = await prompt.prompt_async(asked)
        except (KeyboardInterrupt, EOFError):
            return None
        return parse_answer(typed)


async def settle(
    session: Session,
    approvals: Sequence[ApprovalRequest],
    approver: Approver,
    output: Output,
    *,
    show: bool = False,
) -> bool:
    """Answer each waiting call; ``False`` when the user stopped (the rest keep waiting).

    ``show`` puts each call on screen first (calls from an earlier run, not seen in this one).
    """
    for request in approvals:
        if show:
            output.event(ApprovalNeeded(request))
        answer = await approver.answer(request)
        if answer is None:
            output.note(f"{request.name} ({request.call_id}) still waits for approval")
            return False
        if answer.verdict == "no":
            await session.deny(request.call_id, note=answer.note)
        else:
            await session.approve(request.call_id, always=answer.verdict == "always")
        _show(output, request, answer)
    return True


def _show(output: Output, request: ApprovalRequest, answer: Answer) -> None:
    if isinstance(output, JsonOutput):
        output.emit(
            "approval_answer",
            call_id=request.call_id,
            name=request.name,
            approved=answer.verdict != "no",
            always=answer.verdict == "always",
            note=answer.note,
        )
        return
    match answer.verdict:
        case "yes":
            said = f"approved {request.name}"
        case "always":
            said = f"approved {request.name} for the rest of the session"
        case "no":
            said = f"denied {request.name}: {answer.note}"
    output.note(f"  {said}" + (f" ({answer.why})" if answer.why else ""))
