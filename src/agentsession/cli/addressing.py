"""Naming a session on the command line: an id or a unique prefix, this folder's newest, a pick.

Wherever a command takes a session id it takes a unique prefix of one too (8 characters are
plenty); an ambiguous prefix is refused with the candidates listed. ``-c`` continues the newest
session *of the current folder* (the folder a session was created in is stored with it), so a
session's tools never run in another folder by accident. ``--resume`` without an id lists the
sessions of this folder first, then the others, and reads the choice from the terminal.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..errors import SessionNotFoundError, UsageError
from ..store.base import SessionInfo, Store

__all__ = ["age", "find_session", "newest_here", "pick_session", "same_folder"]

_LISTED = 8


async def find_session(store: Store, given: str) -> SessionInfo:
    """The session ``given`` names: its whole id, or a prefix that only it starts with."""
    given = given.strip()
    if not given:
        raise UsageError("an empty session id")
    try:
        return await store.get_session(given)
    except SessionNotFoundError:
        pass
    found = [info for info in await store.list_sessions() if info.id.startswith(given)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise SessionNotFoundError(given)
    shown = ", ".join(f"{i.id[:12]} ({i.title or 'untitled'})" for i in found[:_LISTED])
    more = f" and {len(found) - _LISTED} more" if len(found) > _LISTED else ""
    raise UsageError(f"session id prefix {given!r} is ambiguous: {shown}{more}")


def same_folder(info: SessionInfo, folder: Path) -> bool:
    """Whether ``info`` was created for ``folder``."""
    if not info.project_dir:
        return False
    try:
        return Path(info.project_dir).resolve() == folder.resolve()
    except OSError:
        return False


async def newest_here(store: Store, folder: Path) -> SessionInfo:
    """The most recently active session created for ``folder`` (``-c``).

    A session with nothing in its log (a chat left before its first prompt) is passed over
    while one with a conversation is there: ``-c`` means the conversation last had here.
    """
    here = [info for info in await store.list_sessions() if same_folder(info, folder)]
    if here:
        return next((info for info in here if info.next_seq > 0), here[0])
    raise UsageError(
        f"no session to continue in {folder}: none was started here"
        " (see: agentsession sessions; --session ID continues any)"
    )


def age(stamp: str, now: datetime | None = None) -> str:
    """``5m``, ``3h``, ``2d`` ago from an ISO timestamp."""
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for size, unit in ((86_400, "d"), (3_600, "h"), (60, "m")):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


async def pick_session(store: Store, folder: Path, last_lines: dict[str, str]) -> SessionInfo:
    """Ask on the terminal which session to resume; this folder's sessions come first.

    ``last_lines`` maps an id to the last line of its transcript, shown beside it.
    """
    sessions = await store.list_sessions()
    if not sessions:
        raise UsageError("no session to resume: none is stored yet")
    ordered = [i for i in sessions if same_folder(i, folder)]
    ordered += [i for i in sessions if not same_folder(i, folder)]
    ordered = ordered[:20]
    from prompt_toolkit import PromptSession

    for n, info in enumerate(ordered, 1):
        title = info.title or "(untitled)"
        where = "here" if same_folder(info, folder) else (info.project_dir or "?")
        last = " ".join(last_lines.get(info.id, "").split())[:60]
        print(f"{n:>3}  {info.id[:8]}  {age(info.updated_at):>4}  {title[:40]}  [{where}]  {last}")
    prompt: PromptSession[str] = PromptSession()
    while True:
        try:
            typed = (await prompt.prompt_async("resume which? (number or id) › ")).strip()
        except EOFError:
            raise KeyboardInterrupt from None
        if typed.isdigit() and 1 <= int(typed) <= len(ordered):
            return ordered[int(typed) - 1]
        if typed:
            try:
                return await find_session(store, typed)
            except (UsageError, SessionNotFoundError) as exc:
                print(f"  {exc}")
