"""The web UI at ``/``: one self-contained page, plain HTML and JavaScript, no build step.

Sessions on the left; the chat on the right, streamed from the prompt's event stream (read with
``fetch`` so a bearer token can travel in a header); tool calls, their results and approvals
inline; a link to each session's report. Every text from the server is inserted as text, never
as markup; approval questions and tool calls show control characters and bidirectional
overrides as escapes. The page runs under a policy naming its one style and one script by hash.
A ``?token=`` in its URL (what ``serve`` prints) is kept in the browser and dropped from the
address bar.
"""

from __future__ import annotations

import base64
import hashlib

from ..inspection.report import REPORT_SOURCES

__all__ = ["PAGE", "PAGE_POLICY"]

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; height: 100vh; }
aside { width: 17rem; border-right: 1px solid #ddd; padding: .8rem; overflow: auto; }
main { flex: 1; display: flex; flex-direction: column; padding: .8rem; min-width: 0; }
#log { flex: 1; overflow: auto; }
.msg { margin: .4rem 0; padding: .4rem .6rem; border-radius: .4rem; white-space: pre-wrap; }
.user { background: #e8f0fe; } .assistant { background: #f4f4f4; }
.tool { background: #fff7e0; font-family: monospace; font-size: 13px; }
.approval { background: #ffe8e8; } .error { background: #fdd; }
.sessions button { display: block; width: 100%; text-align: left; margin: .2rem 0; }
.current { font-weight: bold; }
form { display: flex; gap: .4rem; } #text { flex: 1; }
"""

SCRIPT = """
"use strict";
const $ = (id) => document.getElementById(id);
let current = null;
// The token serve prints travels in the URL once: kept here, then dropped from the address bar.
const params = new URLSearchParams(location.search);
if (params.has("token")) {
  localStorage.setItem("agentsession.token", params.get("token"));
  params.delete("token");
  const query = params.toString();
  history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
}
$("token").value = localStorage.getItem("agentsession.token") || "";
// Control characters and bidirectional overrides shown as escapes, as the command line shows
// them: text a model wrote cannot reorder what an approval question says.
const hidden = new RegExp("[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f" +
  "\\u200e\\u200f\\u061c\\u202a-\\u202e\\u2066-\\u2069]", "g");
function visible(text) {
  return String(text).replace(hidden, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? "\\\\x" + code.toString(16).padStart(2, "0")
      : "\\\\u" + code.toString(16).padStart(4, "0");
  });
}
$("token").addEventListener("change", () => {
  localStorage.setItem("agentsession.token", $("token").value); loadSessions();
});
function headers(json) {
  const h = {};
  if ($("token").value) h["Authorization"] = "Bearer " + $("token").value;
  if (json) h["Content-Type"] = "application/json";
  return h;
}
async function call(method, path, body) {
  const r = await fetch(path, {method, headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body)});
  if (!r.ok) { const e = await r.json(); throw new Error(e.error.type + ": " + e.error.message); }
  return r;
}
function add(cls, text) {
  const div = document.createElement("div");
  div.className = "msg " + cls; div.textContent = text; $("log").appendChild(div);
  $("log").scrollTop = $("log").scrollHeight; return div;
}
async function loadSessions() {
  let list;
  try { list = await (await call("GET", "/sessions?limit=100")).json(); }
  catch (e) { $("sessions").textContent = e.message; return; }
  $("sessions").replaceChildren();
  for (const s of list.sessions) {
    const b = document.createElement("button");
    b.textContent = s.title || s.id.slice(0, 12);
    b.dataset.id = s.id;
    if (s.id === current) b.className = "current";
    b.addEventListener("click", () => openSession(s.id));
    $("sessions").appendChild(b);
  }
}
async function openSession(id) {
  current = id; $("log").replaceChildren();
  $("title").textContent = "Session " + id.slice(0, 12);
  $("report").hidden = false; $("report").href = "/sessions/" + id + "/report";
  const r = await call("GET", "/sessions/" + id + "/export");
  for (const line of (await r.text()).split("\\n").slice(1)) {
    if (!line) continue;
    const e = JSON.parse(line);
    if (e.kind === "user") add("user", typeof e.content === "string" ? e.content : "[parts]");
    if (e.kind === "assistant" && e.content) add("assistant", e.content);
    if (e.kind === "tool_result") add("tool", e.name + " → " + e.content);
  }
  const info = await (await call("GET", "/sessions/" + id)).json();
  for (const a of info.waiting_approvals) showApproval(a);
  loadSessions();
}
$("report").addEventListener("click", async (ev) => {
  if (!$("token").value) return;  // a plain link works without a token
  ev.preventDefault();
  const r = await call("GET", $("report").getAttribute("href"));
  window.open(URL.createObjectURL(new Blob([await r.text()], {type: "text/html"})));
});
async function stream(path, body) {
  const r = await call("POST", path, body);
  const reader = r.body.getReader(); const decoder = new TextDecoder();
  let buffer = "", answer = null;
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, {stream: true});
    let cut;
    while ((cut = buffer.indexOf("\\n\\n")) >= 0) {
      const frame = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
      let event = "message", data = "";
      for (const line of frame.split("\\n")) {
        if (line.startsWith("event: ")) event = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) answer = handle(event, JSON.parse(data), answer);
    }
  }
  loadSessions();
}
function handle(event, data, answer) {
  if (event === "text_delta") {
    if (!answer) answer = add("assistant", "");
    answer.textContent += data.text; return answer;
  }
  if (event === "tool_call_started") {
    add("tool", visible("→ " + data.call.name + " " + JSON.stringify(data.call.arguments)));
    return null;
  }
  if (event === "tool_result") { add("tool", data.name + " → " + data.content); return null; }
  if (event === "approval_needed") { showApproval(data.request); return null; }
  if (event === "provider_retry") { if (answer) answer.remove(); return null; }
  if (event === "turn_finished" && !answer && data.result.text) add("assistant", data.result.text);
  if (event === "turn_cancelled") add("error", "cancelled");
  if (event === "error") add("error", data.error.type + ": " + data.error.message);
  return answer;
}
function showApproval(request) {
  const div = add("approval", visible("Approve " + request.name + " " +
    JSON.stringify(request.arguments) + "? " + request.reason) + " ");
  for (const [label, approved] of [["Approve", true], ["Deny", false]]) {
    const b = document.createElement("button");
    b.textContent = label; b.className = approved ? "approve" : "deny";
    b.addEventListener("click", async () => {
      div.querySelectorAll("button").forEach((x) => x.remove());
      div.appendChild(document.createTextNode(approved ? "approved" : "denied"));
      const left = await (await call("POST", "/sessions/" + current + "/approvals/" +
        encodeURIComponent(request.call_id), {approved})).json();
      const path = "/sessions/" + current + "/resume";
      if (left.waiting.length === 0) await run(() => stream(path, {}));
    });
    div.appendChild(b);
  }
}
async function run(action) {
  $("send").disabled = true;
  try { await action(); } catch (e) { add("error", e.message); }
  finally { $("send").disabled = false; }
}
$("new").addEventListener("click", () => run(async () => {
  const s = await (await call("POST", "/sessions", {})).json(); await openSession(s.id);
}));
$("prompt").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const text = $("text").value;
  if (!text.trim() || !current) return;
  $("text").value = ""; add("user", text);
  run(() => stream("/sessions/" + current + "/prompt", {text}));
});
loadSessions();
"""


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: The page's policy: its own style and script by hash (no ``'unsafe-inline'``), fetches to this
#: server only, never framed; the report's sources too, for the report it opens from a blob.
PAGE_POLICY = (
    f"default-src 'none'; style-src {_digest(STYLE)} {REPORT_SOURCES[0]};"
    f" script-src {_digest(SCRIPT)} {REPORT_SOURCES[1]}; connect-src 'self'; img-src data:;"
    " base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

PAGE = (
    """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>agentsession</title>
<style>"""
    + STYLE
    + """</style>
</head>
<body>
<aside>
  <label>Token <input id="token" type="password" placeholder="(none)" size="12"></label>
  <p><button id="new">New session</button></p>
  <div class="sessions" id="sessions"></div>
</aside>
<main>
  <div><strong id="title">No session</strong> <a id="report" href="#" hidden>report</a></div>
  <div id="log"></div>
  <form id="prompt"><input id="text" autocomplete="off" placeholder="Message">
  <button id="send">Send</button></form>
</main>
<script>"""
    + SCRIPT
    + """</script>
</body>
</html>
"""
)
