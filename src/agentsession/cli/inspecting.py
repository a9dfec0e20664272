"""The inspection commands: what ``session.inspect()`` returns, printed or written.

``context`` prints the annotated next request (or a past one, ``--step N``, rebuilt from the
log), ``request`` the exact wire JSON a request is sent as, in one wire format, and ``report``
the self-contained HTML report of one session or, with ``--all``, of every session beside an
index page. Each opens its session read only: nothing is admitted or written to the log. A
report holds the whole transcript, so its files are private, and a file name never comes from an
id the package could not have created (``report_name``).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import gc
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

from .._files import write_private
from ..codec import canonical_texts_held, encode
from ..engine.imports import valid_session_id
from ..errors import UsageError
from ..hygiene import visible_json
from ..inspection.annotate import ContextView
from ..inspection.inputs import next_context as next_view_of
from ..inspection.report import IndexEntry, render_index, render_report
from ..inspection.views import Inspection, past_context
from ..providers import lower
from ..providers.base import Model, ModelProfile
from ..providers.cache_controls import CacheControls
from ..providers.profiles import FORMATS, default_profile
from ..providers.wire import sent_body
from ..request import Request
from ..runtime import Runtime
from ..session import Session
from ..store.base import Store
from .collector import collector_paused
from .invocation import Invocation, version
from .output import JsonOutput, refuse_missing_folder

__all__ = ["context", "next_context", "report", "report_name", "request", "write_page"]


@functools.cache  # once per process
def _end_without_collecting() -> None:
    """Let the process end without walking its objects for cycles one last time.

    At exit the interpreter collects cycles while it tears down its modules: about 0.1 s for a
    command that has imported the package, most of a small report's time. Frozen at exit, they
    are left to the system, which takes the memory back; objects are still freed by reference
    count, so files and connections are closed as usual (this command closes its own first).
    """
    atexit.register(gc.freeze)


async def _inspected(inv: Invocation, session_id: str) -> tuple[Runtime, Session, Inspection]:
    runtime, session = await _opened(inv, session_id)
    try:
        with collector_paused():
            return runtime, session, await session.inspect()
    except BaseException:
        await runtime.close()  # its store and model client with it
        raise


async def _opened(inv: Invocation, session_id: str) -> tuple[Runtime, Session]:
    """The session opened for reading, with its runtime (the caller closes it)."""
    store = inv.store("read")
    try:
        return await inv.open(store, session_id, read_only=True)
    except BaseException:
        await store.close()
        raise


async def next_context(session: Session) -> ContextView:
    """The next request of ``session`` annotated, with no past request rebuilt.

    ``inspect().next_request``, without the rest of the inspection; ``UsageError`` saying why
    when it cannot be previewed.
    """
    inputs = await session._inspection_inputs()
    records = await session.log(0, inputs.info.next_seq)
    view, error = await asyncio.to_thread(next_view_of, inputs, records)
    if view is None:
        raise UsageError(f"cannot preview the next request: {error}")
    return view


async def context(inv: Invocation) -> int:
    """``context``: the next request (or ``--step N``) annotated part by part."""
    step = inv.args.step
    if step is None:  # the next request alone: nothing else is rebuilt
        runtime, session = await _opened(inv, inv.args.id)
    else:
        runtime, session, inspection = await _inspected(inv, inv.args.id)
    try:
        if step is not None:
            records = await session.log()
            view = past_context(inspection, step, records, runtime.token_counter)
            heading = f"Request {step} of session {session.id}, rebuilt from the log"
        else:
            view = await next_context(session)
            heading = f"The next request of session {session.id} (nothing is admitted)"
        if isinstance(inv.output, JsonOutput):
            inv.output.emit("context", **encode(view))
        else:
            # Here, not at the top: ``report`` never loads rich.
            from .console import RichOutput
            from .screens import print_context

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
            controls = inspection.controls.get(found.seq)
        elif inspection.next_request is None:
            raise UsageError(f"cannot preview the next request: {inspection.next_error}")
        else:
            neutral, model_name = inspection.next_request.request, session.model.name
            controls = inspection.next_controls
        chosen, body = _wire(inv, neutral, inv.args.format, model_name, controls)
        if isinstance(inv.output, JsonOutput):  # one object per line, like every --json output
            inv.output.emit("request", format=chosen, step=step, body=body)
        else:
            print(visible_json(json.dumps(body, indent=2, ensure_ascii=False)))
        return 0
    finally:
        await runtime.close()


def _wire(
    inv: Invocation,
    request: Request,
    fmt: str | None,
    model_name: str,
    controls: CacheControls | None,
) -> tuple[str, object]:
    """The wire format chosen and ``request`` in it (``neutral``: the package's own form).

    In the model's own format the body is the one its SDK sent: cache controls and streaming
    flags included (``providers.wire``); in another format, the plain lowering.
    """
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
    streaming = bool(getattr(model, "streaming", True))
    body = sent_body(
        request, chosen, profile=profile, model=name, controls=controls, streaming=streaming
    )
    return chosen, body


async def report(inv: Invocation) -> int:
    """``report``: the HTML report of one session, or ``--all`` with an index page."""
    args = inv.args
    if args.all == bool(args.id):
        raise UsageError("give a session id, or --all for every session")
    stamp = datetime.now(UTC).isoformat()
    _end_without_collecting()
    if args.id:
        # What the report holds is freed before the pause ends; the report asks again for the
        # message texts its inspection made (a long session makes more than are kept).
        with collector_paused(), canonical_texts_held():
            target = await _report_one(inv, args.id, args.output, stamp)
        _wrote(inv, f"wrote {target}", [target])
        return 0
    folder = refuse_missing_folder(args.output or "agentsession-reports")
    store = inv.store("read")
    try:
        entries = []
        for found in await store.list_sessions():
            with collector_paused(), canonical_texts_held():
                entries.append(await _report_listed(inv, store, found.id, folder, stamp))
        write_page(folder / "index.html", render_index(entries, generated=stamp, version=version()))
        paths = [folder / "index.html", *(folder / e.href for e in entries)]
        _wrote(inv, f"wrote {folder / 'index.html'} and {len(entries)} session reports", paths)
        return 0
    finally:
        await store.close()


async def _report_one(inv: Invocation, session_id: str, output: str | None, stamp: str) -> Path:
    """Write the report of one session; returns where."""
    if output:
        refuse_missing_folder(output)  # before the inspection, which may take a while
    runtime, _, inspection = await _inspected(inv, session_id)
    await runtime.close()
    stem = report_name(inspection.session_id).removesuffix(".html")[:12]
    target = Path(output or f"agentsession-{stem}.html")
    write_page(target, render_report(inspection, generated=stamp, version=version()))
    return target


async def _report_listed(
    inv: Invocation, store: Store, session_id: str, folder: Path, stamp: str
) -> IndexEntry:
    """Write the report of one session of ``report --all``; returns its row of the index."""
    # Runtimes made for reading share the store and never open a model client.
    _, session = await inv.open(store, session_id, read_only=True)
    inspection = await session.inspect()
    name = report_name(session_id)
    write_page(folder / name, render_report(inspection, generated=stamp, version=version()))
    return IndexEntry.of(inspection, name)


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


def write_page(path: Path, text: str) -> None:
    """Write a report page as a private file (``0600``; a missing folder is made ``0700``)."""
    try:
        write_private(path, text.encode("utf-8"))  # a report holds the whole transcript
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror or exc}") from exc
