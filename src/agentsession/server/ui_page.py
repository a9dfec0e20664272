"""The web UI at ``/``: a page and a few static files shipped in the package, no build step.

The page is plain HTML; its behaviour and look are files under ``static/`` (``app.js`` the state
and the streams, ``render.js`` how entries, tool calls and Markdown are drawn, ``app.css``), and
two pinned third-party files under ``static/vendor/`` (a Markdown renderer and an HTML sanitizer;
versions, licenses and checksums in ``static/vendor/THIRD_PARTY.md``). They are read once from
the installed package and served from ``/ui/<name>`` with an ETag; no other file is reachable.
The page runs under a policy that allows scripts and styles from the server itself only
(nothing inline) and fetches to the server only; the report's own script and style are named
by hash, for the report the page opens from a blob.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.resources import files

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from ..inspection.report import REPORT_SOURCES

__all__ = ["ASSETS", "PAGE_POLICY", "page", "ui_routes"]

#: The files served under ``/ui/``: name → media type. Nothing else under ``static/`` is served.
ASSETS = {
    "app.css": "text/css; charset=utf-8",
    "render.js": "text/javascript; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "vendor/marked.umd.js": "text/javascript; charset=utf-8",
    "vendor/purify.min.js": "text/javascript; charset=utf-8",
    "vendor/THIRD_PARTY.md": "text/markdown; charset=utf-8",
}

#: The page's policy: scripts and styles from this server only (none inline), fetches to this
#: server only, never framed; the report's sources by hash, for the report it opens from a blob.
PAGE_POLICY = (
    f"default-src 'none'; style-src 'self' {REPORT_SOURCES[0]};"
    f" script-src 'self' {REPORT_SOURCES[1]}; connect-src 'self'; img-src data:;"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@cache
def _asset(name: str) -> tuple[bytes, str]:
    """A static file's bytes and its ETag (read once from the installed package)."""
    data = files(__package__ or "agentsession.server").joinpath("static", *name.split("/"))
    raw = data.read_bytes()
    return raw, '"' + hashlib.sha256(raw).hexdigest()[:20] + '"'


def _url(name: str) -> str:
    """An asset's address, versioned by its content so a new release is never served stale."""
    return f"/ui/{name}?v={_asset(name)[1].strip(chr(34))[:10]}"


@cache
def page() -> str:
    """The page's HTML: the layout the scripts fill in."""
    scripts = "".join(
        f'<script src="{_url(name)}" defer></script>'
        for name in ("vendor/marked.umd.js", "vendor/purify.min.js", "render.js", "app.js")
    )
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentsession</title>
<link rel="stylesheet" href="{_url("app.css")}">
{scripts}
</head>
<body>
<div id="app">
<aside id="side" aria-label="Sessions">
  <div class="side-head">
    <strong>agentsession</strong>
    <button id="new" type="button" title="New session (Alt+N)">New</button>
  </div>
  <input id="search" type="search" placeholder="Search (Ctrl+K)" aria-label="Search sessions">
  <div id="results" hidden></div>
  <nav class="sessions" id="sessions"></nav>
  <details id="access">
    <summary>Access token</summary>
    <input id="token" type="password" placeholder="(none)" autocomplete="off"
      aria-label="Access token">
  </details>
  <p class="keys">Enter sends · Shift+Enter new line · Esc stops · Ctrl+K search ·
    Alt+N new · / message</p>
</aside>
<div id="scrim" hidden></div>
<main>
  <header id="bar">
    <button id="menu" type="button" aria-label="Sessions" title="Sessions">&#9776;</button>
    <div class="bar-title"><strong id="title">New session</strong>
      <span id="facts" class="facts"></span></div>
    <span id="cost" class="cost" title="What this session cost"></span>
    <a id="report" href="#" hidden target="_blank" rel="noopener">report</a>
  </header>
  <div id="log" role="log" aria-live="polite">
    <p id="empty" class="empty">Type a message below: a session is created when you send it.</p>
  </div>
  <div id="status" hidden><span class="dots" aria-hidden="true"></span>
    <span id="phase">Thinking…</span></div>
  <form id="prompt">
    <textarea id="text" rows="1" placeholder="Message (Enter sends, Shift+Enter new line)"
      aria-label="Message"></textarea>
    <button id="stop" type="button" hidden title="Stop the turn (Esc)">Stop</button>
    <button id="send" type="submit">Send</button>
  </form>
</main>
</div>
</body>
</html>
"""


async def index(request: Request) -> Response:
    return HTMLResponse(
        page(), headers={"Content-Security-Policy": PAGE_POLICY, "Cache-Control": "no-cache"}
    )


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    media = ASSETS.get(name)
    if media is None:
        error = {
            "type": "NotFoundError",  # as an unknown route says it
            "message": "no such file in the web UI",
            "retryable": False,
        }
        return JSONResponse({"error": error}, status_code=404)
    raw, etag = _asset(name)
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(raw, media_type=media, headers=headers)


def ui_routes() -> list[Route]:
    """The page and its files (they need no token: they hold nothing of any session)."""
    return [
        Route("/", index, methods=["GET"]),
        Route("/ui/{name:path}", asset, methods=["GET"]),
    ]
