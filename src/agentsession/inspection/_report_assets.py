"""The inline style of the HTML report (kept apart from the markup that uses it).

The report's script is ``_report_script``; the data it draws from is ``_report_data``.
"""

from __future__ import annotations

__all__ = ["STYLE"]

STYLE = """
:root{--fg:#1d2330;--muted:#5f6b7a;--bg:#fff;--panel:#f4f6f9;--line:#d9dee6;
--cacheable:#3f9b6e;--new:#e08a2e;--reported:#1d2330;--warn:#b3261e;--accent:#2f5fb3}
@media (prefers-color-scheme:dark){:root{--fg:#e4e8ee;--muted:#9aa5b4;--bg:#14171c;
--panel:#1d2128;--line:#30363f;--reported:#f2f4f7;--accent:#7aa5f0}}
*{box-sizing:border-box}[hidden]{display:none!important}
body{margin:0 auto;max-width:1200px;padding:24px;font:14px/1.5 system-ui,-apple-system,
"Segoe UI",sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:32px 0 8px;border-bottom:1px solid
var(--line);padding-bottom:4px}h3{font-size:15px;margin:16px 0 6px}
code,pre{font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{white-space:pre-wrap;word-break:break-word;background:var(--panel);padding:8px;
border-radius:6px;margin:4px 0 8px;max-height:420px;overflow:auto}
a{color:var(--accent)}.meta{color:var(--muted);margin:2px 0}
nav{margin:12px 0;color:var(--muted)}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:8px;
margin:16px 0}.stats div{background:var(--panel);border-radius:8px;padding:8px 10px}
.stats dt{color:var(--muted);font-size:12px}.stats dd{margin:0;font-size:16px;font-weight:600}
.legend{color:var(--muted)}.key{display:inline-block;width:12px;height:12px;
border-radius:2px;vertical-align:-1px;margin:0 4px 0 10px}
.key.cacheable{background:var(--cacheable)}.key.new{background:var(--new)}
.key.reported{background:var(--reported);height:3px;vertical-align:3px}
.chart{overflow-x:auto;border:1px solid var(--line);border-radius:8px;padding:6px;
background:var(--panel)}
svg .cacheable{fill:var(--cacheable)}svg .new{fill:var(--new)}
svg .reported{stroke:var(--reported);stroke-width:2}svg .base{stroke:var(--muted)}
svg .grid{stroke:var(--line)}svg .reported{fill:none}svg{cursor:pointer}
svg .epoch-line{stroke:var(--muted);stroke-dasharray:3 3}svg .axis{fill:var(--muted);
font-size:11px}svg .req:hover rect{opacity:.75}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{text-align:left;padding:3px 6px;border-bottom:1px solid var(--line);
vertical-align:top}th{color:var(--muted);font-weight:600;font-size:12px}
.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:flex;width:140px;height:10px;background:var(--panel);border-radius:2px;
overflow:hidden;margin-top:4px}.bar .cacheable{background:var(--cacheable)}
.bar .new{background:var(--new)}
.diag-hit{color:var(--cacheable)}.diag-first,.diag-unknown{color:var(--muted)}
.diag-failed{color:var(--warn);font-weight:600}
.warn,[class*="diag-"][class*="changed"]{color:var(--warn)}
details.table>summary,.sections summary{cursor:pointer}
.epochs{list-style:none;padding:0}.epoch{border-left:3px solid var(--accent);
padding-left:10px;margin-bottom:12px}.sections{list-style:none;padding-left:0;margin:4px 0}
.tok{color:var(--muted)}
.filters{display:flex;flex-wrap:wrap;gap:10px;align-items:center;position:sticky;top:0;
background:var(--bg);padding:6px 0;z-index:1;border-bottom:1px solid var(--line)}
.filters input[type=search]{flex:1;min-width:160px;padding:3px 6px}
.turn{content-visibility:auto;contain-intrinsic-size:auto 300px}
.turn h3{position:relative;background:var(--panel);padding:4px 8px;border-radius:6px}
.items{list-style:none;padding:0;margin:0}
.item{padding:2px 0 2px 8px;border-left:3px solid var(--line);margin:2px 0}
.item .seq{color:var(--muted);font-size:11px;display:inline-block;min-width:48px}
.item time{color:var(--muted);font-size:11px;margin-right:8px}
.item details,.item .text{margin-left:56px;display:block;white-space:pre-wrap}
.item .text{color:var(--fg)}.item summary{color:var(--muted);cursor:pointer;
overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.cat-conversation{border-left-color:var(--accent)}.cat-context{border-left-color:#8a63d2}
.cat-request{border-left-color:var(--new)}.cat-state{border-left-color:var(--cacheable)}
.cat-other{border-left-color:var(--muted)}
.kind-epoch .title,.item[data-kind=epoch] .title{font-weight:600}
#page-error{background:var(--warn);color:#fff;padding:8px;border-radius:6px}
footer{margin:40px 0 0;color:var(--muted);font-size:12px}
details.sent summary{cursor:pointer;color:var(--accent)}
.sent-row>td{background:var(--bg)}.sent-body{max-height:600px}
.item .as-sent{font-size:12px}
#more{margin:12px 0}#chart-tip{min-height:1.5em}
.waterfall{margin:4px 0 8px;font-size:12px}
.span{display:grid;grid-template-columns:180px 1fr 220px;gap:8px;align-items:center}
.span-label{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.track{position:relative;height:10px;background:var(--panel);border-radius:2px}
.span-bar{position:absolute;top:0;bottom:0;min-width:2px;background:var(--accent);
border-radius:2px}.span-tool .span-bar{background:var(--cacheable)}
.span-side_call .span-bar{background:var(--new)}.span.failed .span-bar{background:var(--warn)}
.span.failed .span-time{color:var(--warn);font-weight:600}
.track .mark{position:absolute;top:-2px;bottom:-2px;width:2px;background:var(--fg)}
.span-time{color:var(--muted);font-variant-numeric:tabular-nums}
"""
