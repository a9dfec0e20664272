"""The HTML session report: one self-contained file, readable offline in any browser.

``render_report`` turns an ``Inspection`` into a page with the session's figures, a chart of
every dispatched request's prompt split into the part repeating the previous request's prefix
(what a prompt cache can serve) and the new part, beside the provider-reported cached tokens and
the local diagnosis; the epochs with their baseline sections; and the timeline of the log grouped
by turn. ``render_index`` lists sessions, each linking to its own report.

Everything is inline — CSS, a little script, the SVG chart — and a Content-Security-Policy
forbids the page any fetch, so a report opened from disk, mailed or archived stays whole and
private. The timeline renders every entry kind: kinds without a sentence of their own come out
of ``describe`` from their stored fields. Long texts are cut, and rows are laid out lazily by the
browser (``content-visibility``), so a session of ten thousand entries opens without stalling.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape

from ._report_assets import SCRIPT, STYLE
from .describe import EPOCH_REASONS, preview
from .views import EpochInfo, Inspection, MessageCounts, RequestInfo, TimelineItem, TurnInfo

__all__ = ["IndexEntry", "render_index", "render_report"]

_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:;"
    " base-uri 'none'; form-action 'none'"
)
_ITEM_CHARS = 1_500
_INLINE_CHARS = 160
_OPEN_TABLE = 40  # requests shown without a click
_CHART_WIDTH = 1080  # px the bars of a short session spread over
_MIN_BAR, _MAX_BAR = 3, 36  # px per request
_LEFT = 56
_CHART_HEIGHT = 200


@dataclass(frozen=True)
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


def _page(title: str, body: Iterable[str], footer: str) -> str:
    head = (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
    )
    tail = f"<footer>{footer}</footer><script>{SCRIPT}</script></body></html>\n"
    return head + "".join(body) + tail


def _n(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _time(stamp: str) -> str:
    return stamp[11:19] if len(stamp) >= 19 else stamp


def _when(stamp: str) -> str:
    return stamp[:19].replace("T", " ") if stamp else "–"


def _counts(counts: MessageCounts) -> str:
    return f"{counts.user:,} user · {counts.assistant:,} assistant · {counts.tool:,} tool"


def render_report(inspection: Inspection, *, generated: str, version: str) -> str:
    """The self-contained HTML report of one session."""
    ins = inspection
    title = ins.title or "(untitled session)"
    body = [
        "<div id='page-error' hidden></div>",
        f"<header><h1>{escape(title)}</h1>",
        f"<p class='meta'>session <code>{escape(ins.session_id)}</code> · model "
        f"<code>{escape(ins.model or '–')}</code> · created {_when(ins.created_at)} · "
        f"last activity {_when(ins.updated_at)}</p>",
        _stats(ins),
        "</header>",
        "<nav><a href='#requests'>Requests and the prompt cache</a> · <a href='#epochs'>Epochs"
        "</a> · <a href='#timeline'>Timeline</a></nav>",
        _requests_section(ins.requests),
        _epochs_section(ins.epochs),
        _timeline_section(ins.timeline, ins.turns),
    ]
    footer = f"agentsession {escape(version)} · generated {escape(_when(generated))}"
    return _page(f"{title} — agentsession report", body, footer)


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
    ]


def _requests_section(requests: Sequence[RequestInfo]) -> str:
    if not requests:
        return "<section id='requests'><h2>Requests</h2><p>No request was dispatched.</p></section>"
    inexact = [r for r in requests if not r.exact]
    warning = ""
    if inexact:
        warning = (
            f"<p class='warn'>{len(inexact):,} request(s) could not be rebuilt byte for byte "
            f"({escape(inexact[0].mismatch)}); their sizes are approximate.</p>"
        )
    rows = "".join(_request_row(r, max(x.tokens for x in requests)) for r in requests)
    return (
        "<section id='requests'><h2>Requests and the prompt cache</h2>"
        "<p class='legend'><span class='key cacheable'></span> repeats the previous request's "
        "prefix (a prompt cache can serve it) <span class='key new'></span> new "
        "<span class='key reported'></span> cached tokens the provider reported · dashed: "
        "a new epoch</p>"
        f"{warning}<div class='chart'>{_chart(requests)}</div>"
        f"<details class='table'{' open' if len(requests) <= _OPEN_TABLE else ''}>"
        "<summary>Every request</summary><table class='requests'>"
        "<thead><tr><th>#</th><th>turn</th><th>step</th><th>model</th><th>epoch</th>"
        "<th>prompt</th><th class='num'>tokens</th><th class='num'>cacheable</th>"
        "<th class='num'>new</th><th class='num'>provider input</th>"
        "<th class='num'>provider cached</th><th>diagnosis</th><th>provider diagnosis</th>"
        "<th class='num'>cost</th><th>rebuilt</th></tr></thead>"
        f"<tbody>{rows}</tbody></table></details></section>"
    )


def _request_row(r: RequestInfo, top: int) -> str:
    scale = 100 / top if top else 0
    bar = (
        f"<span class='bar'><span class='cacheable' style='width:{r.cacheable * scale:.1f}%'>"
        f"</span><span class='new' style='width:{r.new * scale:.1f}%'></span></span>"
    )
    exact = "exact" if r.exact else f"<span class='warn'>{escape(r.mismatch)}</span>"
    return (
        f"<tr id='request-{r.number}' data-cache='{escape(r.cache)}'><td>{r.number}</td>"
        f"<td>{r.turn}</td><td>{r.step}</td><td>{escape(r.model)}</td>"
        f"<td>{_n(r.epoch)}</td><td>{bar}</td><td class='num'>{r.tokens:,}</td>"
        f"<td class='num'>{r.cacheable:,}</td><td class='num'>{r.new:,}</td>"
        f"<td class='num'>{_n(r.reported_input)}</td><td class='num'>{_n(r.reported_cached)}</td>"
        f"<td class='diag diag-{escape(r.cache)}'>{escape(r.cache)}</td>"
        f"<td>{escape(r.provider_cache) or '–'}</td><td class='num'>{_usd(r.cost_usd)}</td>"
        f"<td>{exact}</td></tr>"
    )


def _chart(requests: Sequence[RequestInfo]) -> str:
    top = max(max(r.tokens for r in requests), 1)
    bar = max(_MIN_BAR, min(_MAX_BAR, _CHART_WIDTH // len(requests)))
    width = max(len(requests) * bar + _LEFT + 10, 320)
    y = _CHART_HEIGHT - 20

    def scaled(tokens: int) -> float:
        return tokens * (_CHART_HEIGHT - 40) / top

    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{_CHART_HEIGHT}' "
        "role='img' aria-label='prompt tokens per request'>"
    ]
    for share in (1.0, 0.5):
        gy = y - scaled(round(top * share))
        parts.append(
            f"<line x1='{_LEFT}' x2='{width}' y1='{gy:.1f}' y2='{gy:.1f}' class='grid'/>"
            f"<text x='4' y='{gy + 4:.1f}' class='axis'>{round(top * share):,}</text>"
        )
    parts.append(f"<line x1='{_LEFT}' x2='{width}' y1='{y}' y2='{y}' class='base'/>")
    parts.append(f"<text x='{_LEFT}' y='{_CHART_HEIGHT - 4}' class='axis'>request 1 →</text>")
    previous_epoch: int | None = None
    for i, r in enumerate(requests):
        x = _LEFT + i * bar
        if r.epoch != previous_epoch and i:
            edge = x - 0.5
            parts.append(f"<line x1='{edge}' x2='{edge}' y1='8' y2='{y}' class='epoch-line'/>")
        previous_epoch = r.epoch
        parts.append(_bar(r, x, y, bar, scaled))
    parts.append("</svg>")
    return "".join(parts)


def _bar(r: RequestInfo, x: int, y: int, bar: int, scaled: Callable[[int], float]) -> str:
    cached_h, new_h = scaled(r.cacheable), scaled(r.new)
    w = max(bar - 1, 1)
    tip = (
        f"request {r.number} (turn {r.turn}, epoch {_n(r.epoch)}): {r.tokens:,} tokens, "
        f"{r.cacheable:,} repeating the previous prefix, {r.new:,} new; provider cached "
        f"{_n(r.reported_cached)}; diagnosis {r.cache}"
    )
    group = [
        f"<g class='req'><title>{escape(tip)}</title>",
        f"<rect class='cacheable' x='{x}' y='{y - cached_h:.1f}' width='{w}' "
        f"height='{cached_h:.1f}'/>",
        f"<rect class='new' x='{x}' y='{y - cached_h - new_h:.1f}' width='{w}' "
        f"height='{new_h:.1f}'/>",
    ]
    if r.reported_cached:
        ry = y - scaled(r.reported_cached)
        group.append(f"<line class='reported' x1='{x}' x2='{x + w}' y1='{ry:.1f}' y2='{ry:.1f}'/>")
    group.append("</g>")
    return "".join(group)


def _epochs_section(epochs: Sequence[EpochInfo]) -> str:
    if not epochs:
        return "<section id='epochs'><h2>Epochs</h2><p>No epoch has started yet.</p></section>"
    items = "".join(_epoch(e) for e in epochs)
    return f"<section id='epochs'><h2>Epochs</h2><ol class='epochs'>{items}</ol></section>"


def _epoch(e: EpochInfo) -> str:
    why = EPOCH_REASONS.get(e.reason, e.reason)
    total = sum(s.tokens for s in e.sections)
    rows = "".join(
        f"<li><details><summary><code>{escape(s.label)}</code> <span class='tok'>{s.tokens:,} "
        f"tokens</span></summary><pre>{escape(preview(s.text, _ITEM_CHARS))}</pre></details></li>"
        for s in e.sections
    )
    tools = ", ".join(e.tools) if e.tools else "none"
    removed = f" · removed: {escape(', '.join(e.removed))}" if e.removed else ""
    return (
        f"<li class='epoch' id='epoch-{e.number}' data-reason='{escape(e.reason)}'>"
        f"<h3>Epoch {e.number} · {escape(why)}</h3><p class='meta'>from turn {e.turn} "
        f"(log seq {e.seq}) · {escape(e.model or '–')} · {_when(e.timestamp)} · baseline "
        f"{total:,} tokens · tools: {escape(tools)}{removed}</p><ul class='sections'>{rows}</ul>"
        "</li>"
    )


def _timeline_section(items: Sequence[TimelineItem], turns: Sequence[TurnInfo]) -> str:
    by_turn: dict[int, list[TimelineItem]] = {}
    for item in items:
        by_turn.setdefault(item.turn, []).append(item)
    info = {t.number: t for t in turns}
    categories = sorted({i.category for i in items})
    boxes = "".join(
        f"<label><input type='checkbox' data-category='{c}' checked> {c}</label>"
        for c in categories
    )
    blocks = "".join(_turn_block(n, by_turn[n], info.get(n)) for n in sorted(by_turn))
    return (
        "<section id='timeline'><h2>Timeline</h2>"
        f"<div class='filters'>{boxes}<input type='search' id='search' "
        "placeholder='filter entries…'><button type='button' id='expand'>expand all</button>"
        f"</div>{blocks}</section>"
    )


def _turn_block(number: int, items: Sequence[TimelineItem], turn: TurnInfo | None) -> str:
    if turn is None:
        head = "Before the first prompt"
    else:
        head = (
            f"Turn {number} · {_when(turn.timestamp)} · {escape(turn.outcome)} · "
            f"{turn.requests} request{'s' if turn.requests != 1 else ''} · {turn.tool_calls} "
            f"tool call{'s' if turn.tool_calls != 1 else ''}"
        )
    rows = "".join(_item(i) for i in items)
    return (
        f"<section class='turn' data-turn='{number}'><h3>{head}</h3>"
        f"<ol class='items'>{rows}</ol></section>"
    )


def _item(item: TimelineItem) -> str:
    text = preview(item.text, _ITEM_CHARS)
    first = text.split("\n", 1)[0]
    if not text:
        body = ""
    elif first == text and len(text) <= _INLINE_CHARS:
        body = f"<span class='text'>{escape(text)}</span>"
    else:
        body = (
            f"<details><summary>{escape(preview(first, _INLINE_CHARS))}</summary>"
            f"<pre>{escape(text)}</pre></details>"
        )
    return (
        f"<li class='item cat-{item.category}' data-category='{item.category}' "
        f"data-kind='{escape(item.kind)}'><span class='seq'>#{item.seq}</span>"
        f"<time title='{escape(item.timestamp)}'>{escape(_time(item.timestamp))}</time>"
        f"<span class='title'>{escape(item.title)}</span>{body}</li>"
    )


def render_index(entries: Sequence[IndexEntry], *, generated: str, version: str) -> str:
    """An index page of session reports, most recent activity first."""
    rows = "".join(
        f"<tr><td><a href='{escape(e.href)}'>{escape(e.title or '(untitled)')}</a></td>"
        f"<td><code>{escape(e.session_id)}</code></td><td>{escape(e.model or '–')}</td>"
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
