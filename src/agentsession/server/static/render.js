// How the web UI draws things: Markdown, tool calls (a command, a diff, a file), approvals.
// Everything from the server is text: Markdown goes through the sanitizer before it becomes
// markup, everything else is inserted as text. Fields are read defensively, so an entry in its
// stored form and one in a public form (fields at the top or under "entry") both draw.
"use strict";
(function () {
  // Control characters and bidirectional overrides shown as escapes, as the command line shows
  // them: text a model wrote cannot reorder what an approval or a tool call says.
  const hidden = new RegExp("[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f" +
    "\\u200e\\u200f\\u061c\\u202a-\\u202e\\u2066-\\u2069]", "g");
  function visible(text) {
    return String(text).replace(hidden, (c) => {
      const code = c.charCodeAt(0);
      return code < 0x100 ? "\\x" + code.toString(16).padStart(2, "0")
        : "\\u" + code.toString(16).padStart(4, "0");
    });
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  // A message's text: a string, or a list of parts ({"text": …} or {"kind": "image"}).
  function textOf(content) {
    if (content === undefined || content === null) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map((p) => (typeof p === "string" ? p
        : p && typeof p.text === "string" ? p.text : "[" + ((p && (p.kind || p.type)) || "part") + "]"))
        .join("");
    }
    if (typeof content.text === "string") return content.text;
    return JSON.stringify(content);
  }

  let purifyReady = false;
  function markdown(node, text) {
    const source = String(text || "");
    if (!window.marked || !window.DOMPurify) { node.textContent = source; return; }
    if (!purifyReady) {
      // HTML a model wrote is shown as text, and an image as a link to it (the page loads no
      // image from elsewhere): the sanitizer below is the second line, not the only one.
      const escapeHtml = (t) => String(t).replace(/[&<>"']/g, (c) => "&#" + c.charCodeAt(0) + ";");
      window.marked.use({renderer: {
        html(token) { return escapeHtml(token.text ?? token.raw ?? ""); },
        image(token) {
          return '<a href="' + escapeHtml(token.href || "") + '">' + escapeHtml(token.text || token.href || "image") + "</a>";
        },
      }});
      // Links open elsewhere and never tell the target where they came from.
      window.DOMPurify.addHook("afterSanitizeAttributes", (n) => {
        if (n.tagName === "A") { n.setAttribute("target", "_blank"); n.setAttribute("rel", "noopener noreferrer"); }
      });
      purifyReady = true;
    }
    const html = window.marked.parse(source, {gfm: true, breaks: false, async: false});
    node.innerHTML = window.DOMPurify.sanitize(html, {FORBID_TAGS: ["style", "form", "input"],
      FORBID_ATTR: ["style"]});
    for (const pre of node.querySelectorAll("pre")) {
      const copy = el("button", "copy", "Copy");
      copy.type = "button";
      copy.addEventListener("click", () => {
        const code = pre.querySelector("code") || pre;
        if (navigator.clipboard) navigator.clipboard.writeText(code.textContent).catch(() => {});
        copy.textContent = "Copied";
      });
      pre.appendChild(copy);
    }
    for (const table of node.querySelectorAll("table")) {
      const wrap = el("div", "table-wrap");
      table.replaceWith(wrap); wrap.appendChild(table);
    }
  }

  // A line diff (longest common subsequence) of two small texts; a plain listing beyond that.
  const DIFF_LIMIT = 400;
  function diffLines(before, after) {
    const a = before === null ? [] : before.split("\n");
    const b = after.split("\n");
    if (a.length > DIFF_LIMIT || b.length > DIFF_LIMIT) {
      return [...a.map((l) => ["-", l]), ...b.map((l) => ["+", l])];
    }
    const n = a.length, m = b.length;
    const table = Array.from({length: n + 1}, () => new Uint16Array(m + 1));
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
      }
    }
    const out = [];
    let i = 0, j = 0;
    while (i < n && j < m) {
      if (a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
      else if (table[i + 1][j] >= table[i][j + 1]) out.push(["-", a[i++]]);
      else out.push(["+", b[j++]]);
    }
    while (i < n) out.push(["-", a[i++]]);
    while (j < m) out.push(["+", b[j++]]);
    return out;
  }

  function diffView(path, before, after) {
    const box = el("div", "diff");
    box.appendChild(el("div", "file-name", visible(path) + (before === null ? " (new or unseen)" : "")));
    const pre = el("pre", "diff-body");
    for (const [mark, line] of diffLines(before, after)) {
      const row = el("span", mark === "+" ? "add" : mark === "-" ? "del" : "same", mark + " " + visible(line));
      pre.appendChild(row); pre.appendChild(document.createTextNode("\n"));
    }
    box.appendChild(pre);
    return box;
  }

  function argsOf(call) {
    const raw = call.arguments ?? call.input ?? call.args ?? {};
    if (typeof raw === "string") { try { return JSON.parse(raw); } catch { return {raw}; } }
    return raw || {};
  }

  // The call's own form: "$ command", a diff for a write, a file for a read, JSON otherwise.
  function callBody(call, files) {
    const name = call.name || call.tool || "tool";
    const args = argsOf(call);
    if (name === "run_command" && typeof args.command === "string") {
      return el("pre", "cmd", "$ " + visible(args.command));
    }
    if (name === "write_file" && typeof args.path === "string" && typeof args.content === "string") {
      const before = files.has(args.path) ? files.get(args.path) : null;
      files.set(args.path, args.content);
      return diffView(args.path, before, args.content);
    }
    if (name === "read_file" && typeof args.path === "string") {
      const where = args.start_line ? " from line " + args.start_line : "";
      return el("div", "file-name", "read " + visible(args.path) + where);
    }
    if (name === "list_files") return el("div", "file-name", "list " + visible(args.path || "."));
    return el("pre", "args", visible(JSON.stringify(args, null, 2)));
  }

  function toolCard(call, files) {
    const card = el("div", "msg tool");
    card.dataset.call = call.id || call.call_id || "";
    const head = el("div", "tool-head");
    head.appendChild(el("span", "tool-name", visible(call.name || call.tool || "tool")));
    head.appendChild(el("span", "tool-state", "running"));
    card.appendChild(head);
    card.appendChild(callBody(call, files));
    return card;
  }

  function toolResult(card, result) {
    const text = visible(textOf(result.content ?? result.output ?? result.text));
    const failed = Boolean(result.is_error || result.error);
    card.classList.toggle("failed", failed);
    const state = card.querySelector(".tool-state");
    if (state) state.textContent = failed ? "failed" : "done";
    let out = card.querySelector(".result");
    if (out) out.remove();
    const name = card.querySelector(".tool-name");
    const isFile = name && name.textContent === "read_file";
    out = el("details", "result" + (isFile ? " file-view" : ""));
    const lines = text.split("\n").length;
    out.appendChild(el("summary", "", (isFile ? "file" : "output") + " · " + lines + (lines === 1 ? " line" : " lines")));
    out.appendChild(el("pre", "", text));
    out.open = lines <= 12 || failed;
    card.appendChild(out);
  }

  function approvalCard(request, answer) {
    const card = el("div", "msg approval");
    card.dataset.call = request.call_id || request.id || "";
    card.appendChild(el("div", "tool-head", "Approve " + visible(request.name || "tool") + "?"));
    const args = argsOf(request);
    if (request.name === "run_command" && typeof args.command === "string") {
      card.appendChild(el("pre", "cmd", "$ " + visible(args.command)));
    }
    card.appendChild(el("pre", "args", visible(JSON.stringify(args, null, 2))));
    if (request.reason) card.appendChild(el("p", "reason", visible(request.reason)));
    const buttons = el("div", "buttons");
    for (const [label, cls, approved, always] of [["Approve", "approve", true, false],
      ["Always", "always", true, true], ["Deny", "deny", false, false]]) {
      const b = el("button", cls, label);
      b.type = "button";
      b.addEventListener("click", () => {
        buttons.replaceChildren(el("span", "decided", approved ? (always ? "approved always" : "approved") : "denied"));
        answer(approved, always);
      });
      buttons.appendChild(b);
    }
    card.appendChild(buttons);
    return card;
  }

  // A search snippet: the found words come marked [like this].
  function snippet(text) {
    const node = el("span", "snippet");
    for (const [index, part] of String(text).split(/\[|\]/).entries()) {
      node.appendChild(index % 2 ? el("mark", "", part) : document.createTextNode(part));
    }
    return node;
  }

  window.AgentUI = {visible, el, textOf, markdown, toolCard, toolResult, approvalCard, snippet, argsOf};
})();
