"""The HTML report, opened in a real headless Chromium: it renders, fetches nothing, logs nothing.

Chromium runs with a fresh profile and no background networking; ``--enable-logging=stderr``
makes it print every console message (``console.error``, an uncaught exception, a blocked fetch)
as a ``CONSOLE`` line, and ``--dump-dom`` prints the document after its script ran. A control
page with a deliberate error proves the harness sees what it must see.
"""

from __future__ import annotations

import base64
import hashlib
import html as html_module
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

import agentsession as ags
from agentsession.codec import encode
from agentsession.engine.writer import LogWriter
from agentsession.hygiene import visible_json
from agentsession.inspection._report_data import report_data
from agentsession.inspection.report import IndexEntry, render_index, render_report
from agentsession.log import SkillLoaded, SkillUnloaded

from .conftest import MakeRuntime

Make = MakeRuntime

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@asynccontextmanager
async def opened_report(async_api: Any, page_path: Path) -> AsyncIterator[Any]:
    """The report open in headless Chromium, drawn; no script error may occur while it is."""
    errors: list[str] = []
    async with async_api.async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = await browser.new_page()
            page.set_default_timeout(120_000)  # a bound for a busy machine, not a measurement
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            await page.goto(page_path.as_uri())
            await page.wait_for_selector("html[data-ready='yes']", state="attached")
            yield page
        finally:
            await browser.close()
    assert errors == []


FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--enable-logging=stderr",
    "--v=0",
]

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason=(
        "!!! CHROMIUM IS NOT INSTALLED: THE HTML REPORT WAS NOT OPENED IN A BROWSER !!! "
        "`make test` installs Debian's chromium; or run `apt-get install chromium`"
    ),
)


def open_in_chromium(page: Path, fragment: str = "") -> tuple[str, list[str]]:
    """The document after its script ran, and every console message the page produced."""
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory() as profile:
        url = page.as_uri() + fragment
        done = subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", url],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def figure(dom: str, ident: str) -> str:
    found = re.search(rf"id=\"{ident}\">([^<]*)<", dom)
    assert found, ident
    return found.group(1)


def root_data(dom: str) -> dict[str, str]:
    tag = re.search(r"<html[^>]*>", dom)
    assert tag
    return dict(re.findall(r'data-(\w+)="([^"]*)"', tag.group(0)))


def replies(request: ags.Request) -> Any:
    last = request.messages[-1]
    if isinstance(last, ags.UserMessage) and "tool" in str(last.content):
        return [ags.ToolCall("lookup", {"key": "x"})]
    return "## Answer\n\nSome *Markdown* with <b>tags</b> & `code` in it."


@ags.tool
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: What to look up.
    """
    return f"<script>alert('{key}')</script> is data, not markup"


async def scripted_session(make_runtime: Make, tmp_path: Path) -> ags.Session:
    """A session with 6 turns and 3 epochs (start, compaction, model switch), and much more."""
    fact = {"value": "green"}
    runtime = make_runtime(
        replies,
        tools=[lookup],
        components=[ags.ContextComponent("plugin.ci.status", lambda: fact["value"])],
        summarizer=ags.ScriptedModel(["## Goal\nA summary."]),
        config=ags.Config(retry_base_delay=0, provider_retries=0),
    )
    session = await runtime.create_session()
    await session.prompt("use a tool please")
    fact["value"] = "red </pre><script>alert(1)</script>"
    await session.prompt("what now?")
    session.set_permission_preset("read-only")
    await session.prompt("and with fewer permissions?")
    assert await session.compact()
    await session.prompt("after the summary")
    await session.switch_model(
        ags.ScriptedModel([RuntimeError("down"), "on it", "fine"], name="other")
    )
    with pytest.raises(ags.ProviderError):
        await session.prompt("on the other model")
    await session.retry()
    info = await runtime.store.get_session(session.id)
    writer = LogWriter(runtime.store, session.id, info.next_seq, [], [])
    # Kinds the report has no sentence for still show, from their fields.
    await writer.append([SkillLoaded("pdf", "rev1", "/skills/pdf"), SkillUnloaded("pdf", "rev1")])
    session = await runtime.open_session(session.id, model=session.model)
    await session.prompt("last one")
    return session


def write_report(session_inspection: Any, path: Path) -> Path:
    html = render_report(session_inspection, generated=datetime.now(UTC).isoformat(), version="t")
    path.write_text(html, encoding="utf-8")
    return path


def embedded(html: str) -> dict[str, Any]:
    """The report's embedded data: it holds no ``<`` at all, so nothing in it ends its element."""
    found = re.search(
        r"<script type='application/json' id='report-data'>(.*?)</script>", html, re.S
    )
    assert found, "the report embeds no data"
    assert "<" not in found.group(1)
    data: dict[str, Any] = json.loads(found.group(1))
    return data


async def test_report_is_self_contained_and_escapes_everything(
    make_runtime: Make, tmp_path: Path
) -> None:
    session = await scripted_session(make_runtime, tmp_path)
    inspection = await session.inspect()
    html = write_report(inspection, tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    # Nothing to fetch: no external script, style, image or link target.
    assert not re.search(r"(src|href)=['\"]?(https?:)?//", html)
    assert "<link" not in html and "@import" not in html
    # Text from the log is data: the only script elements are the report's data and its script.
    assert html.count("<script") == 2 and html.count("</script>") == 2
    assert "alert(1)" in html and "<script>alert" not in html
    data = embedded(html)
    strings = data["strings"]
    assert any("red </pre><script>alert(1)</script>" in t for t in strings)
    assert any("<script>alert('x')</script> is data, not markup" in t for t in strings)
    # Every turn, every epoch and every request is there; unknown kinds come out generically.
    assert [t[0] for t in data["turns"] if t[0]] == [t.number for t in inspection.turns]
    assert sum(len(t[2]) for t in data["turns"]) == inspection.entries
    assert len(data["epochs"]) == 3 and len(data["requests"]) == len(inspection.requests)
    assert "skill loaded" in strings and "skill unloaded" in strings
    assert any("location: /skills/pdf" in t for t in strings)
    assert "permission preset · workspace-write → read-only" in strings
    assert "model switched · scripted → other" in strings
    assert any(t.startswith("provider failed") for t in strings)
    # The request that failed is diagnosed "failed" (drawn in the warning colour), never a hit.
    failed = [r for r in inspection.requests if r.failed]
    assert [r.failed for r in failed] == ["down"]
    diagnoses = {row[0]: strings[row[9]] for row in data["requests"]}
    assert diagnoses[failed[0].number] == "failed"
    assert [n for n, d in diagnoses.items() if d == "failed"] == [failed[0].number]
    assert ".diag-failed{color:var(--warn)" in html


def neutral(request: ags.Request) -> str:
    """A request as ``agentsession request --format neutral`` prints it."""
    body = {k: v for k, v in encode(request).items() if k != "sources"}
    return visible_json(json.dumps(body, indent=2, ensure_ascii=False))


def stored_value(data: dict[str, Any], ref: int) -> Any:
    value = data["json"][ref]
    return json.loads(value) if isinstance(value, str) else value


async def test_each_request_is_embedded_once_as_references(
    make_runtime: Make, tmp_path: Path
) -> None:
    session = await scripted_session(make_runtime, tmp_path)
    inspection = await session.inspect()
    data = report_data(inspection)
    previous: list[int] = []
    for info, row in zip(inspection.requests, data["requests"], strict=True):
        kept, *new = row[15]
        refs = previous[:kept] + new
        assert [stored_value(data, r) for r in refs] == encode(info.request.messages)
        assert [stored_value(data, r) for r in row[13]] == encode(info.request.system)
        assert [stored_value(data, r) for r in row[14]] == encode(info.request.tools)
        previous = refs
    # Each distinct message is stored once, however many requests carry it.
    assert len(data["json"]) == len({json.dumps(v, sort_keys=True) for v in data["json"]})
    carried = sum(len(info.request.messages) for info in inspection.requests)
    assert sum(len(row[15]) for row in data["requests"]) < carried


@needs_chromium
async def test_report_renders_in_chromium_without_console_errors(
    make_runtime: Make, tmp_path: Path
) -> None:
    session = await scripted_session(make_runtime, tmp_path)
    inspection = await session.inspect()
    assert len(inspection.turns) == 6 and len(inspection.epochs) == 3
    dom, console = open_in_chromium(write_report(inspection, tmp_path / "report.html"))
    assert console == []
    data = root_data(dom)
    assert data["ready"] == "yes"  # the page's script ran to its end
    assert data["turns"] == "6" and data["epochs"] == "3"
    assert data["requests"] == str(len(inspection.requests))
    assert data["shown"] == data["items"] == str(inspection.entries)
    assert figure(dom, "turn-count") == "6"
    assert figure(dom, "epoch-count") == "3"
    assert figure(dom, "request-count") == str(len(inspection.requests))
    assert 'id="page-error" hidden=""' in dom
    # Drawn from the data as text: every turn, epoch and request row; no script got in.
    assert dom.count('<section class="turn"') == len(inspection.turns)
    assert dom.count('<li class="epoch"') == 3
    assert dom.count('<tr id="request-') == len(inspection.requests)  # few: the table is open
    assert dom.count("<script") == 2
    assert "red &lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert "&lt;script&gt;alert('x')&lt;/script&gt; is data, not markup" in dom
    assert "skill loaded" in dom and "location: /skills/pdf" in dom
    assert "permission preset · workspace-write → read-only" in dom
    assert "model switched · scripted → other" in dom and "provider failed" in dom


def sent_body(dom: str) -> str:
    found = re.findall(r'<pre class="sent-body">(.*?)</pre>', dom, re.S)
    assert len(found) == 1, "exactly one request is open"
    return html_module.unescape(found[0])


@ags.tool
def measure_text(text: str, ratio: float = 0.5) -> str:
    """Measure a text.

    Args:
        text: What to measure.
        ratio: A float in the declaration, which browsers and Python spell differently.
    """
    return f"{len(text) * ratio} \x1b[2J\x9b\u202e units"


@needs_chromium
async def test_a_request_opens_exactly_as_sent(make_runtime: Make, tmp_path: Path) -> None:
    calls = iter(range(1_000))

    def answer(request: ags.Request) -> Any:
        last = request.messages[-1]
        if isinstance(last, ags.UserMessage):
            n = next(calls)
            return [ags.ToolCall("measure_text", {"text": f"t{n}\u2028", "ratio": 1.5, "7": n})]
        return "done \x1b]0;title\x07 </script><script>alert(2)</script>"

    runtime = make_runtime(answer, tools=[measure_text])
    session = await runtime.create_session()
    for n in range(22):  # 44 requests: more than the table shows unopened
        await session.prompt(f"prompt {n}: \x9b\u202e <b>bold</b>")
    inspection = await session.inspect()
    assert len(inspection.requests) == 44
    page = write_report(inspection, tmp_path / "report.html")
    for number in (1, 2, 44):
        dom, console = open_in_chromium(page, f"#request-{number}")
        assert console == []
        assert root_data(dom)["ready"] == "yes"
        assert dom.count('<tr id="request-') == 44  # opened on demand
        assert sent_body(dom) == neutral(inspection.requests[number - 1].request)
    body = sent_body(dom)
    assert "\\u009b\\u202e <b>bold</b>" in body and "\\u001b]0;title\\u0007" in body
    assert '"ratio": 1.5' in body  # the float, as Python writes it


@needs_chromium
async def test_a_long_timeline_is_drawn_in_pages_and_reveals_any_entry(
    make_runtime: Make, tmp_path: Path
) -> None:
    runtime = make_runtime(lambda request: "ok")
    session = await runtime.create_session()
    for n in range(120):
        await session.prompt(f"prompt {n}")
    inspection = await session.inspect()
    page = write_report(inspection, tmp_path / "report.html")
    dom, console = open_in_chromium(page)
    assert console == []
    data = root_data(dom)
    assert int(data["shown"]) < int(data["items"]) == inspection.entries
    last = inspection.timeline[-1]
    assert f'id="seq-{last.seq}"' not in dom
    dom, console = open_in_chromium(page, f"#seq-{last.seq}")
    assert console == [] and f'id="seq-{last.seq}"' in dom


@needs_chromium
async def test_index_page_renders_in_chromium(make_runtime: Make, tmp_path: Path) -> None:
    session = await scripted_session(make_runtime, tmp_path)
    inspection = await session.inspect()
    write_report(inspection, tmp_path / f"{session.id}.html")
    index = tmp_path / "index.html"
    entry = IndexEntry.of(inspection, f"{session.id}.html")
    index.write_text(render_index([entry], generated="2026-01-01T00:00:00", version="t"))
    dom, console = open_in_chromium(index)
    assert console == []
    assert root_data(dom)["ready"] == "yes"
    assert f'href="{session.id}.html"' in dom
    assert figure(dom, "session-count") == "1 sessions"


@needs_chromium
def test_the_harness_sees_console_errors_and_blocked_fetches(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    code = "console.error('boom'); nope();"
    named = "'sha256-" + base64.b64encode(hashlib.sha256(code.encode()).digest()).decode() + "'"
    html = render_report_shell(
        f"<img src='http://127.0.0.1:9/x.png'><script>{code}</script>"
        "<script>console.error('unnamed inline script ran')</script>"
    )
    # The test's own script is named in the policy by its hash, as the report's script is.
    html = html.replace("script-src ", f"script-src {named} ", 1)
    page.write_text(html, encoding="utf-8")
    _, console = open_in_chromium(page)
    text = "\n".join(console)
    assert "boom" in text
    assert "nope is not defined" in text
    assert "Content Security Policy" in text  # the fetch was refused, not made
    # An inline script the policy does not name never runs: no 'unsafe-inline'.
    assert "unnamed inline script ran" not in text
    assert "'unsafe-inline'" not in html


def render_report_shell(extra: str) -> str:
    """The report's own page frame with ``extra`` markup in it."""
    html = render_index([], generated="2026-01-01T00:00:00", version="t")
    return html.replace("</body>", extra + "</body>")


async def test_an_empty_session_has_a_report_too(make_runtime: Make, tmp_path: Path) -> None:
    session = await make_runtime([]).create_session()
    inspection = await session.inspect()
    assert inspection.entries == 0 and inspection.turns == () and inspection.requests == ()
    assert inspection.next_request is not None and inspection.next_request.messages == ()
    html = write_report(inspection, tmp_path / "empty.html").read_text(encoding="utf-8")
    assert "No request was dispatched." in html and "No epoch has started yet." in html
    assert "id='turn-count'>0<" in html
    assert embedded(html)["requests"] == [] and embedded(html)["turns"] == []


@needs_chromium
async def test_clicking_a_request_row_shows_it_as_sent_and_search_filters(
    make_runtime: Make, tmp_path: Path
) -> None:
    async_api = pytest.importorskip("playwright.async_api")
    session = await scripted_session(make_runtime, tmp_path)
    inspection = await session.inspect()
    page_path = write_report(inspection, tmp_path / "report.html")
    async with opened_report(async_api, page_path) as page:
        assert await page.locator("pre.sent-body").count() == 0  # nothing built yet
        await page.click("#request-2 details.sent summary")
        body = page.locator("#request-2 + tr.sent-row pre.sent-body")
        assert await body.text_content() == neutral(inspection.requests[1].request)
        await page.click("#request-2 details.sent summary")  # folding it hides the body
        # The details element announces its toggle in a task of its own: wait for it.
        await async_api.expect(page.locator("#request-2 + tr.sent-row")).to_be_hidden()
        await page.fill("#search", "skill unloaded")
        items = page.locator("li.item")
        assert await items.count() == 1
        assert "skill unloaded" in (await items.text_content() or "")


@needs_chromium
async def test_every_epoch_and_timeline_page_is_reachable_by_clicking(
    make_runtime: Make, tmp_path: Path
) -> None:
    async_api = pytest.importorskip("playwright.async_api")
    config = ags.Config(retry_base_delay=0, max_transcript_messages=4, window_step=1)
    runtime = make_runtime(lambda request: "ok", config=config)
    session = await runtime.create_session()
    for n in range(90):
        await session.prompt(f"prompt {n}")
    inspection = await session.inspect()
    assert len(inspection.epochs) > 40  # more than the page draws before a click
    page_path = write_report(inspection, tmp_path / "report.html")
    last = inspection.epochs[-1]
    async with opened_report(async_api, page_path) as page:
        assert await page.locator("li.epoch").count() == 40
        await page.click("#epochs-more")
        assert await page.locator("li.epoch").count() == len(inspection.epochs)
        assert await page.locator("#epochs-more").is_hidden()
        section = page.locator(f"#epoch-{last.number} .sections details").first
        await section.locator("summary").click()
        assert await section.locator("pre").text_content() == last.sections[0].text
        shown = int(await page.get_attribute("html", "data-shown") or 0)
        assert shown < inspection.entries
        # Scrolling the button into view draws the next page too (an IntersectionObserver),
        # so the click is dispatched without waiting for the button to stay visible.
        while await page.locator("#more").is_visible():
            await page.locator("#more").dispatch_event("click")
        assert await page.locator("li.item").count() == inspection.entries
