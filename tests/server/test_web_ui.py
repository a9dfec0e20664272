"""The web UI in headless Chromium (Debian's, driven by Playwright), against a real server process.

Send (the session is made by the first message), stream, Markdown, tool calls in their own form,
approve, stop, reload in the middle of a turn and still see its answer, search, a 390 px wide
screen without sideways scrolling, and the token ``serve`` prints. No test waits a fixed time:
each waits for what the page shows, with a generous bound for a busy machine.

With ``AGENTSESSION_SCREENSHOTS=DIR`` the tests save their screenshots in DIR (``docs/figures``
holds the ones ``docs/server.md`` shows); otherwise in the test's own folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import Server

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT = 120_000  # milliseconds: a generous bound on a busy machine, never a measurement

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)

MARKDOWN = (
    "md ## Plan\n\nA **bold** step and a list:\n\n- one\n- two\n\n"
    "```python\nprint('hello')\n```\n\n<img src=x id=evil onerror=alert(1)>"
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(str(tmp_path / "ui.db"), tmp_path, "--workspaces", str(tmp_path / "ws"))
    yield running
    running.stop()


def _shots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("AGENTSESSION_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Browser:
    """One headless Chromium with one page; every page error or console error is kept."""

    def __init__(self, playwright: Any, width: int = 1100, height: int = 760) -> None:
        self.browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=ARGS
        )
        # Reduced motion: the drawer moves at once, so a test never catches it half way.
        self.page = self.browser.new_page(
            viewport={"width": width, "height": height}, reduced_motion="reduce"
        )
        self.page.set_default_timeout(WAIT)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None,
        )

    def send(self, text: str) -> None:
        """Type a message (Shift+Enter between its lines) and send it with Enter.

        The page takes a message only between turns (Enter while a turn runs does nothing), and a
        turn's last tool or its answer shows before the turn ends: wait for the page to be idle.
        """
        page = self.page
        page.wait_for_selector("body:not(.busy)")
        page.click("#text")
        for index, line in enumerate(text.split("\n")):
            if index:
                page.keyboard.press("Shift+Enter")
            if line:
                page.keyboard.insert_text(line)
        page.keyboard.press("Enter")

    def close(self) -> None:
        self.browser.close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        opened = Browser(playwright)
        try:
            yield opened
        finally:
            opened.close()
    assert opened.errors == []


def test_send_stream_markdown_tools_and_approve(
    server: Server, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    page.goto(server.url + "/")
    assert page.inner_text("#title") == "New session"
    # A message typed with no session open makes one, and is not lost.
    browser.send("three little\nwords")
    page.wait_for_selector(".assistant:has-text('answer: 3')")
    assert page.inner_text(".user") == "three little\nwords"
    # The answer shows while it streams, with the indicator, before the reply is complete.
    browser.send("slow streaming-gate")
    page.wait_for_selector(".assistant.streaming:has-text('streamed while gate')")
    assert page.is_visible("#status") and page.is_visible("#stop")
    (tmp_path / "streaming-gate").write_text("open")
    page.wait_for_selector(".assistant:not(.streaming):has-text('then finished')")
    assert page.locator(".assistant:has-text('then finished')").count() == 1
    sid = page.evaluate("location.hash.slice(1)")
    assert len(sid) == 32
    page.wait_for_selector(f"#sessions button[data-id='{sid}']")
    assert server.client.get(f"/sessions/{sid}").json()["message_count"] >= 2

    # Markdown, sanitized: headings, lists and code blocks; no markup runs.
    browser.send(MARKDOWN)
    # The whole answer, not its first chunks: while it streams, the page shows the part so far.
    page.wait_for_selector(".assistant:not(.streaming) h2:has-text('Plan')")
    assert page.inner_text(".assistant pre code").strip() == "print('hello')"
    assert page.locator(".assistant li").count() == 2
    # HTML the model wrote is shown as text: no element is made from it.
    assert page.locator("#evil").count() == 0 and page.locator(".assistant img").count() == 0
    assert "<img src=x id=evil" in page.inner_text(".assistant:has-text('Plan')")

    # A write is a diff, a read a file view.
    browser.send("write notes.md first line\nsecond line")
    page.wait_for_selector(".tool .diff .add:has-text('second line')")
    page.wait_for_selector(".tool .tool-state:has-text('done')")
    browser.send("read notes.md")
    page.wait_for_selector(".tool .result.file-view:has-text('second line')")

    # An approval shows the whole call, a command as "$ command"; deny it, then approve another.
    browser.send("run echo from the shell")
    page.wait_for_selector(".approval pre.cmd:has-text('$ echo from the shell')")
    page.click(".approval:has-text('echo from the shell') button.deny")
    page.wait_for_selector(".approval .decided:has-text('denied')")
    browser.send("approve staging")
    page.wait_for_selector(".approval:has-text('staging') button.approve")
    page.screenshot(path=str(_shots(tmp_path) / "web-ui-approval.png"), animations="disabled")
    page.click(".approval:has-text('staging') button.approve")
    page.wait_for_selector(".assistant:has-text('answer: deployed to staging')")
    page.wait_for_selector("#status", state="hidden")
    # Every answer once: the prompt's stream and the log's follower never draw one twice.
    assert page.locator(".assistant:has-text('answer: deployed to staging')").count() == 1
    assert page.locator(".assistant:has-text('answer: 3')").count() == 1
    page.screenshot(path=str(_shots(tmp_path) / "web-ui.png"), animations="disabled")


def test_stop_ends_a_running_turn(server: Server, browser: Browser) -> None:
    page = browser.page
    page.goto(server.url + "/")
    browser.send("wait never")
    page.wait_for_selector(".tool .tool-name:has-text('wait_gate')")
    page.wait_for_selector("#stop", state="visible")
    assert page.is_visible("#status")
    page.click("#stop")
    page.wait_for_selector(".notice.stopped")
    page.wait_for_selector("#stop", state="hidden")
    sid = page.evaluate("location.hash.slice(1)")
    # The server agrees: nothing runs, and the next message is taken.
    assert server.client.post(f"/sessions/{sid}/cancel").status_code == 409
    browser.send("two words")
    page.wait_for_selector(".assistant:has-text('answer: 2')")


def test_a_reload_in_the_middle_of_a_turn_still_shows_its_answer(
    server: Server, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    page.goto(server.url + "/")
    browser.send("wait gate-one")
    page.wait_for_selector(".tool .tool-name:has-text('wait_gate')")
    page.reload()
    # The page follows the session's log again: the turn is shown as running, then its answer.
    page.wait_for_selector(".user:has-text('wait gate-one')")
    page.wait_for_selector("#stop", state="visible")
    page.wait_for_selector(".tool .tool-state:has-text('running')")
    (tmp_path / "gate-one").write_text("open")
    page.wait_for_selector(".assistant:has-text('answer: gate gate-one open')")
    page.wait_for_selector("#stop", state="hidden")
    assert page.locator(".user").count() == 1
    assert page.locator(".assistant").count() == 1
    # Another turn after the reload streams as usual.
    browser.send("one two")
    page.wait_for_selector(".assistant:has-text('answer: 2')")


def test_search_finds_a_message_and_opens_its_session(server: Server, browser: Browser) -> None:
    page = browser.page
    page.goto(server.url + "/")
    browser.send("md the aardvark sleeps")
    page.wait_for_selector(".assistant:has-text('aardvark')")
    page.click("#new")
    browser.send("md nothing to see")
    page.wait_for_selector(".assistant:has-text('nothing to see')")
    page.keyboard.press("Control+k")
    page.keyboard.insert_text("aardvark")
    page.wait_for_selector("#results .hit mark:has-text('aardvark')")
    page.click("#results .hit")
    page.wait_for_selector(".assistant:has-text('the aardvark sleeps')")
    assert page.locator(".assistant:has-text('nothing to see')").count() == 0


def test_390_px_wide_nothing_scrolls_sideways(
    server: Server, browser: Browser, tmp_path: Path
) -> None:
    page = browser.page
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(server.url + "/")
    browser.send(
        "md A long line: " + "x" * 300 + "\n\n```\n" + "y" * 300 + "\n```\n\n"
        "| a | b | c |\n|---|---|---|\n| " + " | ".join(["wide-cell-" * 8] * 3) + " |"
    )
    page.wait_for_selector(".assistant pre")
    browser.send("write a/very/deep/path/with/a/long/name/notes.md " + "z" * 200)
    page.wait_for_selector(".tool .diff .add")
    page.wait_for_selector("#stop", state="hidden")
    widths = page.evaluate(
        "[document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]"
    )
    assert max(widths[:2]) <= widths[2] == 390, widths
    page.screenshot(path=str(_shots(tmp_path) / "web-ui-390px.png"), animations="disabled")
    # The sessions are a drawer on a narrow screen, off to the left until the menu opens it.
    edge = "document.getElementById('side').getBoundingClientRect().right"
    assert page.evaluate(edge) <= 0
    page.click("#menu")
    page.wait_for_selector("body.drawer #scrim", state="visible")
    # The drawer slides in: wait for it to be in, rather than look once mid-slide.
    page.wait_for_function(f"{edge} >= 300")
    page.wait_for_selector("#sessions button", state="visible")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.keyboard.press("Escape")  # closes the drawer when no turn runs
    page.wait_for_selector("#scrim", state="hidden")


def test_the_token_in_the_url_is_kept_and_hidden_and_approvals_show_bidi_escaped(
    tmp_path: Path,
) -> None:
    """What ``serve`` prints opens the UI: the token leaves the address bar, requests carry it,
    the report opens under its policy, and an approval's bidi overrides are shown as escapes."""
    sync_api = pytest.importorskip("playwright.sync_api")
    token = "run-token-0123456789abcdef"
    server = Server(str(tmp_path / "t.db"), tmp_path, "--open-token", token)
    try:
        with sync_api.sync_playwright() as playwright:
            opened = Browser(playwright)
            page = opened.page
            try:
                page.goto(f"{server.url}/?token={token}")
                page.wait_for_url(lambda url: "token" not in url)
                assert token not in page.url
                opened.send("approve \u202eyrots\u202c here")
                page.wait_for_selector(".approval button.approve")
                shown = page.inner_text(".approval")
                assert "\\u202e" in shown and "\\u202c" in shown
                assert "\u202e" not in shown and "\u202c" not in shown
                with page.context.expect_page() as popup_info:
                    page.click("#report")
                report = popup_info.value
                report.wait_for_function("document.documentElement.dataset.ready === 'yes'")
                assert "Requests" in report.content()
            finally:
                opened.close()
            assert opened.errors == []
        # Without the token the same server answers nothing.
        bare = server.client.get("/sessions")
        assert bare.status_code == 401
        listed = server.client.get("/sessions", headers={"Authorization": f"Bearer {token}"})
        assert len(listed.json()["sessions"]) == 1
    finally:
        server.stop()


def test_the_api_reference_page_is_styled_under_its_content_policy(
    server: Server, browser: Browser
) -> None:
    """``/docs`` carries its style inline; the server's content policy must let that style
    apply (a refused style is a console error, which the fixture fails on) and nothing else."""
    page = browser.page
    answer = page.goto(server.url + "/docs")
    assert answer is not None and answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert "script-src" not in policy and "default-src 'none'" in policy
    page.wait_for_selector("h1")
    width = page.evaluate("getComputedStyle(document.body).maxWidth")
    assert width == "960px", width  # 60rem: the page's own style applied
