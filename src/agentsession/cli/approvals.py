"""Answering, on the command line, the tool calls a permission preset asks about.

A turn that reaches such a call pauses (``stop_reason == "approval_required"``); the command
line answers every waiting call through one ``Approver`` and then resumes the turn:

- ``TerminalAsker`` asks in the terminal: ``y`` approves the call, ``a`` approves the tool for
  the rest of the session — for ``run_command`` only the commands that start with a prefix,
  shown and editable (``git status`` for ``git status --short``), for the rest of this run —
  ``n`` or Enter denies it, and any other text denies it with that
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
from dataclasses import dataclass, field
from typing import Literal, Protocol

from .._frozen import frozen
from ..events import ApprovalNeeded, ApprovalRequest
from ..hygiene import visible
from ..inspection.toolview import command_prefix
from ..session import Session
from .output import JsonOutput, Output, short

__all__ = [
    "APPROVE_ALL",
    "DENY_ALL",
    "NO_TERMINAL",
    "Answer",
    "Approver",
    "CommandRules",
    "Fixed",
    "TerminalAsker",
    "parse_answer",
    "settle",
]

NO_TERMINAL = "nobody could be asked for approval: the command line had no terminal"
QUESTION = "allow? [y]es · [n]o (or type why not) · [a]lways for this session › "


@frozen
class Answer:
    """One decision: ``yes``, ``always`` (this tool for the session) or ``no`` with a note.

    ``prefix``: for ``run_command``, "always" approves only the commands that start with it.
    """

    verdict: Literal["yes", "always", "no"]
    note: str = ""
    why: str = ""  # for the user only: how the decision came about
    prefix: str = ""


@dataclass
class CommandRules:
    """The command prefixes "always" approved in this run: never every command."""

    prefixes: list[str] = field(default_factory=list)

    def match(self, request: ApprovalRequest) -> str | None:
        """The prefix that approves ``request`` (a ``run_command`` call), if any."""
        command = request.arguments.get("command")
        if request.name != "run_command" or not isinstance(command, str):
            return None
        if request.arguments.get("write_protected") is True:
            return None  # protected paths writable: only an answer to this very call
        words = command.split()
        for prefix in self.prefixes:
            wanted = prefix.split()
            # Whole words only, and one plain command: "git status" never approves
            # "git status; rm -rf ~".
            plain = not any(mark in command for mark in (";", "&", "|", "`", "$(", ">", "<", "\n"))
            if wanted and words[: len(wanted)] == wanted and plain:
                return prefix
        return None


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
            answer = parse_answer(typed)
            command = request.arguments.get("command")
            if answer.verdict == "always" and request.name == "run_command":
                default = command_prefix(command) if isinstance(command, str) else ""
                prefix = await prompt.prompt_async(
                    "always allow commands starting with (edit; empty: just this once) › ",
                    default=default,
                )
                answer = (
                    Answer("always", prefix=prefix.strip()) if prefix.strip() else Answer("yes")
                )
        except (KeyboardInterrupt, EOFError):
            return None
        return answer


async def settle(
    session: Session,
    approvals: Sequence[ApprovalRequest],
    approver: Approver,
    output: Output,
    *,
    show: bool = False,
    rules: CommandRules | None = None,
) -> bool:
    """Answer each waiting call; ``False`` when the user stopped (the rest keep waiting).

    ``show`` puts each call on screen first (calls from an earlier run, not seen in this one).
    A ``run_command`` call that a prefix of ``rules`` covers is approved without asking; an
    "always" for ``run_command`` adds a prefix to ``rules`` and approves this call only.
    """
    rules = rules if rules is not None else CommandRules()
    for request in approvals:
        if show:
            output.event(ApprovalNeeded(request))
        matched = rules.match(request)
        answer = (
            Answer("yes", why=f"it starts with {matched!r}, approved always")
            if matched is not None
            else await approver.answer(request)
        )
        if answer is None:
            output.note(f"{request.name} ({request.call_id}) still waits for approval")
            return False
        if answer.verdict == "always" and request.name == "run_command":
            command = request.arguments.get("command")
            prefix = answer.prefix or (command_prefix(command) if isinstance(command, str) else "")
            answer = Answer("always", answer.note, answer.why, prefix)
            if prefix:
                rules.prefixes.append(prefix)
            await session.approve(request.call_id)
        elif answer.verdict == "no":
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
            prefix=answer.prefix or None,
        )
        return
    match answer.verdict:
        case "yes":
            said = f"approved {request.name}"
        case "always" if answer.prefix:
            said = f"approved {request.name}; commands starting with {answer.prefix!r} from now on"
        case "always":
            said = f"approved {request.name} for the rest of the session"
        case "no":
            said = f"denied {request.name}: {answer.note}"
    output.note(f"  {said}" + (f" ({answer.why})" if answer.why else ""))
