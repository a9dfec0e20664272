r"""Text from a log, a file or a model made safe to print: control characters made visible.

A session id, a title, a model string, a tool result or a reply may hold terminal escape
sequences (an imported file, a hostile server or a prompt-injected model wrote them). Printed
raw they could retitle the window, clear the screen, rewrite earlier lines or hide text. Every
command-line output of such text passes ``visible``: each control character other than newline
and tab (C0, DEL, C1), and the bidirectional overrides that reorder what is shown, becomes its
``\xNN`` / ``\uNNNN`` escape, so the reader sees that it was there and the terminal obeys none.
"""

from __future__ import annotations

import re

__all__ = ["visible", "visible_json", "visible_line"]

_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_LINE_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029]")
# JSON escapes C0 itself; these it would write raw.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}\u2028\u2029]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character except newline and tab shown as its escape."""
    return _CONTROL.sub(_escape, text)


def visible_json(text: str) -> str:
    """JSON text with the control characters ``json.dumps`` leaves raw written as escapes.

    The result is still valid JSON that decodes to the same value.
    """
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def visible_line(text: str) -> str:
    """Like ``visible``, for a one-line field (an id, a title): newlines and tabs shown too."""
    return _LINE_CONTROL.sub(_escape, text)
