"""The commands of the command line; ``cli`` parses the arguments and turns failures into lines.

Each command is a coroutine taking the ``Invocation`` and returning the exit code. Commands
that talk to a model render through the invocation's ``Output`` (terminal, pipe, JSON, quiet)
and answer the calls the preset asks about through one ``Approver``: ``--yes`` approves, a
terminal asks, and otherwise nobody can be asked and the call is denied. ``run`` answers calls
an earlier run left waiting before its prompt, then sets ``--preset`` (a preset cannot change
while a call waits). The inspection commands print what ``session.inspect()`` returns: the
annotated next request (``context``), the exact wire JSON of a request (``request``) and the
HTML report (``report``). Session management and ``skills`` are in ``manage``.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text

from .._files import write_private
from ..codec import encode
from ..engine.imports import valid_session_id
from ..errors import AgentSessionError, UsageError
from ..hygiene import prompt_content, visible_json, visible_line
from ..inspection.report import IndexEntry, render_index, render_report
from ..inspection.views import Inspection, past_context
from ..providers import lower
from ..providers.base import Model, ModelProfile
from ..providers.profiles import FORMATS, default_profile
from ..request import Request
from ..runtime import Runtime, SupportsAclose
from ..session import Session
from ..store.base import Store
from .addressing import newest_here
from .approvals import APPROVE_ALL, DENY_ALL, Approver, TerminalAsker
from .chat import Chat, Driver
from .chatview import outcome_marks
from .console import JsonOutput, QuietOutput, RichOutput, print_transcript
from .cost import COST_COMMANDS
from .invocation import (
    Invocation,
    history_path,
    message_counts,
    version,
)
from .manage import MANAGEMENT
from .overview import info, models
from .screens import print_context, print_sessions
from .serve import serve

__all__ = ["COMMANDS", "prompt_text"]


def prompt_text(words: list[str]) -> str:
    """The prompt, the way ``llm`` reads it.

    ``-`` alone (or no words with a pipe): standard input is the prompt. Words and a pipe (or
    words and ``-``): the words, a blank line, then standard input. Words alone: the words.
    """
    dash = "-" in words
    words = [w for w in words if w != "-"]
    piped = dash or not sys.stdin.isatty()
    if not words and not piped:
        raise UsageError("no prompt: give it as arguments, or '-' (or a pipe) for standard input")
    text = " ".join(words)
    if piped:
        given = sys.stdin.read()
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
    """``sessions``: every session with its messages, model and last activity."""
    if not inv.postgres and not inv.db.exists():
        inv.output.note(f"no sessions yet (no database at {inv.db})")
        return 0
    store = inv.store("read")
    try:
        rows = []
        for info in await store.list_sessions():
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
    store = inv.store("read")
    try:
        _, session = await inv.open(store, inv.args.id, read_only=True)
        messages = list(session.messages)
        try:
            outcomes = [turn.outcome for turn in (await session.inspect()).turns]
        except AgentSessionError:  # the transcript is shown all the same, unmarked
            outcomes = []
        marks = outcome_marks(messages, outcomes)
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
        return 0
    finally:
        await store.close()


async def _inspected(inv: Invocation, session_id: str) -> tuple[Runtime, Session, Inspection]:
    store = inv.store("read")
    runtime: Runtime | None = None
    try:
        runtime, session = await inv.open(store, session_id, read_only=True)
        return runtime, session, await session.inspect()
    except BaseException:
        await _close(runtime, store)
        raise


async def context(inv: Invocation) -> int:
    """``context``: the next request (or ``--step N``) annotated part by part."""
    runtime, session, inspection = await _inspected(inv, inv.args.id)
    try:
        step = inv.args.step
        if step is not None:
            records = await session.log()
            view = past_context(inspection, step, records, runtime.token_counter)
            heading = f"Request {step} of session {session.id}, rebuilt from the log"
        elif inspection.next_request is None:
            raise UsageError(f"cannot preview the next request: {inspection.next_error}")
        else:
            view = inspection.next_request
            heading = f"The next request of session {session.id} (nothing is admitted)"
        if isinstance(inv.output, JsonOutput):
            inv.output.emit("context", **encode(view))
        else:
            rich = isinstance(inv.output, RichOutput)
            print_context(view, heading, full=inv.args.full, rich=rich)
        return 0
    finally:
        await runtime.close()


async def request(inv: Invocation) -> int:
    """``request``: the exact JSON a request is sent as, in one wire format."""
    runtime, session, inspection = await _inspected(inv, inv.args.id)
    try:
        step = inv.args.step
        if step is not None:
            if not 1 <= step <= len(inspection.requests):
                raise UsageError(
                    f"there is no dispatched request {step}: the session has"
                    f" {len(inspection.requests)}"
                )
            found = inspection.requests[step - 1]
            if not found.exact:
                raise UsageError(
                    f"request {step} cannot be rebuilt byte for byte here: {found.mismatch}"
                )
            neutral, model_name = found.request, found.model
        elif inspection.next_request is None:
            raise UsageError(f"cannot preview the next request: {inspection.next_error}")
        else:
            neutral, model_name = inspection.next_request.request, session.model.name
        chosen, body = _wire(inv, neutral, inv.args.format, model_name)
        if isinstance(inv.output, JsonOutput):  # one object per line, like every --json output
            inv.output.emit("request", format=chosen, step=step, body=body)
        else:
            print(visible_json(json.dumps(body, indent=2, ensure_ascii=False)))
        return 0
    finally:
        await runtime.close()


def _wire(
    inv: Invocation, request: Request, fmt: str | None, model_name: str
) -> tuple[str, object]:
    """The wire format chosen and ``request`` in it (``neutral``: the package's own form)."""
    profile: ModelProfile | None = None
    model: Model | None = None
    try:
        model = inv.resolve(model_name)
        profile = model.profile
    except UsageError:
        profile = None  # a model the command line cannot call: the format's own profile
    chosen = fmt or (profile.wire_format if profile and profile.wire_format in FORMATS else None)
    if chosen is None:
        raise UsageError(
            f"model {model_name!r} has no wire format of its own: pick one with --format"
            f" ({', '.join((*FORMATS, 'neutral'))})"
        )
    if chosen == "neutral":
        return chosen, {k: v for k, v in encode(request).items() if k != "sources"}
    if profile is None or profile.wire_format != chosen:
        return chosen, lower(request, chosen, profile=default_profile(chosen))
    name = getattr(model, "model", None) or model_name.partition(":")[2].rpartition("#")[2]
    return chosen, lower(request, chosen, profile=profile, model=name)


async def report(inv: Invocation) -> int:
    """``report``: the HTML report of one session, or ``--all`` with an index page."""
    args = inv.args
    if args.all == bool(args.id):
        raise UsageError("give a session id, or --all for every session")
    stamp = datetime.now(UTC).isoformat()
    if args.id:
        runtime, _, inspection = await _inspected(inv, args.id)
        await runtime.close()
        stem = report_name(inspection.session_id).removesuffix(".html")[:12]
        target = Path(args.output or f"agentsession-{stem}.html")
        _write(target, render_report(inspection, generated=stamp, version=version()))
        _wrote(inv, f"wrote {target}", [target])
        return 0
    folder = Path(args.output or "agentsession-reports")
    store = inv.store("read")
    try:
        entries = []
        for found in await store.list_sessions():
            # Runtimes made for reading share the store and never open a model client.
            _, session = await inv.open(store, found.id, read_only=True)
            inspection = await session.inspect()
            name = report_name(found.id)
            _write(folder / name, render_report(inspection, generated=stamp, version=version()))
            entries.append(IndexEntry.of(inspection, name))
        _write(folder / "index.html", render_index(entries, generated=stamp, version=version()))
        paths = [folder / "index.html", *(folder / e.href for e in entries)]
        _wrote(inv, f"wrote {folder / 'index.html'} and {len(entries)} session reports", paths)
        return 0
    finally:
        await store.close()


def report_name(session_id: str) -> str:
    """The file name of a session's report in ``report --all``: always inside its folder.

    An id the package could have created names its file; any other (a store written by an
    older version, a hostile import) is named by its digest, never by ``../`` or ``/``.
    """
    if valid_session_id(session_id):
        return f"{session_id}.html"
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"session-{digest[:24]}.html"


def _wrote(inv: Invocation, text: str, paths: list[Path]) -> None:
    """Say what a command wrote: a note, or with ``--json`` a ``wrote`` object."""
    if isinstance(inv.output, JsonOutput):
        inv.output.emit("wrote", paths=[str(p) for p in paths])
    else:
        inv.output.note(text)


def _write(path: Path, text: str) -> None:
    try:
        write_private(path, text.encode("utf-8"))  # a report holds the whole transcript
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc


COMMANDS: dict[str, Callable[[Invocation], Awaitable[int]]] = {
    "run": run,
    "chat": chat_command,
    "retry": retry,
    "sessions": sessions,
    "show": show,
    "context": context,
    "request": request,
    "report": report,
    "models": models,
    "info": info,
    **MANAGEMENT,
    **COST_COMMANDS,
    "serve": serve,
}
