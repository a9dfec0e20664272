"""``GET /docs``: the API reference as one HTML page, rendered here from the OpenAPI document.

No script, no stylesheet from elsewhere, nothing fetched: the page is made on the server from
``openapi_document()`` (every route with its summary, parameters and answers, then the schema
of every body and every event type) and works offline. Its one inline style is allowed by its
digest in ``DOCS_POLICY``, the page's content policy; nothing else is (the server's default
policy, ``default-src 'none'``, would leave the page unstyled). Every text taken from the
document is escaped.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from typing import Any

from .openapi import openapi_document

__all__ = ["DOCS_POLICY", "docs_page"]

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0 auto;max-width:60rem;padding:1rem;color:#222}
h1{font-size:1.5rem}h2{margin-top:2rem;border-bottom:1px solid #ddd}h3{font-size:1rem}
code,pre{font:13px ui-monospace,monospace;background:#f5f5f5;border-radius:4px}
pre{padding:.5rem;overflow-x:auto}.method{font-weight:bold;text-transform:uppercase}
ul{padding-left:1.2rem}
"""
_DIGEST = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
#: The page's content policy: its own inline style, and nothing else.
DOCS_POLICY = (
    f"default-src 'none'; style-src 'sha256-{_DIGEST}'; base-uri 'none'; form-action 'none'"
)


def _route(path: str, method: str, operation: dict[str, Any]) -> str:
    answers = "".join(
        f"<li><code>{escape(code)}</code> {escape(str(answer.get('description', '')))}</li>"
        for code, answer in sorted(operation.get("responses", {}).items())
    )
    params = "".join(
        f"<li><code>{escape(str(p.get('name')))}</code> ({escape(str(p.get('in')))})</li>"
        for p in operation.get("parameters", [])
    )
    body = operation.get("requestBody")
    shown = ""
    if body:
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        shown = f"<p>Body:</p><pre>{escape(json.dumps(schema, indent=2))}</pre>"
    return (
        f'<h3 id="{escape(method + path)}"><span class="method">{escape(method)}</span>'
        f" <code>{escape(path)}</code></h3><p>{escape(str(operation.get('summary', '')))}</p>"
        + (f"<p>Parameters:</p><ul>{params}</ul>" if params else "")
        + shown
        + f"<p>Answers:</p><ul>{answers}</ul>"
    )


def docs_page() -> str:
    """The whole reference page."""
    document = openapi_document()
    routes = "".join(
        _route(path, method, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
        if isinstance(operation, dict)
    )
    schemas = "".join(
        f'<h3 id="schema-{escape(name)}"><code>{escape(name)}</code></h3>'
        f"<pre>{escape(json.dumps(schema, indent=2))}</pre>"
        for name, schema in document["components"]["schemas"].items()
    )
    title = escape(str(document["info"]["title"]))
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title} API</title>'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<style>{_STYLE}</style></head><body><h1>{title} HTTP API</h1>"
        '<p>The same document as JSON: <a href="/openapi.json">/openapi.json</a>. Every'
        " event's data carries <code>type</code> and <code>schema_version</code>; the"
        " schemas named <code>Event.&lt;type&gt;</code> describe each.</p>"
        f"<h2>Routes</h2>{routes}<h2>Schemas</h2>{schemas}</body></html>"
    )
