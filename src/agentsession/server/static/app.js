// The web UI's state and streams. The session's log is the page's source: opening a session
// (or reloading the page) follows GET /sessions/{id}/events from the start and draws every
// entry once (by its seq), then follows it live, reconnecting with Last-Event-ID when the
// connection drops — so a turn running while the page was away still shows its answer. The
// prompt's own stream adds what the log does not hold: text as it streams and live progress.
"use strict";
(function () {
  const UI = window.AgentUI;
  const $ = (id) => document.getElementById(id);
  const state = {
    current: null, // the open session's id (null: a new session, created on first send)
    lastSeq: -1, // the last log seq drawn
    follow: 0, // the follower's generation; a new one makes the old one stop
    followAbort: null,
    local: 0, // prompt/resume streams this page is reading
    busy: false,
    waiting: new Map(), // call id → request, the calls waiting for approval
    decisions: new Map(), // call id → decision, answered here and not yet sent
    cards: new Map(), // call id → tool card
    files: new Map(), // path → content last written, for diffs
    streaming: null, // the answer being streamed
    stepAnswered: false, // the step's reply is drawn from the log: later deltas of it are stale
    streamed: "",
    sessions: [],
  };

  // The token serve prints travels in the URL once: kept here, then dropped from the address bar.
  const params = new URLSearchParams(location.search);
  if (params.has("token")) {
    localStorage.setItem("agentsession.token", params.get("token"));
    params.delete("token");
    const query = params.toString();
    history.replaceState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
  }
  $("token").value = localStorage.getItem("agentsession.token") || "";
  $("token").addEventListener("change", () => {
    localStorage.setItem("agentsession.token", $("token").value);
    loadSessions();
    if (state.current) openSession(state.current);
  });

  function headers(json, extra) {
    const h = Object.assign({}, extra || {});
    if ($("token").value) h["Authorization"] = "Bearer " + $("token").value;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }
  async function failure(r) {
    let message = r.status + " " + r.statusText;
    try { const e = (await r.json()).error; message = e.type + ": " + e.message; } catch { /* not JSON */ }
    if (r.status === 401) { $("access").open = true; message += " (enter the access token below the sessions)"; }
    const error = new Error(message); error.status = r.status; return error;
  }
  async function call(method, path, body, signal) {
    const r = await fetch(path, {method, headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body), signal});
    if (!r.ok) throw await failure(r);
    return r;
  }

  // ---- drawing ------------------------------------------------------------------------
  const log = $("log");
  function nearBottom() { return log.scrollHeight - log.scrollTop - log.clientHeight < 80; }
  function append(node) {
    const stick = nearBottom();
    $("empty").hidden = true;
    log.appendChild(node);
    if (stick) log.scrollTop = log.scrollHeight;
    return node;
  }
  function notice(cls, text, action) {
    const div = UI.el("div", "msg notice " + cls, text);
    if (action) {
      const b = UI.el("button", "inline", action.label); b.type = "button";
      b.addEventListener("click", () => { b.remove(); action.run(); });
      div.appendChild(document.createTextNode(" ")); div.appendChild(b);
    }
    return append(div);
  }
  function setBusy(busy, phase) {
    state.busy = busy;
    $("status").hidden = !busy && state.waiting.size === 0;
    $("phase").textContent = busy ? (phase || "Thinking…")
      : state.waiting.size ? "Waiting for your approval" : "";
    $("status").classList.toggle("idle", !busy);
    $("stop").hidden = !busy;
    document.body.classList.toggle("busy", busy);
  }
  function endStreaming() {
    if (state.streaming) state.streaming.classList.remove("streaming");
    state.streaming = null; state.streamed = "";
  }
  let frame = 0;
  function delta(text) {
    // The two streams race: when the log's copy of the reply came first, its deltas are late.
    if (state.stepAnswered) return;
    if (!state.streaming) {
      state.streaming = append(UI.el("div", "msg assistant streaming"));
      state.streamed = "";
    }
    state.streamed += text;
    setBusy(true, "Writing…");
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        if (state.streaming) { UI.markdown(state.streaming, state.streamed); if (nearBottom()) log.scrollTop = log.scrollHeight; }
      });
    }
  }
  function answer(text, seq) {
    let node = state.streaming;
    if (node) node.classList.remove("streaming");
    else node = append(UI.el("div", "msg assistant"));
    if (seq !== undefined) node.dataset.seq = seq;
    UI.markdown(node, text);
    state.streaming = null; state.streamed = "";
  }
  function card(callValue) {
    const id = callValue.id || callValue.call_id || "";
    let c = state.cards.get(id);
    if (!c) { c = append(UI.toolCard(callValue, state.files)); state.cards.set(id, c); }
    return c;
  }

  // ---- log entries and events, from either stream ---------------------------------------
  function entry(data, seq) {
    const e = data.entry && typeof data.entry === "object" && !Array.isArray(data.entry) ? data.entry : data;
    const kind = data.kind || e.kind;
    if (seq === undefined || seq === null) seq = data.seq ?? e.seq;
    if (typeof seq === "number") { if (seq <= state.lastSeq) return; state.lastSeq = seq; }
    switch (kind) {
      case "user": {
        endStreaming(); state.stepAnswered = false;
        const u = append(UI.el("div", "msg user", UI.textOf(e.content ?? e.text)));
        u.dataset.seq = seq;
        setBusy(true, "Thinking…");
        break;
      }
      case "assistant": {
        const text = UI.textOf(e.content ?? e.text);
        const calls = e.tool_calls || e.calls || [];
        state.stepAnswered = true;
        if (text) answer(text, seq); else endStreaming();
        for (const c of calls) card(c);
        if (calls.length) setBusy(true, "Running " + (calls[0].name || "a tool") + "…");
        else setBusy(false);
        break;
      }
      case "tool_result": {
        const c = state.cards.get(e.call_id || e.id || "");
        if (c) UI.toolResult(c, e);
        else UI.toolResult(card({id: e.call_id, name: e.name, arguments: {}}), e);
        break;
      }
      case "dispatch": state.stepAnswered = false; setBusy(true, "Thinking…"); break;
      case "approval_requested": refreshApprovals(); setBusy(false); break;
      case "approval_decided": {
        const pending = document.querySelector(`.approval[data-call="${CSS.escape(e.call_id || "")}"] .buttons button`);
        if (pending) {
          pending.closest(".approval").classList.add("answered");
          pending.parentElement.replaceChildren(UI.el("span", "decided", e.approved ? "approved" : "denied"));
        }
        state.waiting.delete(e.call_id);
        break;
      }
      case "interrupted": endStreaming(); setBusy(false); notice("stopped", UI.visible(e.reason || "The turn was interrupted.")); break;
      case "provider_failed":
        endStreaming(); setBusy(false);
        notice("error", "The model's provider failed: " + UI.visible(e.message || e.error || e.reason || ""),
          {label: "Retry", run: () => runStream("retry", {})});
        break;
      case "summary": append(UI.el("div", "divider", "earlier messages summarized")); break;
      case "model_switched": append(UI.el("div", "divider", "model: " + UI.visible(e.model || e.to || ""))); break;
      case "permission_changed": append(UI.el("div", "divider", "preset: " + UI.visible(e.preset || e.to || ""))); break;
      default: break; // bookkeeping the chat does not show
    }
  }

  function event(type, data, id, source) {
    const live = id === null || id === undefined;
    // While this page reads its own prompt stream, the follower's live events repeat it.
    if (source === "follow" && live && state.local > 0 && type !== "turn_abandoned") return;
    switch (type) {
      case "entry": entry(data, id); break;
      case "text_delta": delta(data.text ?? data.delta ?? ""); break;
      case "tool_call_started": { const c = data.call || data; card(c); setBusy(true, "Running " + (c.name || "a tool") + "…"); break; }
      case "tool_result": { const c = state.cards.get(data.call_id || ""); if (c) UI.toolResult(c, data); break; }
      case "approval_needed": showApproval(data.request || data); break;
      case "provider_retry": if (state.streaming) state.streaming.remove(); state.streaming = null; state.streamed = ""; setBusy(true, "Retrying…"); break;
      case "turn_finished": {
        const result = data.result || data;
        if (state.streaming) answer(state.streamed);
        setBusy(false);
        if (result.stop_reason === "approval_required") refreshApprovals();
        afterTurn();
        break;
      }
      case "turn_cancelled": endStreaming(); setBusy(false); notice("stopped", "Stopped."); afterTurn(); break;
      case "turn_abandoned":
        endStreaming(); setBusy(false);
        notice("error", UI.visible(data.message || "The process running this turn stopped."),
          {label: "Retry", run: () => runStream("retry", {})});
        break;
      case "error": {
        const e = data.error || data;
        endStreaming(); setBusy(false);
        notice("error", UI.visible((e.type ? e.type + ": " : "") + (e.message || "")),
          {label: "Retry", run: () => runStream("retry", {})});
        break;
      }
      default: break; // an event kind this page does not know yet
    }
  }

  // Server-Sent Events read with fetch, so the token travels in a header.
  async function readEvents(response, onFrame) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, {stream: true}).replace(/\r\n?/g, "\n");
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        let type = "message", data = "", id = null;
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(":");
          const field = colon < 0 ? line : line.slice(0, colon);
          let value = colon < 0 ? "" : line.slice(colon + 1);
          if (value.startsWith(" ")) value = value.slice(1);
          if (field === "event") type = value;
          else if (field === "data") data += (data ? "\n" : "") + value;
          else if (field === "id" && /^-?\d+$/.test(value)) id = Number(value);
        }
        if (!data) continue;
        let parsed;
        try { parsed = JSON.parse(data); } catch { continue; }
        onFrame(parsed && typeof parsed.type === "string" ? parsed.type : type, parsed, id);
      }
    }
  }

  // ---- following the log -------------------------------------------------------------
  const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
  async function follow(sid) {
    const generation = ++state.follow;
    if (state.followAbort) state.followAbort.abort();
    let wait = 500;
    while (generation === state.follow && state.current === sid) {
      const abort = new AbortController(); state.followAbort = abort;
      try {
        const extra = state.lastSeq >= 0 ? {"Last-Event-ID": String(state.lastSeq)} : {};
        const r = await fetch("/sessions/" + sid + "/events", {headers: headers(false, extra), signal: abort.signal});
        if (!r.ok) throw await failure(r);
        document.body.classList.remove("offline"); wait = 500;
        await readEvents(r, (type, data, id) => { if (generation === state.follow) event(type, data, id, "follow"); });
      } catch (e) {
        if (abort.signal.aborted || generation !== state.follow) return;
        if (e.status === 404 || e.status === 401) { notice("error", e.message); return; }
        // The log ends before the last seq drawn (restored from an older copy): draw it anew.
        if (e.status === 400 && state.lastSeq >= 0) { openSession(sid); return; }
      }
      if (generation !== state.follow) return;
      document.body.classList.add("offline");
      await sleep(wait); wait = Math.min(wait * 2, 8000);
    }
  }

  function reset() {
    state.follow++; if (state.followAbort) state.followAbort.abort();
    state.lastSeq = -1; state.cards.clear(); state.files.clear(); state.waiting.clear(); state.decisions.clear();
    state.streaming = null; state.streamed = "";
    log.replaceChildren($("empty") || UI.el("p", "empty")); $("empty").hidden = false;
    $("cost").textContent = ""; $("facts").textContent = "";
    setBusy(false);
  }

  async function openSession(id, seq) {
    reset();
    state.current = id;
    history.replaceState(null, "", location.pathname + location.search + "#" + id);
    $("report").hidden = false; $("report").href = "/sessions/" + id + "/report";
    markCurrent(); closeDrawer();
    try {
      const info = await (await call("GET", "/sessions/" + id)).json();
      showInfo(info);
      for (const a of info.waiting_approvals || []) showApproval(a);
    } catch (e) { notice("error", e.message); if (e.status === 404) newSession(); return; }
    follow(id);
    loadCost();
    if (seq !== undefined) scrollToSeq(seq);
  }
  function scrollToSeq(seq, tries = 40) {
    const node = log.querySelector(`[data-seq="${seq}"]`);
    if (node) { node.scrollIntoView({block: "center"}); node.classList.add("found"); return; }
    if (tries > 0) setTimeout(() => scrollToSeq(seq, tries - 1), 250);
  }
  function showInfo(info) {
    $("title").textContent = UI.visible(info.title || "Untitled session");
    const facts = [info.model || info.last_model, info.preset || info.permission_preset,
      info.workspace ? "workspace " + info.workspace : null].filter(Boolean);
    $("facts").textContent = facts.map((f) => UI.visible(f)).join(" · ");
  }
  function newSession() {
    reset(); state.current = null;
    history.replaceState(null, "", location.pathname + location.search);
    $("title").textContent = "New session"; $("report").hidden = true;
    markCurrent(); closeDrawer(); $("text").focus();
  }

  async function loadCost() {
    const sid = state.current; if (!sid) return;
    try {
      const c = await (await call("GET", "/sessions/" + sid + "/cost")).json();
      if (sid !== state.current) return;
      const usd = c.total_usd ?? (c.cost && c.cost.total_usd);
      $("cost").textContent = typeof usd === "number" ? "$" + usd.toFixed(usd < 0.1 ? 4 : 2)
        : (c.no_price && c.no_price.length ? "no price" : "");
      $("cost").title = typeof usd === "number" ? "What this session cost (provider-reported usage)"
        : "No price is known for " + (c.no_price || []).join(", ");
    } catch { $("cost").textContent = ""; }
  }

  // A replayed log ends many turns at once: the list and the cost are read once they settle.
  let afterTimer = 0;
  function afterTurn() {
    clearTimeout(afterTimer);
    afterTimer = setTimeout(async () => {
      loadCost(); await loadSessions();
      const found = state.sessions.find((s) => s.id === state.current);
      if (found && found.title) $("title").textContent = UI.visible(found.title);
    }, 200);
  }

  // ---- approvals -----------------------------------------------------------------------
  function showApproval(request) {
    const id = request.call_id || request.id;
    if (!id || state.waiting.has(id)) return;
    state.waiting.set(id, request);
    const pending = state.cards.get(id);
    const question = UI.approvalCard(request, (approved, always) => {
      question.classList.add("answered");
      decide(id, approved, always);
    });
    // The question stands right below its call, which stays where the model made it.
    if (pending) {
      pending.querySelector(".tool-state").textContent = "needs approval";
      pending.after(question);
    } else append(question);
    setBusy(state.busy);
    question.scrollIntoView({block: "nearest"}); // a question waits for the user: show it
  }
  async function refreshApprovals() {
    if (!state.current) return;
    try {
      const info = await (await call("GET", "/sessions/" + state.current)).json();
      for (const a of info.waiting_approvals || []) showApproval(a);
      setBusy(state.busy);
    } catch { /* shown when the next call fails */ }
  }
  function decide(id, approved, always) {
    state.decisions.set(id, {call_id: id, approved, always});
    const open = [...state.waiting.keys()].filter((k) => !state.decisions.has(k));
    if (open.length) { setBusy(false); return; }
    const decisions = [...state.decisions.values()];
    state.decisions.clear(); state.waiting.clear();
    runStream("resume", {decisions});
  }

  // ---- sending, stopping ---------------------------------------------------------------
  // Whether the server took the request (a refusal is shown, and nothing was started).
  async function runStream(action, body) {
    const sid = state.current; if (!sid) return false;
    state.local++; setBusy(true, "Thinking…");
    let r;
    try { r = await call("POST", "/sessions/" + sid + "/" + action, body); }
    catch (e) {
      state.local--;
      if (sid === state.current) { setBusy(false); notice("error", e.message); }
      return false;
    }
    try {
      await readEvents(r, (type, data, id) => { if (sid === state.current) event(type, data, id, "local"); });
    } catch { /* the stream broke: the log's follower shows the rest */ }
    finally { state.local--; }
    return true;
  }
  async function send() {
    const text = $("text").value;
    if (!text.trim() || state.busy) return;
    $("text").value = ""; grow();
    if (!state.current) {
      try {
        const s = await (await call("POST", "/sessions", {})).json();
        state.current = s.id;
        history.replaceState(null, "", location.pathname + location.search + "#" + s.id);
        $("report").hidden = false; $("report").href = "/sessions/" + s.id + "/report";
        $("title").textContent = "Untitled session";
        follow(s.id);
      } catch (e) { $("text").value = text; notice("error", e.message); return; }
    }
    // Refused (the session busy elsewhere, the server away): the text goes back to the box.
    if (!(await runStream("prompt", {text})) && !$("text").value) { $("text").value = text; grow(); }
  }
  async function stop() {
    if (!state.current) return;
    $("phase").textContent = "Stopping…";
    try { await call("POST", "/sessions/" + state.current + "/cancel", {}); }
    catch (e) { if (e.status === 409) setBusy(false); else notice("error", e.message); }
  }

  // ---- sessions and search ---------------------------------------------------------------
  function when(stamp) {
    const t = Date.parse(stamp); if (!t) return "";
    const s = (Date.now() - t) / 1000;
    if (s < 60) return "now"; if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) return Math.floor(s / 3600) + " h"; return new Date(t).toLocaleDateString();
  }
  function markCurrent() {
    for (const b of $("sessions").querySelectorAll("button")) b.classList.toggle("current", b.dataset.id === state.current);
  }
  async function loadSessions() {
    let list;
    try { list = await (await call("GET", "/sessions?limit=100")).json(); }
    catch (e) { $("sessions").textContent = e.message; return; }
    state.sessions = list.sessions || [];
    $("sessions").replaceChildren();
    for (const s of state.sessions) {
      const b = UI.el("button", "session"); b.type = "button"; b.dataset.id = s.id;
      b.appendChild(UI.el("span", "name", UI.visible(s.title || "Untitled " + s.id.slice(0, 8))));
      b.appendChild(UI.el("span", "when", when(s.updated_at)));
      b.addEventListener("click", () => openSession(s.id));
      $("sessions").appendChild(b);
    }
    markCurrent();
  }
  let searchTimer = 0, searchAbort = null;
  function searchSoon() {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(runSearch, 250);
  }
  async function runSearch() {
    const q = $("search").value.trim();
    if (searchAbort) searchAbort.abort();
    if (!q) { $("results").hidden = true; $("sessions").hidden = false; return; }
    searchAbort = new AbortController();
    let found;
    try { found = await (await call("GET", "/search?q=" + encodeURIComponent(q) + "&limit=30", undefined, searchAbort.signal)).json(); }
    catch (e) { if (e.name === "AbortError") return; $("results").replaceChildren(UI.el("p", "hint", e.message)); $("results").hidden = false; return; }
    $("results").replaceChildren(); $("results").hidden = false; $("sessions").hidden = true;
    if (!found.hits.length) $("results").appendChild(UI.el("p", "hint", "Nothing found."));
    for (const hit of found.hits) {
      const b = UI.el("button", "hit"); b.type = "button";
      b.appendChild(UI.el("span", "name", UI.visible(hit.title || "Untitled " + hit.session_id.slice(0, 8))));
      b.appendChild(UI.snippet(UI.visible(hit.snippet)));
      b.addEventListener("click", () => openSession(hit.session_id, hit.seq));
      $("results").appendChild(b);
    }
  }

  // ---- the report opens with the token -----------------------------------------------------
  $("report").addEventListener("click", async (ev) => {
    if (!$("token").value) return; // a plain link works without a token
    ev.preventDefault();
    try {
      const r = await call("GET", $("report").getAttribute("href"));
      window.open(URL.createObjectURL(new Blob([await r.text()], {type: "text/html"})));
    } catch (e) { notice("error", e.message); }
  });

  // ---- input and keys ------------------------------------------------------------------
  function grow() {
    const t = $("text"); t.style.height = "auto";
    t.style.height = Math.min(t.scrollHeight, Math.round(window.innerHeight * 0.4)) + "px";
  }
  function openDrawer() { document.body.classList.add("drawer"); $("scrim").hidden = false; }
  function closeDrawer() { document.body.classList.remove("drawer"); $("scrim").hidden = true; }
  $("text").addEventListener("input", grow);
  $("text").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
  });
  $("prompt").addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  $("stop").addEventListener("click", stop);
  $("new").addEventListener("click", newSession);
  $("menu").addEventListener("click", () => (document.body.classList.contains("drawer") ? closeDrawer() : openDrawer()));
  $("scrim").addEventListener("click", closeDrawer);
  $("search").addEventListener("input", searchSoon);
  document.addEventListener("keydown", (ev) => {
    const typing = ev.target instanceof HTMLElement && /^(INPUT|TEXTAREA)$/.test(ev.target.tagName);
    if (ev.key === "Escape") {
      if (state.busy) { ev.preventDefault(); stop(); }
      else if (document.body.classList.contains("drawer")) closeDrawer();
      else if (ev.target === $("search")) { $("search").value = ""; runSearch(); $("text").focus(); }
    } else if ((ev.ctrlKey || ev.metaKey) && ev.key.toLowerCase() === "k") {
      ev.preventDefault(); openDrawer(); $("search").focus();
    } else if (ev.altKey && ev.key.toLowerCase() === "n") {
      ev.preventDefault(); newSession();
    } else if (ev.key === "/" && !typing) {
      ev.preventDefault(); $("text").focus();
    }
  });
  window.addEventListener("online", () => { if (state.current) follow(state.current); });
  // (The CSP forbids inline styles from markup, not from script: the textarea's height is set here.)

  loadSessions();
  const start = location.hash.slice(1);
  if (/^[0-9a-f]{32}$/.test(start)) openSession(start); else newSession();
})();
