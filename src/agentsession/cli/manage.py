"""The commands that manage stored sessions, and the skills listing.

``export ID [-o FILE]`` writes the session file (standard output without ``-o``); ``import
FILE`` (``-``: standard input) stores it and prints the id, ``--copy`` under a new one;
``delete``, ``rename`` and ``fork [--at SEQ]`` change the store; ``skills`` lists what
``discover_skills`` finds for a project, every diagnostic on a line of its own. Export opens
the database read-only. Nothing here needs a model: the sessions are opened without one.
A new id (``import``, ``fork``) is printed alone on standard output, so a script can take it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..codec import encode
from ..engine.imports import admit_import
from ..engine.leases import delete_undriven
from ..errors import ConflictError, SessionFileError, UsageError
from ..hygiene import visible_line
from ..runtime import Runtime
from ..session import Session
from ..skills import SkillSet, discover_skills
from ..store.base import DEFAULT_LEASE_TTL, SessionInfo
from ..store.session_file import parse_session_file
from .addressing import find_session
from .console import JsonOutput, RichOutput
from .invocation import Invocation, shown_location
from .output import refuse_missing_folder
from .screens import print_skills
from .trust import trust_command

__all__ = ["MANAGEMENT", "emit_id", "import_file"]


def _said(inv: Invocation, kind: str, text: str, **fields: object) -> None:
    """A command's outcome: a JSON object, or a note on standard error."""
    if isinstance(inv.output, JsonOutput):
        inv.output.emit(kind, **fields)
    else:
        inv.output.note(text)


async def export(inv: Invocation) -> int:
    """``export``: the session as a JSON Lines session file."""
    store = inv.store("read")
    runtime: Runtime | None = None
    try:
        info = await find_session(store, inv.args.id)
        runtime = inv.plain_runtime(store, info.project_dir)
        session = await runtime.open_session(info.id)
        target = inv.args.output
        if target and target != "-":
            refuse_missing_folder(target)
            count = await session.export(target)
            _said(inv, "exported", f"wrote {count} entries to {target}", entries=count, path=target)
            return 0
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "session.jsonl")
            await session.export(path)
            _copy_out(path)
        return 0
    finally:
        await (runtime.close() if runtime is not None else store.close())


def _copy_out(path: Path) -> None:
    with path.open("rb") as data:
        shutil.copyfileobj(data, sys.stdout.buffer)
    sys.stdout.buffer.flush()


def _source(name: str, folder: str) -> Path:
    """The file to import: ``name``, or standard input copied into ``folder`` for ``-``."""
    if name == "-":
        path = Path(folder, "stdin.jsonl")
        path.write_bytes(sys.stdin.buffer.read())
        return path
    if not Path(name).is_file():
        raise UsageError(f"no session file at {name}")
    return Path(name)


async def import_(inv: Invocation) -> int:
    """``import``: store the session of a session file; print its id."""
    session_id = await import_file(inv)
    emit_id(inv, session_id, f"imported session {session_id} from {inv.args.file}")
    return 0


async def import_file(inv: Invocation) -> str:
    """Store the session of the session file ``inv.args.file`` names; its id."""
    source = inv.args.file
    with tempfile.TemporaryDirectory() as folder:
        path = _source(source, folder)
        new_id = uuid.uuid4().hex if inv.args.copy else None
        try:
            # Refused before the store is opened: a refused file creates no database either.
            _check_import(inv, path, new_id)
            store = inv.store("create")
            runtime = inv.plain_runtime(store, None)
            try:
                session = await runtime.import_session(path, new_id=new_id)
            finally:
                await runtime.close()
        except ConflictError as exc:
            if new_id is not None or exc.expected_seq is not None:
                raise
            hint = f"{exc} in this store (`import --copy` imports it under a new id)"
            raise ConflictError(hint, session_id=exc.session_id) from exc
        except SessionFileError as exc:
            if source != "-":
                raise
            # The copy is ours: name what the user gave.
            said = str(exc).replace(str(path), "standard input")
            raise SessionFileError(said) from exc
    return session.id


def _check_import(inv: Invocation, path: Path, new_id: str | None) -> None:
    config = inv.config()
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SessionFileError(f"cannot read session file: {exc}", path=str(path)) from exc
    parsed = parse_session_file(data, path=str(path), max_line_bytes=config.max_import_line_bytes)
    if new_id is None:
        admit_import(parsed, config.permission_preset, path=str(path))


def emit_id(inv: Invocation, session_id: str, text: str) -> None:
    """A new id: alone on standard output (``text`` on standard error), or a JSON object."""
    if isinstance(inv.output, JsonOutput):
        inv.output.emit("session", id=session_id)
        return
    inv.output.note(text)
    print(visible_line(session_id))


async def delete(inv: Invocation) -> int:
    """``delete``: a session and its whole log; a terminal asks first (``-y`` does not)."""
    store = inv.store("write")
    try:
        info = await find_session(store, inv.args.id)
        if not inv.args.yes and _terminal(inv) and not await _confirmed(info):
            inv.output.note("not deleted")
            return 1
        await delete_undriven(store, info.id, DEFAULT_LEASE_TTL)
    finally:
        await store.close()
    _said(inv, "deleted", f"deleted session {info.id}", id=info.id)
    return 0


def _terminal(inv: Invocation) -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty() and not isinstance(inv.output, JsonOutput)


async def _confirmed(info: SessionInfo) -> bool:
    from prompt_toolkit import PromptSession

    title = visible_line(info.title or "untitled")
    asked = f"delete session {info.id[:12]} ({title}, {info.message_count} messages)? [y/N] "
    try:
        typed = await PromptSession[str]().prompt_async(asked)
    except (KeyboardInterrupt, EOFError):
        return False
    return typed.strip().lower() in ("y", "yes")


async def rename(inv: Invocation) -> int:
    """``rename``: a title of the user's own."""

    async def work(session: Session) -> None:
        await session.rename(" ".join(inv.args.title))
        said = f"session {session.id} is now titled {session.title!r}"
        _said(inv, "renamed", said, id=session.id, title=session.title)

    await _with_session(inv, work)
    return 0


async def fork(inv: Invocation) -> int:
    """``fork``: a new session whose log copies this one's up to ``--at`` (default: all)."""

    async def work(session: Session) -> None:
        forked = await session.fork(inv.args.at)
        upto = "all of it" if inv.args.at is None else f"up to entry {inv.args.at}"
        emit_id(inv, forked.id, f"forked session {session.id} ({upto}) as {forked.id}")

    await _with_session(inv, work)
    return 0


async def _with_session(inv: Invocation, work: Callable[[Session], Awaitable[None]]) -> None:
    store = inv.store("write")
    runtime: Runtime | None = None
    try:
        info = await find_session(store, inv.args.id)
        runtime = inv.plain_runtime(store, info.project_dir)
        await work(await runtime.open_session(info.id))
    finally:
        await (runtime.close() if runtime is not None else store.close())


async def skills(inv: Invocation) -> int:
    """``skills``: the catalog a session in the project gets, and every diagnostic."""
    found = _discovered(inv.args.project, inv.args.skills_dir)
    if isinstance(inv.output, JsonOutput):
        for skill in found.skills:
            inv.output.emit(
                "skill",
                name=skill.name,
                description=skill.description,
                location=skill.location,
            )
        for diagnostic in found.diagnostics:
            fields = {k: v for k, v in encode(diagnostic).items() if k != "kind"}
            inv.output.emit("skill_diagnostic", **fields)
        return 0
    print_skills(found, rich=isinstance(inv.output, RichOutput))
    return 0


def _discovered(project_dir: str | None, skills_dirs: list[str]) -> SkillSet:
    project = Path(project_dir or ".").expanduser()
    if not project.is_dir():
        raise UsageError(f"no project folder at {project}")
    for folder in skills_dirs:
        if not Path(folder).expanduser().is_dir():
            raise UsageError(f"no skills folder at {folder}")
    return discover_skills([Path(d).expanduser() for d in skills_dirs], project.absolute())


async def upgrade(inv: Invocation) -> int:
    """``upgrade``: migrate the database now, so reading commands open it again after an upgrade.

    A read-only open never migrates (it may be someone else's file, or on a read-only disk);
    opening for writing does, which this command does and nothing more.
    """
    store = inv.store("write")
    try:
        count = len(await store.list_sessions())
    finally:
        await store.close()
    where = shown_location(inv.location)
    _said(inv, "upgraded", f"{where} is up to date ({count} sessions)", sessions=count)
    return 0


async def trust(inv: Invocation) -> int:
    """``trust [DIR]`` / ``trust --revoke [DIR]``: the folder's project configuration."""
    return trust_command(inv.args)


MANAGEMENT: dict[str, Callable[[Invocation], Awaitable[int]]] = {
    "export": export,
    "import": import_,
    "delete": delete,
    "rename": rename,
    "fork": fork,
    "skills": skills,
    "trust": trust,
    "upgrade": upgrade,
}
