"""The web UI in headless Chromium (Debian's, driven by Playwright): create a session, send a
prompt, see the streamed answer, approve a tool call, open the report."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running = Server(str(tmp_path / "ui.db"), tmp_path)
    yield running
    running.stop()


def test_chat_approve_and_report_in_chromium(server: Server) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(server.url + "/")
            page.click("#new")
            page.wait_for_selector("#title:has-text('Session')")
            sid_prefix = page.inner_text("#title").split()[-1]

            page.fill("#text", "three little words")
            page.click("#send")
            page.wait_for_selector(".assistant:has-text('answer: 3')")
            assert page.locator(".tool").count() == 2  # the call and its result

            page.fill("#text", "approve staging")
            page.click("#send")
            page.wait_for_selector(".approval button.approve")
            page.click(".approval button.approve")
            page.wait_for_selector(".assistant:has-text('answer: deployed to staging')")
            assert "approved" in page.inner_text(".approval")

            page.wait_for_selector(f"#sessions button:has-text('{sid_prefix}'), #sessions button")
            with page.context.expect_page() as popup_info:
                page.click("#report", modifiers=["Control"])
            report = popup_info.value
            report.wait_for_load_state()
            assert "/report" in report.url
            assert sid_prefix in report.content()
        finally:
            browser.close()
    assert errors == []


def test_the_token_in_the_url_is_kept_and_hidden_and_approvals_show_bidi_escaped(
    tmp_path: Path,
) -> None:
    """What ``serve`` prints opens the UI: the token leaves the address bar, requests carry it,
    the report opens under its policy, and an approval's bidi overrides are shown as escapes."""
    sync_api = pytest.importorskip("playwright.sync_api")
    token = "run-token-0123456789abcdef"
    server = Server(str(tmp_path / "t.db"), tmp_path, "--open-token", token)
    errors: list[str] = []
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            try:
                page = browser.new_page()
                page.set_default_timeout(WAIT)
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                page.on(
                    "console",
                    lambda m: errors.append(m.text) if m.type in ("error", "warning") else None,
                )
                page.goto(f"{server.url}/?token={token}")
                page.wait_for_function("!location.search.includes('token')")
                assert token not in page.url
                page.click("#new")
                page.wait_for_selector("#title:has-text('Session')")
                page.fill("#text", "approve \u202eyrots\u202c here")
                page.click("#send")
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
                browser.close()
        # Without the token the same server answers nothing.
        bare = server.client.get("/sessions")
        assert bare.status_code == 401
        listed = server.client.get("/sessions", headers={"Authorization": f"Bearer {token}"})
        assert len(listed.json()["sessions"]) == 1
    finally:
        server.stop()
    assert errors == []
