"""An MCP server over stdio, written on the wire (no SDK), offering ``CROWD_TOOLS`` tools at once.

The SDK registers tools one by one (seconds per hundred on a busy machine); this one answers
``initialize``, ``tools/list`` (every tool in one page) and ``tools/call`` (``tool_N`` says its
own name) straight from JSON-RPC lines, so 5,000 tools cost nothing to offer.
"""

from __future__ import annotations

import json
import os
import sys

COUNT = int(os.environ.get("CROWD_TOOLS", "5000"))
TOOLS = [
    {
        "name": f"tool_{n}",
        "description": f"Tool number {n}.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }
    for n in range(COUNT)
]


def answer(request: dict[str, object]) -> dict[str, object] | None:
    method = request.get("method")
    if "id" not in request:
        return None  # a notification
    if method == "initialize":
        params = request.get("params")
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        result: dict[str, object] = {
            "protocolVersion": version if version == "2025-06-18" else "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "crowd", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        params = request.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        result = {"content": [{"type": "text", "text": f"{name} answered"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": request["id"],
            "error": {"code": -32601, "message": f"unknown method {method}"},
        }
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        reply = answer(json.loads(line))
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
