"""The report's script: it draws the requests, epochs and timeline from the embedded data.

The page carries its data once, as JSON (``_report_data``); the script builds what is in view
and the rest on demand — the request table when it is opened, a request's body when its row is
unfolded, the timeline a page at a time as it scrolls into view — so a session of ten thousand
entries opens at once. Every text goes in as a text node (``textContent``), never as markup.
``#request-N`` opens request N as sent and ``#seq-N`` shows log entry N. The script reports its
own errors on the page and marks the document ready, with the milliseconds it took.
"""

from __future__ import annotations

__all__ = ["SCRIPT"]

SCRIPT = r"""
(function () {
  "use strict";
  var root = document.documentElement;
  window.addEventListener("error", function (event) {
    var box = document.getElementById("page-error");
    if (box) {
      box.hidden = false;
      box.textContent = "This page hit an error: " + event.message;
    }
  });
  var own = Object.prototype.hasOwnProperty;
  var source = document.getElementById("report-data");
  var D = source ? JSON.parse(source.textContent) : null;
  if (source) { source.textContent = ""; }  // parsed once: the document need not keep the text
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) { parent.appendChild(arguments[i]); }
    return parent;
  }
  function num(v) { return v === null || v === undefined ? "\u2013" : v.toLocaleString("en-US"); }
  function S(i) { return D.strings[i]; }
  function when(s) { return s ? s.slice(0, 19).replace("T", " ") : "\u2013"; }
  function cut(text, limit) {
    if (text.length <= limit) { return text; }
    return text.slice(0, limit) + "\u2026 (" + (text.length - limit).toLocaleString("en-US") +
      " more characters)";
  }
  function plural(n, word) { return n + " " + word + (n !== 1 ? "s" : ""); }
  // Milliseconds as the page shows a duration; -1: not recorded.
  function took(ms) {
    if (ms < 0) { return "\u2013"; }
    if (ms < 1000) { return ms + " ms"; }
    if (ms < 60000) { return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s"; }
    var s = Math.round(ms / 1000);
    return Math.floor(s / 60) + " min " + (s % 60) + " s";
  }

  // A request as sent: its stored pieces joined into the text json.dumps(body, indent=2) gives.
  var full = [];
  function messagesOf(number) {
    for (var n = full.length + 1; n <= number; n++) {
      var delta = D.requests[n - 1][15];
      var before = n > 1 ? full[n - 2] : [];
      full.push(before.slice(0, delta[0]).concat(delta.slice(1)));
    }
    return full[number - 1];
  }
  function pretty(value, pad) {
    var text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    return pad + text.split("\n").join("\n" + pad);
  }
  function list(refs) {
    if (!refs.length) { return "[]"; }
    return "[\n" + refs.map(function (r) { return pretty(D.json[r], "    "); }).join(",\n") +
      "\n  ]";
  }
  var RAW = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c\u2028\u2029]/g;
  function visible(c) { return "\\u" + ("000" + c.charCodeAt(0).toString(16)).slice(-4); }
  function body(number) {
    var row = D.requests[number - 1];
    var text = "{\n  \"system\": " + list(row[13]) + ",\n  \"messages\": " +
      list(messagesOf(number)) + ",\n  \"tools\": " + list(row[14]) + "\n}";
    return text.replace(RAW, visible);
  }
  // A request's body goes in a full-width row under its own, made when first unfolded.
  function fillSent(details) {
    var row = details.closest("tr"), shown = row.nextElementSibling;
    if (!details.dataset.filled) {
      details.dataset.filled = "1";
      var cell = el("td");
      cell.colSpan = row.children.length;
      shown = add(el("tr", "sent-row"), add(cell, el("p", "meta",
        "request " + details.dataset.request + " as sent (neutral form: what" +
        " `agentsession request --step N --format neutral` prints)"),
        el("pre", "sent-body", body(Number(details.dataset.request)))));
      var fields = S(D.requests[Number(details.dataset.request) - 1][17]);
      if (fields) {
        add(cell, el("p", "meta", "its SDK call also carried these cache fields (the whole" +
          " wire body: `agentsession request --step N`)"), el("pre", "sent-body", fields));
      }
      row.parentNode.insertBefore(shown, row.nextSibling);
    }
    shown.hidden = !details.open;
  }

  // The chart: one bar per request, split into the repeated prefix and the new part.
  var NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    var e = document.createElementNS(NS, tag);
    for (var k in attrs) { if (own.call(attrs, k)) { e.setAttribute(k, attrs[k]); } }
    if (text !== undefined) { e.textContent = text; }
    return e;
  }
  function chart(box, tip) {
    var rows = D.requests, height = 200, left = 56, y = height - 20;
    var top = Math.max(1, Math.max.apply(null, rows.map(function (r) { return r[5]; })));
    var bar = Math.max(3, Math.min(36, Math.floor(1080 / rows.length)));
    var width = Math.max(rows.length * bar + left + 10, 320);
    function scaled(t) { return t * (height - 40) / top; }
    var pic = svg("svg", {width: width, height: height, role: "img",
                          "aria-label": "prompt tokens per request"});
    [1.0, 0.5].forEach(function (share) {
      var gy = (y - scaled(Math.round(top * share))).toFixed(1);
      add(pic, svg("line", {x1: left, x2: width, y1: gy, y2: gy, "class": "grid"}),
          svg("text", {x: 4, y: (Number(gy) + 4).toFixed(1), "class": "axis"},
              num(Math.round(top * share))));
    });
    add(pic, svg("line", {x1: left, x2: width, y1: y, y2: y, "class": "base"}),
        svg("text", {x: left, y: height - 4, "class": "axis"}, "request 1 \u2192"));
    // One path per kind of mark, not an element per request: thousands of bars stay cheap.
    var cached = [], fresh = [], reported = [], edges = [], epoch = null;
    var w = Math.max(bar - 1, 1);
    function rect(x, top, h) {
      return "M" + x + " " + top.toFixed(1) + "h" + w + "v" + h.toFixed(1) + "h-" + w + "z";
    }
    rows.forEach(function (r, i) {
      var x = left + i * bar;
      if (i && r[4] !== epoch) { edges.push("M" + (x - 0.5) + " 8V" + y); }
      epoch = r[4];
      var c = scaled(r[6]), n = scaled(r[5] - r[6]);
      cached.push(rect(x, y - c, c));
      fresh.push(rect(x, y - c - n, n));
      if (r[8]) { reported.push("M" + x + " " + (y - scaled(r[8])).toFixed(1) + "h" + w); }
    });
    add(pic, svg("path", {"class": "epoch-line", d: edges.join("")}),
        svg("path", {"class": "cacheable", d: cached.join("")}),
        svg("path", {"class": "new", d: fresh.join("")}),
        svg("path", {"class": "reported", d: reported.join("")}));
    pic.dataset.bars = String(rows.length);
    function at(event) {
      var bounds = pic.getBoundingClientRect();
      var i = Math.floor((event.clientX - bounds.left - left) / bar);
      return i >= 0 && i < rows.length ? rows[i] : null;
    }
    pic.addEventListener("mousemove", function (event) {
      var r = at(event);
      tip.textContent = !r ? "" : "request " + r[0] + " (turn " + r[1] + ", epoch " + num(r[4]) +
        "): " + num(r[5]) + " tokens, " + num(r[6]) + " repeating the previous prefix, " +
        num(r[5] - r[6]) + " new; provider cached " + num(r[8]) + "; diagnosis " + S(r[9]) +
        " \u00b7 click to open it as sent";
    });
    pic.addEventListener("click", function (event) {
      var r = at(event);
      if (r) { location.hash = "#request-" + r[0]; }
    });
    box.appendChild(pic);
  }

  // The table of every request, built when it is first opened.
  function requestRow(r, top) {
    var tr = el("tr");
    tr.id = "request-" + r[0];
    tr.dataset.cache = S(r[9]);
    var scale = top ? 100 / top : 0;
    var barBox = el("span", "bar"), c = el("span", "cacheable"), n = el("span", "new");
    c.style.width = (r[6] * scale).toFixed(1) + "%";
    n.style.width = ((r[5] - r[6]) * scale).toFixed(1) + "%";
    add(barBox, c, n);
    var sent = el("details", "sent");
    sent.dataset.request = String(r[0]);
    add(sent, el("summary", "", "show"));
    sent.addEventListener("toggle", function () {
      if (sent.open || sent.dataset.filled) { fillSent(sent); }
    });
    var cells = [
      el("td", "", r[0]), el("td", "", r[1]), el("td", "", r[2]), el("td", "", S(r[3])),
      el("td", "", num(r[4])), add(el("td"), barBox), el("td", "num", num(r[5])),
      el("td", "num", num(r[6])), el("td", "num", num(r[5] - r[6])), el("td", "num", num(r[7])),
      el("td", "num", num(r[8])), el("td", "diag diag-" + S(r[9]), S(r[9])),
      el("td", "", S(r[10]) || "\u2013"), el("td", "", S(r[18]) || "\u2013"),
      el("td", "num", S(r[11])),
      el("td", "num latency", took(r[19])), el("td", "num first-token", took(r[20])),
      r[12] < 0 ? el("td", "", "exact") : add(el("td"), el("span", "warn", S(r[12]))),
      add(el("td"), sent)
    ];
    cells.forEach(function (cell) { tr.appendChild(cell); });
    return tr;
  }
  function fillTable() {
    var table = document.getElementById("request-table");
    if (!table || table.dataset.filled) { return; }
    table.dataset.filled = "1";
    var top = Math.max.apply(null, D.requests.map(function (r) { return r[5]; }));
    var frag = document.createDocumentFragment();
    D.requests.forEach(function (r) { frag.appendChild(requestRow(r, top)); });
    table.querySelector("tbody").appendChild(frag);
  }

  // The epochs: the first few at once, the rest on a click; a section's text when it is opened.
  var epochsDrawn = 0, EPOCHS = 40;
  function epochs(list, button) {
    var frag = document.createDocumentFragment(), stop = button.dataset.all ? D.epochs.length :
      Math.min(D.epochs.length, epochsDrawn + EPOCHS);
    for (; epochsDrawn < stop; epochsDrawn++) {
      var e = D.epochs[epochsDrawn], li = el("li", "epoch");
      li.id = "epoch-" + e[0];
      li.dataset.reason = S(e[2]);
      var total = 0, sections = el("ul", "sections");
      e[9].forEach(function (s) {
        total += s[1];
        var details = add(el("details"), add(el("summary"), el("code", "", S(s[0])),
          document.createTextNode(" "), el("span", "tok", num(s[1]) + " tokens")));
        details.dataset.text = String(s[2]);
        add(sections, add(el("li"), details));
      });
      var removed = S(e[8]) ? " \u00b7 removed: " + S(e[8]) : "";
      frag.appendChild(add(li, el("h3", "", "Epoch " + e[0] + " \u00b7 " + S(e[3])),
        el("p", "meta", "from turn " + e[6] + " (log seq " + e[1] + ") \u00b7 " + S(e[4]) +
          " \u00b7 " + when(e[5]) + " \u00b7 baseline " + num(total) + " tokens \u00b7 tools: " +
          S(e[7]) + removed), sections));
    }
    list.appendChild(frag);
    button.hidden = epochsDrawn >= D.epochs.length;
    button.textContent = "show the other " + plural(D.epochs.length - epochsDrawn, "epoch");
  }
  function fillSection(event) {
    var details = event.target;
    if (details.open && details.dataset.text && !details.querySelector("pre")) {
      add(details, el("pre", "", S(Number(details.dataset.text))));
    }
  }

  // The timeline: drawn a page at a time, and again from the data when a filter changes.
  var turnsBox = document.getElementById("turns"), more = document.getElementById("more");
  var hidden = {}, query = "", openAll = false, cursor = 0, PAGE = 300;
  var requestAt = {};
  function category(item) {
    var kind = S(item[1]);
    return own.call(D.categories, kind) ? D.categories[kind] : "other";
  }
  function shows(item) {
    if (hidden[category(item)]) { return false; }
    if (!query) { return true; }
    var text = "#" + item[0] + " " + item[2].slice(11, 19) + " " + S(item[3]) + " " +
      (item[4] < 0 ? "" : S(item[4]));
    return text.toLowerCase().indexOf(query) >= 0;
  }
  function itemRow(item) {
    var cat = category(item), li = el("li", "item cat-" + cat);
    li.id = "seq-" + item[0];
    li.dataset.category = cat;
    li.dataset.kind = S(item[1]);
    var time = el("time", "", item[2].length >= 19 ? item[2].slice(11, 19) : item[2]);
    time.title = item[2];
    add(li, el("span", "seq", "#" + item[0]), time, el("span", "title", S(item[3])));
    if (own.call(requestAt, item[0])) {
      var link = el("a", "as-sent", "request " + requestAt[item[0]] + " as sent");
      link.href = "#request-" + requestAt[item[0]];
      add(li, document.createTextNode(" "), link);
    }
    var text = item[4] < 0 ? "" : S(item[4]), first = text.split("\n", 1)[0];
    if (text && first === text && text.length <= 160) {
      add(li, el("span", "text", text));
    } else if (text) {
      var details = add(el("details"), el("summary", "", cut(first, 160)), el("pre", "", text));
      details.open = openAll;
      add(li, details);
    }
    return li;
  }
  function turnHead(turn) {
    var h = turn[1];
    if (!h.length) { return "Before the first prompt"; }
    var side = h[8] ? " \u00b7 " + plural(h[8], "side call") : "";
    return "Turn " + turn[0] + " \u00b7 " + when(h[0]) + " \u00b7 " + S(h[1]) + " \u00b7 " +
      plural(h[2], "request") + " \u00b7 " + plural(h[3], "tool call") + side + " \u00b7 " +
      num(h[4]) + " tokens in (" + num(h[5]) + " cached), " + num(h[6]) + " out \u00b7 " +
      S(h[7]);
  }
  // A turn's waterfall: one row per request, tool run and side call on the turn's time axis.
  function waterfall(turn) {
    var spans = turn[1][9], end = 1, box = el("div", "waterfall");
    if (!spans || !spans.length) { return null; }
    spans.forEach(function (s) { end = Math.max(end, s[3] + Math.max(s[4], 0)); });
    box.dataset.spans = String(spans.length);
    function at(ms) { return (Math.max(ms, 0) * 100 / end).toFixed(2) + "%"; }
    spans.forEach(function (s) {
      var kind = S(s[0]), row = el("div", "span span-" + kind + (s[6] >= 0 ? " failed" : ""));
      var track = el("span", "track"), bar = add(track, el("span", "span-bar")).lastChild;
      row.dataset.seq = String(s[1]);
      bar.style.left = at(s[3]);
      bar.style.width = at(s[4]);
      if (s[5] >= 0) { add(track, el("span", "mark")).lastChild.style.left = at(s[3] + s[5]); }
      var side = kind === "side_call";
      var link = el("a", "span-label", S(s[2]) + (side ? " (side call)" : ""));
      var text = side ? "at +" + took(Math.max(s[3], 0)) : took(s[4]);
      if (s[5] >= 0) { text += " \u00b7 first token " + took(s[5]); }
      if (s[6] >= 0) { text += " \u00b7 failed: " + S(s[6]); }
      link.href = "#seq-" + s[1];
      add(box, add(row, link, track, el("span", "span-time", text)));
    });
    return box;
  }
  function renderMore() {
    var frag = document.createDocumentFragment(), drawn = 0;
    while (cursor < D.turns.length && drawn < PAGE) {
      var turn = D.turns[cursor++], items = turn[2].filter(shows);
      if (!items.length) { continue; }
      var section = el("section", "turn"), ol = el("ol", "items");
      section.dataset.turn = String(turn[0]);
      items.forEach(function (item) { ol.appendChild(itemRow(item)); });
      drawn += items.length;
      add(section, el("h3", "", turnHead(turn)));
      var fall = waterfall(turn);
      if (fall) { section.appendChild(fall); }
      frag.appendChild(add(section, ol));
    }
    turnsBox.appendChild(frag);
    more.hidden = cursor >= D.turns.length;
    more.textContent = "show more (" + plural(D.turns.length - cursor, "turn") + " left)";
    root.dataset.shown = String(turnsBox.querySelectorAll("li.item").length);
  }
  function redraw() {
    turnsBox.textContent = "";
    cursor = 0;
    renderMore();
  }
  function reveal(seq) {
    var found = document.getElementById("seq-" + seq);
    if (!found) {
      hidden = {};
      query = "";
      document.querySelectorAll(".filters input[type=checkbox]").forEach(function (b) {
        b.checked = true;
      });
      var search = document.getElementById("search");
      if (search) { search.value = ""; }
      redraw();
      while (!(found = document.getElementById("seq-" + seq)) && cursor < D.turns.length) {
        renderMore();
      }
    }
    if (found) {
      var d = found.querySelector("details");
      if (d) { d.open = true; }
      found.scrollIntoView();
    }
  }
  function openRequest(number) {
    var table = document.getElementById("request-table");
    if (!table || number < 1 || number > D.requests.length) { return; }
    table.open = true;
    fillTable();
    var row = document.getElementById("request-" + number);
    var sent = row.querySelector("details.sent");
    sent.open = true;
    fillSent(sent);
    row.scrollIntoView();
  }
  function go() {
    var hash = location.hash.slice(1), m = /^request-(\d+)$/.exec(hash);
    if (m) { openRequest(Number(m[1])); }
    m = /^seq-(\d+)$/.exec(hash);
    if (m) { reveal(Number(m[1])); }
  }

  if (D) {
    var last = "";
    D.turns.forEach(function (turn) {
      turn[2].forEach(function (item) {
        var bar = item[2].indexOf("|");
        last = last.slice(0, Number(item[2].slice(0, bar))) + item[2].slice(bar + 1);
        item[2] = last;
      });
    });
    D.requests.forEach(function (r) { requestAt[r[16]] = r[0]; });
    var box = document.getElementById("chart"), tip = document.getElementById("chart-tip");
    if (box && tip && D.requests.length) { chart(box, tip); }
    var table = document.getElementById("request-table");
    if (table) {
      if (table.open) { fillTable(); }
      table.addEventListener("toggle", function () { if (table.open) { fillTable(); } });
    }
    var epochList = document.getElementById("epoch-list");
    var others = document.getElementById("epochs-more");
    if (epochList && others) {
      epochs(epochList, others);
      others.addEventListener("click", function () {
        others.dataset.all = "1";
        epochs(epochList, others);
      });
      epochList.addEventListener("toggle", fillSection, true);
    }
    if (turnsBox && more) {
      renderMore();
      more.addEventListener("click", renderMore);
      if ("IntersectionObserver" in window) {
        new IntersectionObserver(function (seen) {
          if (seen[0].isIntersecting && !more.hidden) { renderMore(); }
        }, {rootMargin: "800px"}).observe(more);
      }
    }
    document.querySelectorAll(".filters input[type=checkbox]").forEach(function (box) {
      box.addEventListener("change", function () {
        hidden[box.dataset.category] = !box.checked;
        redraw();
      });
    });
    var search = document.getElementById("search");
    if (search) {
      search.addEventListener("input", function () {
        query = search.value.toLowerCase();
        redraw();
      });
    }
    var expand = document.getElementById("expand");
    if (expand) {
      expand.addEventListener("click", function () {
        openAll = expand.dataset.open !== "1";
        document.querySelectorAll("#timeline details").forEach(function (d) {
          d.open = openAll;
        });
        expand.dataset.open = openAll ? "1" : "0";
        expand.textContent = openAll ? "collapse all" : "expand all";
      });
    }
    window.addEventListener("hashchange", go);
    go();
    root.dataset.turns = String(D.turns.filter(function (t) { return t[0] !== 0; }).length);
    root.dataset.epochs = String(D.epochs.length);
    var bars = document.querySelector("#chart svg");
    root.dataset.requests = bars ? bars.dataset.bars : "0";
    root.dataset.items = String(D.turns.reduce(function (n, t) { return n + t[2].length; }, 0));
  }
  void document.body.offsetHeight;  // lay the page out before saying it is ready
  root.dataset.readyMs = String(Math.round(performance.now()));
  root.dataset.ready = "yes";
})();
"""
