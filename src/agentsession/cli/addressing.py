"""Naming a session on the command line: an id or a unique prefix, this folder's newest, a pick.

Wherever a command takes a session id it takes a unique prefix of one too (8 characters are
plenty); an ambiguous prefix is refused with the candidates listed. ``-c`` continues the newest
session *of the current folder* (the folder a session was created in is stored with it), so a
session's tools never run in another folder by accident. ``--resume`` without an id lists the
sessions of this folder first, then the others, each with its title, age, date and last line;
the arrow keys move the choice, typing filters the list (every word typed must appear in the
row: id, title, folder or last line, in any case), Enter takes the chosen one and Escape or
Ctrl-C gives up.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import SessionNotFoundError, UsageError
from ..hygiene import visible_line
from ..store.base import SessionInfo, Store

__all__ = [
    "age",
    "choose_session",
    "find_session",
    "matching",
    "newest_here",
    "pick_session",
    "same_folder",
]

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
    shown = ", ".join(
        f"{i.id[:12]} ({visible_line(i.title or 'untitled')})" for i in found[:_LISTED]
    )
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


def _row(info: SessionInfo, folder: Path, last_lines: dict[str, str]) -> str:
    title = visible_line(info.title or "(untitled)")
    where = "here" if same_folder(info, folder) else (info.project_dir or "?")
    date = info.updated_at[:16].replace("T", " ")
    last = " ".join(last_lines.get(info.id, "").split())[:60]
    return f"{info.id[:8]}  {age(info.updated_at):>4}  {date}  {title[:40]}  [{where}]  {last}"


def matching(rows: list[tuple[SessionInfo, str]], typed: str) -> list[tuple[SessionInfo, str]]:
    """The rows holding every word of ``typed`` (any case; the full id counts), in order."""
    words = typed.lower().split()
    return [
        (info, row)
        for info, row in rows
        if all(w in row.lower() or info.id.lower().startswith(w) for w in words)
    ]


#: The most rows the picker shows at once (it scrolls to keep the choice in view).
_SHOWN = 15


async def choose_session(
    rows: list[tuple[SessionInfo, str]], *, input: Any = None, output: Any = None
) -> SessionInfo | None:
    """Let the terminal's user choose among ``rows`` (session, its line): arrows, filter, Enter.

    ``None`` when they give up (Escape, Ctrl-C, Ctrl-D). ``input``/``output``: prompt_toolkit's,
    for tests.
    """
    from prompt_toolkit.application import Application
    from prompt_toolkit.buffer import Buffer
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
    from prompt_toolkit.layout import HSplit, Layout, VSplit, Window
    from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl

    state = {"at": 0}
    typed = Buffer(multiline=False)

    def shown() -> list[tuple[SessionInfo, str]]:
        return matching(rows, typed.text)

    def moved(_: Buffer) -> None:
        state["at"] = 0

    typed.on_text_changed += moved

    def lines() -> StyleAndTextTuples:
        found = shown()
        if not found:
            return [("", "   no session matches\n")]
        at = min(state["at"], len(found) - 1)
        first = max(0, min(at - _SHOWN // 2, len(found) - _SHOWN))
        out: StyleAndTextTuples = []
        for n in range(first, min(first + _SHOWN, len(found))):
            mark, style = ("›", "reverse") if n == at else (" ", "")
            out.append((style, f" {mark} {found[n][1]}\n"))
        out.append(("", f"   {len(found)} of {len(rows)} · ↑↓ choose · type to filter · Enter\n"))
        return out

    keys = KeyBindings()

    @keys.add("up")
    def _up(event: KeyPressEvent) -> None:
        state["at"] = max(0, min(state["at"], len(shown()) - 1) - 1)

    @keys.add("down")
    def _down(event: KeyPressEvent) -> None:
        state["at"] = max(0, min(state["at"] + 1, len(shown()) - 1))

    @keys.add("enter")
    def _take(event: KeyPressEvent) -> None:
        found = shown()
        if found:
            event.app.exit(result=found[min(state["at"], len(found) - 1)][0])

    @keys.add("escape", eager=True)
    @keys.add("c-c")
    @keys.add("c-d")
    def _quit(event: KeyPressEvent) -> None:
        event.app.exit(result=None)

    layout = Layout(
        HSplit(
            [
                VSplit(
                    [
                        Window(
                            FormattedTextControl("resume which? filter › "),
                            dont_extend_width=True,
                        ),
                        Window(BufferControl(typed), height=1),
                    ]
                ),
                Window(FormattedTextControl(lines), dont_extend_height=True),
            ]
        )
    )
    app: Application[SessionInfo | None] = Application(
        layout=layout, key_bindings=keys, input=input, output=output, erase_when_done=True
    )
    return await app.run_async()


async def pick_session(store: Store, folder: Path, last_lines: dict[str, str]) -> SessionInfo:
    """Ask on the terminal which session to resume; this folder's sessions come first.

    ``last_lines`` maps an id to the last line of its transcript, shown beside it.
    """
    sessions = await store.list_sessions()
    if not sessions:
        raise UsageError("no session to resume: none is stored yet")
    ordered = [i for i in sessions if same_folder(i, folder)]
    ordered += [i for i in sessions if not same_folder(i, folder)]
    chosen = await choose_session([(info, _row(info, folder, last_lines)) for info in ordered])
    if chosen is None:
        raise KeyboardInterrupt
    return chosen
