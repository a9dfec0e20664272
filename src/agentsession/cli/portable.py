"""The commands that carry sessions across tools and time: ``import``, ``export``, ``search``.

``import PATH [--from FORMAT]`` stores a session file of ours or another tool's session
(``--latest TOOL``: that tool's newest session of this folder, from its default location) and
prints the new id; ``-c`` then chats on in it. ``export ID --format jsonl | markdown | html``
writes the session file or a readable transcript. ``search TEXT [-n N] [--session ID]`` finds
messages of every session, newest first (``fork ID --at SEQ`` branches from a hit). The
arguments are declared here without importing what runs them.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .invocation import Invocation

__all__ = ["add_portable_commands", "export", "import_", "search"]

_SOURCES = ("agentsession", "claude-code", "codex", "opencode", "pi")
_TOOLS = ("claude-code", "codex", "opencode", "pi")


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def add_portable_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """Declare ``export``, ``import`` and ``search`` with ``command`` (the parser's helper)."""
    export_ = command("export", "write a session: its session file, or a readable transcript")
    export_.add_argument("id", metavar="ID", help="the session")
    export_.add_argument(
        "--format",
        choices=("jsonl", "markdown", "html"),
        default="jsonl",
        help="jsonl: the session file (default); markdown or html: the transcript to read",
    )
    export_.add_argument(
        "-o", "--output", metavar="FILE", help="the file to write (default: standard output)"
    )
    imported = command(
        "import", "store a session file, or another tool's session; prints its id", model=True
    )
    imported.add_argument(
        "file", nargs="?", metavar="PATH", help="the session ('-': a session file on stdin)"
    )
    imported.add_argument(
        "--from", dest="source", choices=_SOURCES, help="its format (default: found by content)"
    )
    imported.add_argument(
        "--latest",
        metavar="TOOL",
        choices=_TOOLS,
        help="that tool's newest session of this folder, from its default location",
    )
    imported.add_argument(
        "--copy", action="store_true", help="import under a new id (keep the stored one apart)"
    )
    imported.add_argument(
        "-c", "--continue", dest="continue_", action="store_true", help="then chat on in it"
    )
    found = command("search", "find messages of every session, newest first")
    found.add_argument("text", nargs="+", metavar="TEXT", help="the words to find (all of them)")
    found.add_argument(
        "-n", "--limit", metavar="N", type=_limit, default=20, help="at most N hits (default 20)"
    )
    found.add_argument("--session", metavar="ID", help="only in this session (an id prefix)")


async def import_(inv: Invocation) -> int:
    """``import``: a session file of ours (as before), or another tool's session."""
    from ..errors import UsageError
    from ..portability.importing import detect_format
    from .manage import emit_id, import_file

    args = inv.args
    if (args.file is None) == (args.latest is None):
        raise UsageError("name the session to import: PATH, or --latest TOOL")
    own = args.file == "-" or (
        args.latest is None
        and (args.source or _detected(detect_format, args.file)) == "agentsession"
    )
    if not own:
        return await _import_foreign(inv)
    session_id = await import_file(inv)
    emit_id(inv, session_id, f"imported session {session_id} from {args.file}")
    return _chat_on(inv, session_id) if args.continue_ else 0


def _detected(detect: Callable[[Path], str], name: str) -> str:
    from ..errors import UsageError

    path = Path(name)
    if not path.exists():
        raise UsageError(f"no session file or folder at {name}")
    return detect(path)


async def _import_foreign(inv: Invocation) -> int:
    from ..hygiene import visible_line
    from ..portability import import_session
    from ..portability.locations import latest_session
    from .console import JsonOutput

    args = inv.args
    if args.latest is not None:
        located = latest_session(args.latest, Path.cwd())
        path, session, fmt = located.path, located.session, args.latest
    else:
        path, session, fmt = Path(args.file), None, args.source or "auto"
    store = inv.store("create")
    try:
        report = await import_session(store, path, format=fmt, config=inv.config(), session=session)
    finally:
        await store.close()
    if isinstance(inv.output, JsonOutput):
        inv.output.emit(
            "session",
            id=report.session_id,
            format=report.format,
            messages=report.messages,
            tool_calls=report.tool_calls,
            tool_results=report.tool_results,
            notes=report.notes,
            skipped=report.skipped,
        )
    else:
        skipped = sum(report.skipped.values())
        inv.output.note(
            f"imported {report.format} session from {path}: {report.messages} messages,"
            f" {report.tool_calls} tool calls, {report.tool_results} results,"
            f" {report.notes} notes, {skipped} records skipped"
        )
        print(visible_line(report.session_id))
    return _chat_on(inv, report.session_id) if args.continue_ else 0


def _chat_on(inv: Invocation, session_id: str) -> int:
    """Have ``chat --session ID`` run next, with this invocation's database and model."""
    argv = ["chat", "--session", session_id]
    for flag, value in (("--db", inv.args.db), ("--model", inv.args.model)):
        if isinstance(value, str):
            argv += [flag, value]
    inv.then = argv
    return 0


async def export(inv: Invocation) -> int:
    """``export``: the session file (``--format jsonl``) or a readable transcript."""
    import tempfile

    from ..portability.readable import export_readable
    from .addressing import find_session
    from .manage import export as export_jsonl
    from .output import refuse_missing_folder

    if inv.args.format == "jsonl":
        return await export_jsonl(inv)
    store = inv.store("read")
    try:
        info = await find_session(store, inv.args.id)
        target = inv.args.output
        if target and target != "-":
            refuse_missing_folder(target)
            count = await export_readable(store, info.id, target, inv.args.format)
            inv.output.note(f"wrote {count} entries to {target} ({inv.args.format})")
            return 0
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder, "session")
            await export_readable(store, info.id, path, inv.args.format)
            _copy_out(path)
        return 0
    finally:
        await store.close()


async def search(inv: Invocation) -> int:
    """``search``: one line per message holding the words (a JSON object each with --json)."""
    from ..errors import UsageError
    from ..hygiene import visible_line
    from ..store.search import search_store
    from .addressing import find_session
    from .console import JsonOutput

    words = " ".join(inv.args.text)
    if not words.strip():  # as the server's /search answers an empty q
        raise UsageError("give the words to search for")
    if not inv.postgres and not inv.db.exists():
        inv.output.note(f"no sessions yet (no database at {inv.db})")
        return 0
    store = inv.store("read")
    try:
        only = (await find_session(store, inv.args.session)).id if inv.args.session else None
        hits = await search_store(store, words, limit=inv.args.limit, session=only)
    finally:
        await store.close()
    for hit in hits:
        if isinstance(inv.output, JsonOutput):
            inv.output.emit(
                "search_hit",
                session_id=hit.session_id,
                seq=hit.seq,
                role=hit.role,
                snippet=hit.snippet,
            )
        else:
            print(
                visible_line(f"{hit.session_id[:12]}  {hit.seq:>5}  {hit.role:<9}  {hit.snippet}")
            )
    if not hits and not isinstance(inv.output, JsonOutput):
        inv.output.note("no message holds those words")
    return 0


def _copy_out(path: Path) -> None:
    import shutil
    import sys

    with path.open("rb") as data:
        shutil.copyfileobj(data, sys.stdout.buffer)
    sys.stdout.buffer.flush()
