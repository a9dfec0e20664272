"""The commands of the command line; ``cli`` parses the arguments and turns failures into lines.

Each command is a coroutine taking the ``Invocation`` and returning the exit code. Commands
that talk to a model render through the invocation's ``Output`` (terminal, pipe, JSON, quiet)
and answer the calls the preset asks about through one ``Approver``: ``--yes`` approves, a
terminal asks, and otherwise nobody can be asked and the call is denied. ``run`` answers calls
an earlier run left waiting before its prompt, then sets ``--preset`` (a preset cannot change
while a call waits). The inspection commands (``context``, ``request``, ``report``) are in
``inspecting``, session management and ``skills`` in ``manage``, ``cost`` in ``cost``;
``commandtable`` names the module of every command, loaded when it runs.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from rich.text import Text

from ..codec import encode
from ..engine.inbox import PendingInput
from ..errors import AgentSessionError, UsageError
from ..hygiene import prompt_content, visible_line
from ..runtime import Runtime, SupportsAclose
from ..session import Session
from ..store.base import Store
from .addressing import newest_here, same_folder
from .approvals import APPROVE_ALL, DENY_ALL, Approver, TerminalAsker
from .chat import Chat, Driver
from .chatview import compaction_marks, outcome_marks
from .console import JsonOutput, QuietOutput, RichOutput, print_transcript
from .invocation import (
    Invocation,
    history_path,
    message_counts,
)
from .screens import print_sessions

__all__ = ["chat_command", "prompt_text", "retry", "run", "sessions", "show"]


def prompt_text(words: list[str]) -> str:
    """The prompt, the way ``llm`` reads it.

    ``-`` alone (or no words with a pipe): standard input is the prompt. Words and a pipe (or
    words and ``-``): the words, a blank line, then standard input. Words alone: the words.
    Standard input's trailing line ends are dropped, as a shell's ``$(...)`` drops them: a file's
    final newline is how files end, not part of the prompt.
    """
    dash = "-" in words
    words = [w for w in words if w != "-"]
    piped = dash or not sys.stdin.isatty()
    if not words and not piped:
        raise UsageError("no prompt: give it as arguments, or '-' (or a pipe) for standard input")
    text = " ".join(words)
    if piped:
        given = sys.stdin.read().rstrip("\r\n")
        text = f"{text}\n\n{given}" if text and given.strip() else text or given
    if not text.strip():
        raise UsageError("the prompt is empty")
    prompt_content(text)  # refused here, before a session is made for it
    return text


def _announce(inv: Invocation, session: Session) -> None:
    output = inv.output
    if isinstance(output, JsonOutput):
        output.emit("session", id=session.id, model=session.model.name)
    else:
        output.note(f"session {session.id}")


def _approver(inv: Invocation) -> Approver:
    """Who answers calls the preset asks about: ``--yes``, the terminal, or nobody (denied)."""
    if inv.args.yes:
        return APPROVE_ALL
    output = inv.output
    if sys.stdin.isatty() and sys.stdout.isatty() and not isinstance(output, JsonOutput):
        return TerminalAsker(detailed=isinstance(output, QuietOutput))
    return DENY_ALL


async def _session(inv: Invocation, store: Store) -> tuple[Runtime, Session]:
    """The session to talk to: continued (``--session``/``-c``) or new, with its runtime."""
    args = inv.args
    session_id = await inv.session_id(store, args.session)
    session: Session | None = None
    if session_id is None:
        system = args.system if args.system is not None else inv.choice.config.system
        runtime = inv.new_runtime(store, system)
    else:
        runtime, session = await inv.open(store, session_id, read_only=False, system=args.system)
    try:
        _check_skills(runtime, args.skill)
        if session is not None:
            return runtime, session
        session = await runtime.create_session()
        preset = inv.choice.config.preset
        if args.preset is None and preset is not None:  # the file's default for a new session
            session.set_permission_preset(preset)
        return runtime, session
    except BaseException:
        await runtime.close()
        raise


def _check_skills(runtime: Runtime, names: list[str]) -> None:
    """Refuse an unknown ``--skill`` before a session is made for it."""
    available = runtime.skill_set().names()
    unknown = [name for name in names if name not in available]
    if unknown:
        offered = ", ".join(available) or "none (see: agentsession skills)"
        raise UsageError(f"unknown skill {unknown[0]!r}; available skills: {offered}")


def _driver(inv: Invocation, runtime: Runtime, session: Session) -> Driver:
    return Driver(session, inv.output, runtime.store, _approver(inv), runtime.config.max_steps)


async def _close(runtime: Runtime | None, store: Store) -> None:
    """Close the runtime (its store and model client), or the store when there is none yet."""
    if runtime is not None:
        await runtime.close()
    else:
        await store.close()


async def run(inv: Invocation) -> int:
    """``run``: one prompt, in a new or a continued session (waiting calls answered first)."""
    text = prompt_text(inv.args.text)
    inv.check_agent_options()
    store = inv.store("create")
    runtime: Runtime | None = None
    try:
        runtime, session = await _session(inv, store)
        _announce(inv, session)
        driver = _driver(inv, runtime, session)
        if not await driver.settle_waiting():
            return _left_waiting(inv, session)
        if inv.args.preset is not None:
            session.set_permission_preset(inv.args.preset)
        try:
            result = await driver.prompt(text, inv.args.skill)
        except AgentSessionError:
            if not await session.log():  # a new session its refused prompt left empty
                await runtime.delete_session(session.id)
            raise
        if result is None:
            return 1
        if result.stop_reason == "approval_required":
            return _left_waiting(inv, session)
        # The title call a first turn starts is billed: wait for it (within title_timeout) so
        # it is recorded, rather than cancel it on the way out with its cost unrecorded.
        await session.named()
        return 0
    finally:
        await _close(runtime, store)


def _left_waiting(inv: Invocation, session: Session) -> int:
    """The user stopped answering: the call waits, stored, for the next run."""
    inv.output.note(f"answer it later with: agentsession chat --session {session.id}")
    return 130


async def chat_command(inv: Invocation) -> int:
    """``chat``: prompts until the user leaves."""
    inv.check_agent_options()
    store = inv.store("create")
    runtime: Runtime | None = None
    chat: Chat | None = None
    try:
        runtime, session = await _session(inv, store)
        if isinstance(inv.output, JsonOutput):
            _announce(inv, session)
        driver = _driver(inv, runtime, session)
        chat = Chat(
            driver,
            inv.resolve,
            inv.args.skill,
            inv.args.preset,
            explain=inv.explain,
            new_session=runtime.create_session,
            folder=Path.cwd(),
        )
        await chat.run(history=history_path())
        args = inv.args
        continued = args.session or getattr(args, "resume", None) is not None or args.continue_
        if not continued and not await session.log():
            # Left before a first prompt: no empty session stays behind for ``-c`` to find.
            await runtime.delete_session(session.id)
        # Read from a pipe, a failed turn is the caller's to know (a terminal user saw it).
        return 1 if chat.failures and not sys.stdin.isatty() else 0
    finally:
        await _close(runtime, store)
        for model in chat.opened if chat is not None else ():
            if isinstance(model, SupportsAclose):
                await model.aclose()


async def retry(inv: Invocation) -> int:
    """``retry``: finish the turn that did not finish (re-send the failed step)."""
    inv.check_agent_options()
    store = inv.store("write")
    runtime: Runtime | None = None
    try:
        session_id = inv.args.id or await _latest(store)
        runtime, session = await inv.open(
            store, session_id, read_only=False, system=inv.args.system
        )
        _announce(inv, session)
        driver = _driver(inv, runtime, session)
        if session.pending_approvals():
            # The turn stopped for approval, not for a failure: answering finishes it.
            return 0 if await driver.settle_waiting() else _left_waiting(inv, session)
        if inv.args.preset is not None:
            session.set_permission_preset(inv.args.preset)
        result = await driver.retry()
        if result is not None and result.stop_reason == "approval_required":
            return _left_waiting(inv, session)
        return 0 if result is not None else 1
    finally:
        await _close(runtime, store)


async def _latest(store: Store) -> str:
    """The session ``retry`` finishes by default: the newest of this folder, like ``-c``."""
    sessions = await store.list_sessions()
    if not sessions:
        raise UsageError("no session to retry: none is stored yet")
    return (await newest_here(store, Path.cwd())).id


async def sessions(inv: Invocation) -> int:
    """``sessions``: each session's messages, model and last activity (``--here``, ``-n N``)."""
    if not inv.postgres and not inv.db.exists():
        inv.output.note(f"no sessions yet (no database at {inv.db})")
        return 0
    store = inv.store("read")
    try:
        rows = []
        infos = await store.list_sessions()
        if inv.args.here:
            here = Path.cwd()
            infos = [info for info in infos if same_folder(info, here)]
        for info in infos[: inv.args.limit]:
            user, assistant, tool, model = await message_counts(store, info.id)
            rows.append((info, user, assistant, tool, model))
        if isinstance(inv.output, JsonOutput):
            for info, user, assistant, tool, model in rows:
                messages = {"user": user, "assistant": assistant, "tool": tool}
                inv.output.emit("session", **encode(info), messages=messages, model=model)
        else:
            print_sessions(rows, rich=isinstance(inv.output, RichOutput))
        return 0
    finally:
        await store.close()


async def show(inv: Invocation) -> int:
    """``show``: a session's user transcript, each turn that got no answer marked."""
    from ..inspection.views import turn_marks  # the marks need no request rebuilt

    store = inv.store("read")
    try:
        _, session = await inv.open(store, inv.args.id, read_only=True)
        messages = list(session.messages)
        try:
            outcomes, compacted = turn_marks(await session.log())
        except AgentSessionError:  # the transcript is shown all the same, unmarked
            outcomes, compacted = [], {}
        marks = outcome_marks(messages, outcomes)
        for index, line in compaction_marks(messages, compacted).items():
            marks[index] = f"{marks[index]}\n{line}" if index in marks else line
        if isinstance(inv.output, JsonOutput):
            inv.output.emit("session", id=session.id, title=session.title)
            for index, message in enumerate(messages):
                inv.output.emit("message", **encode(message))
                if index in marks:
                    inv.output.emit("turn_mark", text=marks[index])
        elif isinstance(inv.output, RichOutput):
            if session.title:
                inv.output.console.print(Text(f"# {visible_line(session.title)}", style="bold"))
            inv.output.transcript(messages, marks)
        else:
            if session.title:
                print(f"# {visible_line(session.title)}")
            print_transcript(messages, marks=marks)
        _show_pending(inv, session.pending_input())
        return 0
    finally:
        await store.close()


def _show_pending(inv: Invocation, pending: list[PendingInput]) -> None:
    """The inputs ``steer``/``queue`` accepted that wait for delivery, after the transcript."""
    if isinstance(inv.output, JsonOutput):
        for item in pending:
            inv.output.emit("pending_input", **dataclasses.asdict(item))
        return
    if isinstance(inv.output, QuietOutput):
        return
    for item in pending:
        when = "at the next step" if item.mode == "steer" else "as the next prompt"
        print(f"[waiting: {item.mode} {item.id[:8]}, {when}] {visible_line(item.text)}")
