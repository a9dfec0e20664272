"""Cross-site request forgery against the server, from real pages in headless Chromium.

The attack of the outside review: a web page sends ``no-cors`` ``text/plain`` POSTs (no
preflight) that import a session file ending in a call waiting for approval, and approve calls
waiting in the user's own session. Two pages try it — one served from another loopback origin,
one opened from a ``file://`` path, as a downloaded page is — against a server without any token
(what ``--no-auth`` serves), the weakest setting the user can choose. Nothing happens: the
server's log shows every attempt arrived and was refused, no session is added, the waiting call
is still waiting and its tool never ran. The control sends the very same requests from a program
(no ``Origin``, JSON declared): they import and approve, so the requests themselves would work.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from ..loopback import running

pytest.importorskip("starlette", reason="the server extra is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

from ..server.harness import Server, frames

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
WAIT = 120_000  # milliseconds: a generous bound on a busy machine, never a measurement

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is missing: `make test` installs Debian's chromium (apt-get install chromium)",
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    running_server = Server(str(tmp_path / "victim.db"), tmp_path)  # no token: --no-auth
    yield running_server
    running_server.stop()


def _paused(server: Server, text: str) -> tuple[str, str]:
    """A session whose turn waits for approval of a ``deploy`` call: its id and the call's."""
    sid = server.client.post("/sessions", json={}).json()["id"]
    answer = server.client.post(f"/sessions/{sid}/prompt", json={"text": text})
    last = list(frames(iter(answer.text.splitlines())))[-1]
    assert last.data["result"]["stop_reason"] == "approval_required"
    waiting = server.client.get(f"/sessions/{sid}/approvals").json()["waiting"]
    return sid, waiting[0]["call_id"]


def _deployed(server: Server, sid: str) -> list[str]:
    """The results of ``deploy`` calls in the session's log (the tool ran)."""
    exported = server.client.get(f"/sessions/{sid}/export").text.splitlines()[1:]
    lines = [json.loads(line) for line in exported if line]
    return [e["content"] for e in lines if e["kind"] == "tool_result" and e["name"] == "deploy"]


def _attack_page(
    target: str, file_text: str, file_ids: tuple[str, str], victim: tuple[str, str]
) -> str:
    """A page whose script sends the attack and then sets its title to ``done``."""
    data = json.dumps(
        {"target": target, "file": file_text, "file_ids": file_ids, "victim": victim}
    ).replace("</", "<\\/")
    return f"""<!doctype html><html><head><title>attack</title></head><body>
<script>
const d = {data};
const plain = (body) => ({{method: "POST", mode: "no-cors",
  headers: {{"Content-Type": "text/plain"}}, body}});
const approve = (call) => JSON.stringify({{decisions: [{{call_id: call, approved: true}}]}});
const tries = [
  fetch(d.target + "/sessions/import", plain(d.file)),
  fetch(d.target + "/sessions/" + d.file_ids[0] + "/resume", plain(approve(d.file_ids[1]))),
  fetch(d.target + "/sessions/" + d.victim[0] + "/approvals/" + d.victim[1],
        plain(JSON.stringify({{approved: true}}))),
  fetch(d.target + "/sessions/" + d.victim[0] + "/resume", plain(approve(d.victim[1]))),
  fetch(d.target + "/sessions", {{method: "POST", mode: "no-cors"}}),
];
Promise.allSettled(tries).then(() => {{ document.title = "done"; }});
</script></body></html>
"""


def _open_and_wait(url: str) -> list[str]:
    """Open ``url`` in headless Chromium until its script says it is done; its page errors."""
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(WAIT)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.wait_for_function("document.title === 'done'")
        finally:
            browser.close()
    return errors


def test_pages_from_another_origin_and_from_a_file_change_nothing(
    server: Server, tmp_path: Path
) -> None:
    victim = _paused(server, "approve staging")
    # The attacker's session file: a real export ending in a call waiting for approval, its id
    # known to the attacker (the session is then deleted here, so only the file has it).
    forged = _paused(server, "approve prod")
    file_text = server.client.get(f"/sessions/{forged[0]}/export").text
    assert server.client.delete(f"/sessions/{forged[0]}").status_code == 204
    page = _attack_page(server.url, file_text, forged, victim)

    class Attacker(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    downloaded = tmp_path / "downloaded.html"
    downloaded.write_text(page, encoding="utf-8")
    with running(Attacker) as attacker:
        assert attacker != server.url  # another loopback origin (another port)
        assert _open_and_wait(attacker + "/") == []
    assert _open_and_wait(downloaded.as_uri()) == []

    # Nothing happened: one session (the victim's), its call still waiting, the tool never ran.
    listed = server.client.get("/sessions").json()["sessions"]
    assert [s["id"] for s in listed] == [victim[0]]
    waiting = server.client.get(f"/sessions/{victim[0]}/approvals").json()
    assert [w["call_id"] for w in waiting["waiting"]] == [victim[1]]
    assert waiting["answered"] == []
    assert _deployed(server, victim[0]) == []

    # Every attempt reached the server and was refused there, not by the browser.
    log = server.stop()
    refusals = [line for line in log.splitlines() if "refused POST" in line]
    assert len(refusals) == 10, log  # five requests from each page
    assert sum("'null'" in line for line in refusals) == 5  # the file:// page's Origin
    assert all("(403)" in line for line in refusals)


def test_control_the_same_requests_from_a_program_do_import_and_approve(server: Server) -> None:
    victim = _paused(server, "approve staging")
    forged = _paused(server, "approve prod")
    file_text = server.client.get(f"/sessions/{forged[0]}/export").text
    assert server.client.delete(f"/sessions/{forged[0]}").status_code == 204

    imported = server.client.post("/sessions/import", content=file_text.encode())
    assert imported.status_code == 201
    # Imported under a new id: whoever wrote the file cannot know the session's id.
    assert imported.json()["id"] != forged[0]
    approved = {"decisions": [{"call_id": victim[1], "approved": True}]}
    resumed = server.client.post(f"/sessions/{victim[0]}/resume", json=approved)
    assert list(frames(iter(resumed.text.splitlines())))[-1].event == "turn_finished"
    assert _deployed(server, victim[0]) == ["deployed to staging"]
    assert len(server.client.get("/sessions").json()["sessions"]) == 2
