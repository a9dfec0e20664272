"""The chat's inspection commands: ``/context`` (the next request annotated), ``/report``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from .._files import write_private
from ..codec import canonical_texts_held
from ..inspection.report import render_report
from ..session import Session
from .console import Output, RichOutput
from .inspecting import next_context, write_page
from .invocation import version
from .output import refuse_missing_folder
from .screens import print_context

__all__ = ["show_context", "write_report"]


async def show_context(session: Session, output: Output) -> None:
    """Print the next request of ``session`` part by part (nothing is admitted)."""
    view = await next_context(session)  # the next request alone: nothing else is rebuilt
    heading = f"The next request of session {session.id} (nothing is admitted)"
    print_context(view, heading, full=False, rich=isinstance(output, RichOutput))


async def write_report(session: Session, path: Path) -> None:
    """Write the HTML report of ``session`` to ``path`` (into an existing folder, as ``report``)."""
    refuse_missing_folder(path)
    stamp = datetime.now(UTC).isoformat()
    with canonical_texts_held():  # the report asks again for the texts its inspection made
        inspection = await session.inspect()
        # The same private write as the ``report`` command: a report holds the whole transcript.
        write_page(path, render_report(inspection, generated=stamp, version=version()))


async def write_export(session: Session, path: Path) -> str:
    """``/export``: the session file (``.jsonl``), one HTML page (``.html``) or Markdown; which."""
    from ..portability.readable import READABLE
    from ..store.base import SessionInfo

    refuse_missing_folder(path)
    if path.suffix == ".jsonl":
        await session.export(path)
        return "session file"
    fmt = "html" if path.suffix in (".html", ".htm") else "markdown"
    info = SessionInfo(session.id, "", "", session.title)
    text = READABLE[fmt](info, [record.entry for record in await session.log()])
    write_private(path, text.encode("utf-8"), make_folder=False)
    return fmt
