"""Helpers for the MCP tests: where a tool's declaration sits in each lowered wire body."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import agentsession as ags

FORMATS = ("anthropic-messages", "openai-chat", "openai-responses", "gemini")
SCHEMA_KEYS = ("input_schema", "parameters", "parameters_json_schema")


def installed(script: str) -> str:
    """The console script of a test dependency, from the interpreter's own environment."""
    return str(Path(sys.executable).parent / script)


def declarations(body: Any, name: str) -> list[dict[str, Any]]:
    """Every schema declared for tool ``name`` anywhere in a lowered body."""
    found: list[dict[str, Any]] = []
    if isinstance(body, dict):
        if body.get("name") == name:
            found.extend(body[k] for k in SCHEMA_KEYS if isinstance(body.get(k), dict))
        for value in body.values():
            found.extend(declarations(value, name))
    elif isinstance(body, list):
        for value in body:
            found.extend(declarations(value, name))
    return found


def assert_every_format_declares(request: ags.Request, spec: ags.ToolSpec) -> None:
    """``request`` lowers in every wire format, each declaring ``spec`` with its schema as is."""
    for fmt in FORMATS:
        body = ags.lower(request, fmt)
        assert declarations(body, spec.name) == [spec.parameters], fmt
        json.dumps(body)  # the body is plain JSON


def tool_names(request: ags.Request) -> list[str]:
    return [t.name for t in request.tools]
