"""The HTML session report: one self-contained file, readable offline in any browser.

``render_report`` turns an ``Inspection`` into a page with the session's figures, a chart of
every dispatched request's prompt split into the part repeating the previous request's prefix
(what a prompt cache can serve) and the new part, beside the provider-reported cached tokens and
the local diagnosis; the table of every request, each openable as sent; the epochs with their
baseline sections; and the timeline of the log grouped by turn, each turn headed by its tokens
and cost and its waterfall (``inspection.timing``: requests with their latency and time to
first token, tool runs, side calls; a failed request red). ``render_index`` lists
sessions, each linking to its own report.

Everything is inline — CSS, the script, the data — and a Content-Security-Policy forbids the
page any fetch and any inline script or style but its own (named by their hashes, never
``'unsafe-inline'``), so a report opened from disk, mailed or archived stays whole and private. The
figures are markup; the requests, epochs and timeline are data embedded once
(``_report_data``: a session's requests repeat one another, so each message is stored once and
a request is a list of references) that the script draws as they come into view
(``_report_script``), so a session of ten thousand entries stays small and opens at once.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Sequence
from html import escape

from .._frozen import frozen
from ..hygiene import visible, visible_line
from ..ledger import CacheMiss, IdleCall
from ._report_assets import STYLE
from ._report_data import embed, report_data
from ._report_script import SCRIPT
from .views import Inspection, MessageCounts, RequestInfo, TimelineItem

__all__ = ["REPORT_POLICY", "REPORT_SOURCES", "IndexEntry", "render_index", "render_report"]


def _digest(text: str) -> str:
    """A CSP source naming an inline element by the hash of its text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


#: The report's policy: its own style and script by hash (nothing else inline runs), no fetch.
#: The page carries it in a ``<meta>``; the server also sends it as a header.
REPORT_POLICY = (
    f"default-src 'none'; style-src {_digest(STYLE)}; script-src {_digest(SCRIPT)};"
    " img-src data:; base-uri 'none'; form-action 'none'"
)
#: The sources the report needs from a page that opens it in a window of its own (the web UI).
REPORT_SOURCES = (_digest(STYLE), _digest(SCRIPT))
_OPEN_TABLE = 40  # requests shown without a click
_NOSCRIPT = (
    "<noscript><p class='warn'>The requests, epochs and timeline of this report are drawn by "
    "its script: open it with scripting on.</p></noscript>"
)


@frozen
class IndexEntry:
    """One row of the index page: a session's figures and where its report is."""

    session_id: str
    title: str | None
    model: str
    updated_at: str
    counts: MessageCounts
    turns: int
    epochs: int
    requests: int
    href: str

    @classmethod
    def of(cls, inspection: Inspection, href: str) -> IndexEntry:
        """The row of ``inspection``, linking to ``href``."""
        return cls(
            inspection.session_id,
            inspection.title,
            inspection.model,
            inspection.updated_at,
            inspection.counts,
            len(inspection.turns),
            len(inspection.epochs),
            len(inspection.requests),
            href,
        )


def _page(title: str, body: Iterable[str], footer: str, data: str = "") -> str:
    head = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{REPORT_POLICY}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
    )
    if data:
        data = f"<script type='application/json' id='report-data'>{data}</script>"
    tail = f"<footer>{footer}</footer>{data}<script>{SCRIPT}</script></body></html>\n"
    return head + "".join(body) + tail


def _n(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") if stamp else "–"


def _counts(counts: MessageCounts) -> str:
    return f"{counts.user:,} user · {counts.assistant:,} assistant · {counts.tool:,} tool"


def render_report(inspection: Inspection, *, generated: str, version: str) -> str:
    """The self-contained HTML report of one session."""
    ins = inspection
    title = visible_line(ins.title or "(untitled session)")
    body = [
        "<div id='page-error' hidden></div>",
        _NOSCRIPT,
        f"<header><h1>{escape(title)}</h1>",
        f"<p class='meta'>session <code>{escape(visible_line(ins.session_id))}</code> · model "
        f"<code>{escape(visible_line(ins.model or '–'))}</code> · created "
        f"{escape(_when(ins.created_at))} · last activity {escape(_when(ins.updated_at))}</p>",
        _stats(ins),
        "</header>",
        "<nav><a href='#requests'>Requests and the prompt cache</a> · <a href='#epochs'>Epochs"
        "</a> · <a href='#timeline'>Timeline</a></nav>",
        _requests_section(ins.requests),
        _epochs_section(bool(ins.epochs)),
        _timeline_section(ins.timeline),
    ]
    footer = f"agentsession {escape(version)} · generated {escape(_when(generated))}"
    return _page(f"{title} — agentsession report", body, footer, embed(report_data(ins)))


def _stats(ins: Inspection) -> str:
    tokens = sum(r.tokens for r in ins.requests)
    cacheable = sum(r.cacheable for r in ins.requests)
    share = f"{cacheable / tokens:.0%}" if tokens else "–"
    reported = [r for r in ins.requests if r.reported_cached is not None]
    cached = sum(r.reported_cached or 0 for r in reported)
    stats = [
        ("turns", "turn-count", f"{len(ins.turns):,}"),
        ("epochs", "epoch-count", f"{len(ins.epochs):,}"),
        ("requests", "request-count", f"{len(ins.requests):,}"),
        ("messages", "message-count", _counts(ins.counts)),
        ("log entries", "entry-count", f"{ins.entries:,}"),
        ("prompt tokens (measured)", "token-count", f"{tokens:,}"),
        ("repeating the previous prefix", "cacheable-share", share),
        ("cached, as the provider reported", "reported-cached", f"{cached:,}"),
        *_cost_stats(ins),
    ]
    cells = "".join(
        f"<div><dt>{label}</dt><dd id='{ident}'>{value}</dd></div>" for label, ident, value in stats
    )
    return f"<dl class='stats'>{cells}</dl>"


def _usd(value: float | None) -> str:
    return "no price" if value is None else f"${value:,.4f}"


def _cost_stats(ins: Inspection) -> list[tuple[str, str, str]]:
    """The session's cost totals, the same figures ``agentsession cost`` prints."""
    cost = ins.cost
    if cost is None:
        return []
    return [
        ("cost (USD)", "cost-total", _usd(cost.total_usd)),
        ("without caching", "cost-uncached", _usd(cost.uncached_usd)),
        ("saved by caching", "cost-saved", _usd(cost.saved_usd)),
        ("unexplained cache misses", "unexplained-misses", f"{cost.unexplained_misses:,}"),
        ("cache misses", "cache-misses", _misses(cost.misses)),
        ("idle calls", "idle-calls", _idle_calls(cost.idle_calls)),
    ]


def _idle_calls(calls: Sequence[IdleCall]) -> str:
    """``N · $X``, each call's reason in the title (``Runtime.tend_idle``'s calls)."""
    if not calls:
        return "0"
    total = None if any(c.usd is None for c in calls) else sum(c.usd or 0 for c in calls)
    reasons = escape("\n".join(f"#{c.seq} {c.purpose}: {c.reason}" for c in calls), quote=True)
    return f"<span title='{reasons}'>{len(calls):,} · {_usd(total)}</span>"


def _misses(misses: Sequence[CacheMiss]) -> str:
    """``N · $X`` and the count and cost per cause, as ``agentsession cost`` sums them."""
    if not misses:
        return "0"
    causes: dict[str, list[CacheMiss]] = {}
    for miss in misses:
        causes.setdefault(miss.cause, []).append(miss)

    def usd(items: Sequence[CacheMiss]) -> str:
        return _usd(None if any(m.usd is None for m in items) else sum(m.usd or 0 for m in items))

    parts = " · ".join(f"{cause} {len(items)} {usd(items)}" for cause, items in causes.items())
    return f"{len(misses):,} · {usd(misses)} ({parts})"


def _requests_section(requests: Sequence[RequestInfo]) -> str:
    if not requests:
        return "<section id='requests'><h2>Requests</h2><p>No request was dispatched.</p></section>"
    inexact = [r for r in requests if not r.exact]
    warning = ""
    if inexact:
        warning = (
            f"<p class='warn'>{len(inexact):,} request(s) could not be rebuilt byte for byte "
            f"({escape(visible(inexact[0].mismatch))}); their sizes are approximate.</p>"
        )
    return (
        "<section id='requests'><h2>Requests and the prompt cache</h2>"
        "<p class='legend'><span class='key cacheable'></span> repeats the previous request's "
        "prefix (a prompt cache can serve it) <span class='key new'></span> new "
        "<span class='key reported'></span> cached tokens the provider reported · dashed: "
        "a new epoch</p>"
        f"{warning}<div class='chart' id='chart'></div><p class='meta' id='chart-tip'></p>"
        f"<details class='table' id='request-table'"
        f"{' open' if len(requests) <= _OPEN_TABLE else ''}>"
        "<summary>Every request</summary><table class='requests'>"
        "<thead><tr><th>#</th><th>turn</th><th>step</th><th>model</th><th>epoch</th>"
        "<th>prompt</th><th class='num'>tokens</th><th class='num'>cacheable</th>"
        "<th class='num'>new</th><th class='num'>provider input</th>"
        "<th class='num'>provider cached</th><th>diagnosis</th><th>provider diagnosis</th>"
        "<th>deferred tools</th>"
        "<th class='num'>cost</th><th class='num'>latency</th><th class='num'>first token</th>"
        "<th>rebuilt</th><th>as sent</th></tr></thead>"
        "<tbody></tbody></table></details></section>"
    )


def _epochs_section(any_epoch: bool) -> str:
    if not any_epoch:
        return "<section id='epochs'><h2>Epochs</h2><p>No epoch has started yet.</p></section>"
    return (
        "<section id='epochs'><h2>Epochs</h2><ol class='epochs' id='epoch-list'></ol>"
        "<button type='button' id='epochs-more' hidden>show every epoch</button></section>"
    )


def _timeline_section(items: Sequence[TimelineItem]) -> str:
    categories = sorted({i.category for i in items})
    boxes = "".join(
        f"<label><input type='checkbox' data-category='{c}' checked> {c}</label>"
        for c in categories
    )
    return (
        "<section id='timeline'><h2>Timeline</h2>"
        f"<div class='filters'>{boxes}<input type='search' id='search' "
        "placeholder='filter entries…'><button type='button' id='expand'>expand all</button>"
        "</div><div id='turns'></div><button type='button' id='more' hidden>show more</button>"
        "</section>"
    )


def render_index(entries: Sequence[IndexEntry], *, generated: str, version: str) -> str:
    """An index page of session reports, most recent activity first."""
    rows = "".join(
        f"<tr><td><a href='{escape(e.href)}'>{escape(visible_line(e.title or '(untitled)'))}"
        f"</a></td><td><code>{escape(visible_line(e.session_id))}</code></td>"
        f"<td>{escape(visible_line(e.model or '–'))}</td>"
        f"<td>{_counts(e.counts)}</td><td class='num'>{e.turns:,}</td>"
        f"<td class='num'>{e.epochs:,}</td><td class='num'>{e.requests:,}</td>"
        f"<td>{_when(e.updated_at)}</td></tr>"
        for e in sorted(entries, key=lambda e: e.updated_at, reverse=True)
    )
    body = [
        "<div id='page-error' hidden></div>",
        f"<header><h1>Sessions</h1><p class='meta' id='session-count'>{len(entries):,} "
        "sessions</p></header>",
        "<table class='index'><thead><tr><th>title</th><th>session</th><th>model</th>"
        "<th>messages</th><th class='num'>turns</th><th class='num'>epochs</th>"
        "<th class='num'>requests</th><th>last activity</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>",
    ]
    footer = f"agentsession {escape(version)} · generated {escape(_when(generated))}"
    return _page("Sessions — agentsession report", body, footer)
