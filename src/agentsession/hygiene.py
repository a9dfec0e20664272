r"""Text hygiene: every string that enters the log must encode, and tool output must stay bounded.

Two pure functions, usable on any text before it is stored: ``replace_surrogates`` turns lone
surrogate code points (``os.listdir`` yields them for file names that are not valid UTF-8) into
U+FFFD, joining well-formed surrogate pairs into the character they stand for; ``truncate_middle``
keeps the head and the tail of an over-long text with a marker saying how much was cut, because the
end of a command's output (the error, the summary) matters as much as its start. ``clean_text``
applies both and appends a short note when characters were replaced. NUL characters are valid
Unicode and are kept. ``repaired`` does the replacement over every string of a value (a reply, a
request: its text, tool names, argument keys and values), and ``SurrogateJoiner`` over a stream of
text pieces, joining a pair a proxy split between two pieces.

Text leaving for a terminal passes ``visible``: a session id, a title, a model string, a tool
result or a reply may hold escape sequences (an imported file, a hostile server or a
prompt-injected model wrote them). Each control character other than newline and tab (C0, DEL,
C1) and each bidirectional override becomes its ``\xNN`` / ``\uNNNN`` escape, so the reader sees
that it was there and the terminal obeys none.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any, TypeVar, cast

from .errors import UsageError
from .request import ContentPart, ImagePart, TextPart

__all__ = [
    "SurrogateJoiner",
    "clean_text",
    "has_surrogates",
    "prompt_content",
    "repaired",
    "replace_surrogates",
    "truncate_middle",
    "visible",
    "visible_json",
    "visible_line",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"
T = TypeVar("T")


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds surrogate code points (it then cannot be encoded as UTF-8)."""
    # Most text is ASCII, which holds none: a C check of the string's kind, no regex scan.
    return not text.isascii() and _SURROGATE.search(text) is not None


def replace_surrogates(text: str) -> tuple[str, int]:
    """``text`` with every lone surrogate replaced by U+FFFD, and how many were replaced.

    A high surrogate directly followed by a low one is a pair that some decoders leave split; it is
    joined into the character it encodes rather than lost.
    """
    if not has_surrogates(text):
        return text, 0
    before = text.count(REPLACEMENT)
    # UTF-16 with surrogatepass writes every code point as-is; decoding joins valid pairs and turns
    # each unpaired surrogate into U+FFFD.
    cleaned = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return cleaned, cleaned.count(REPLACEMENT) - before


def repaired(value: T) -> tuple[T, int]:
    """``value`` with lone surrogates replaced in every string it holds, and how many were.

    Walks strings, dict keys and values, lists, tuples and dataclass fields; a part without
    any comes back as the same object, so a clean value keeps its identity (and its memos).
    """
    fixed, count = _repaired(value)
    return cast(T, fixed), count


def _repaired(value: Any) -> tuple[Any, int]:
    # An unchanged part is returned as the same object: a joined pair changes a string
    # without counting as a lone half.
    if isinstance(value, str):
        return replace_surrogates(value)
    if isinstance(value, dict):
        items = [(_repaired(k), _repaired(v)) for k, v in value.items()]
        if all(
            k[0] is key and v[0] is val
            for (k, v), (key, val) in zip(items, value.items(), strict=True)
        ):
            return value, 0
        return {k[0]: v[0] for k, v in items}, sum(k[1] + v[1] for k, v in items)
    if isinstance(value, list | tuple):
        parts = [_repaired(v) for v in value]
        if all(fixed is v for (fixed, _), v in zip(parts, value, strict=True)):
            return value, 0
        fixed_items = [v for v, _ in parts]
        count = sum(n for _, n in parts)
        return (fixed_items if isinstance(value, list) else tuple(fixed_items)), count
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes: dict[str, Any] = {}
        total = 0
        for item in dataclasses.fields(value):
            if item.init:
                old = getattr(value, item.name)
                fixed_field, count = _repaired(old)
                if fixed_field is not old:
                    changes[item.name] = fixed_field
                    total += count
        return (dataclasses.replace(value, **changes), total) if changes else (value, 0)
    return value, 0


class SurrogateJoiner:
    """Text pieces made valid as they stream, a pair split between two pieces joined.

    A high surrogate ending one piece waits for the next, which may start with its low half (a
    proxy cut the text by UTF-16 units). The pieces ``feed`` and ``finish`` return, joined,
    equal ``replace_surrogates`` of the whole text.
    """

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        """What of ``piece`` (after anything held) can be shown now, made valid."""
        text = self._held + piece
        self._held = ""
        if not has_surrogates(text):
            return text
        if "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        return replace_surrogates(text)[0]

    def finish(self) -> str:
        """What is left at the end: a high half no piece completed, as U+FFFD."""
        held, self._held = self._held, ""
        return REPLACEMENT if held else ""


def truncate_middle(text: str, limit: int | None) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` characters keeping head and tail, and how many were cut.

    The cut is replaced by a marker line naming the number of omitted characters; the marker
    counts towards ``limit`` (a limit too small for the marker keeps the head alone). ``None`` or
    ``0`` disables the limit.
    """
    if not limit or len(text) <= limit:
        return text, 0
    total = len(text)
    # The marker's length depends on the count it names; the total's digit count bounds it.
    marker_size = len(_marker(total, total))
    keep = limit - marker_size
    if keep <= 0:
        return text[:limit], total - limit
    head = (keep + 1) // 2
    tail = keep - head
    cut = total - keep
    return text[:head] + _marker(cut, total) + (text[total - tail :] if tail else ""), cut


def _marker(cut: int, total: int) -> str:
    return f"\n[... {cut:,} of {total:,} characters omitted ...]\n"


def clean_text(text: str, limit: int | None = None) -> str:
    """``text`` made safe to store: surrogates replaced (with a note), then bounded by ``limit``.

    The note is appended after truncation so that it is never the part that gets cut.
    """
    cleaned, replaced = replace_surrogates(text)
    bounded, _ = truncate_middle(cleaned, limit)
    if replaced:
        plural = "s" if replaced != 1 else ""
        bounded += (
            f"\n[note: {replaced} invalid character{plural} (lone surrogate{plural}, e.g. from a"
            " file name that is not valid UTF-8) replaced with U+FFFD]"
        )
    return bounded


def prompt_content(text: str | Sequence[ContentPart]) -> str | tuple[ContentPart, ...]:
    """User input as the log stores it; ``UsageError`` for empty input or invalid Unicode.

    A prompt with lone surrogates (a terminal that is not UTF-8) is refused before anything is
    stored: unlike tool output, it is the caller's to fix.
    """
    if isinstance(text, str):
        if not text.strip():
            raise UsageError("a prompt needs text or at least one content part")
        _refuse_surrogates(text)
        return text
    given: object = text
    if isinstance(given, bytes | bytearray | dict) or not isinstance(given, Sequence):
        raise UsageError(
            "a prompt is a str or a list of ags.TextPart / ags.ImagePart, got"
            f" {type(given).__name__}"
        )
    parts = tuple(text)
    if not parts:
        raise UsageError("a prompt needs text or at least one content part")
    for index, part in enumerate(parts):
        problem = _part_problem(part)
        if problem is not None:
            raise UsageError(f"prompt part {index} ({type(part).__name__}): {problem}")
        if isinstance(part, TextPart):
            _refuse_surrogates(part.text)
    return parts


def _part_problem(part: object) -> str | None:
    """What makes ``part`` unusable as prompt content, or ``None`` when it is fine.

    Checked before anything is stored: a part that cannot be encoded, hashed or lowered would
    otherwise fail deep inside a turn (or be stored and break every later request).
    """
    if isinstance(part, TextPart):
        return None if isinstance(part.text, str) else _wrong("text", "a str", part.text)
    if not isinstance(part, ImagePart):
        return "expected ags.TextPart or ags.ImagePart"
    if not isinstance(part.media_type, str) or not part.media_type.strip():
        return _wrong("media_type", "a non-empty str such as 'image/png'", part.media_type)
    if part.data is not None and not isinstance(part.data, str):
        return _wrong("data", "base64 text (a str)", part.data)
    if part.url is not None and not isinstance(part.url, str):
        return _wrong("url", "a str", part.url)
    if (part.data is None) == (part.url is None):
        return "give exactly one of data (base64 text) or url"
    return None


def _wrong(field: str, expected: str, value: object) -> str:
    return f"{field} must be {expected}, got {type(value).__name__}"


def _refuse_surrogates(text: str) -> None:
    if has_surrogates(text):
        raise UsageError(
            "the prompt holds text that is not valid Unicode (lone surrogates, e.g. from a"
            " terminal that is not UTF-8); nothing was stored"
        )


_BIDI = "\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c"
_CONTROL = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_LINE_CONTROL = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\u2028\u2029]")
# JSON escapes C0 itself; these it would write raw.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}\u2028\u2029\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control character except newline and tab shown as its escape.

    A lone surrogate (a log written before replies were repaired on arrival) becomes U+FFFD:
    it cannot be written to a UTF-8 terminal at all.
    """
    return _CONTROL.sub(_escape, replace_surrogates(text)[0])


def visible_json(text: str) -> str:
    """JSON text with the control characters ``json.dumps`` leaves raw written as escapes.

    The result is still valid JSON that decodes to the same value; a lone surrogate is written
    as its escape too, so the text encodes as UTF-8.
    """
    if text.isascii() and "\x7f" not in text:  # two scans in C: nothing to escape
        return text
    if len(text) <= _JSON_SPAN:
        return _JSON_RAW.sub(_json_escape, text)
    # A report's data is a megabyte or more, nearly all of it ASCII: the pattern is tried only on
    # the spans that hold something else (it matches single characters, so no match is cut).
    spans = (text[i : i + _JSON_SPAN] for i in range(0, len(text), _JSON_SPAN))
    return "".join(
        span if span.isascii() and "\x7f" not in span else _JSON_RAW.sub(_json_escape, span)
        for span in spans
    )


_JSON_SPAN = 8_192


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible_line(text: str) -> str:
    """Like ``visible``, for a one-line field (an id, a title): newlines and tabs shown too."""
    return _LINE_CONTROL.sub(_escape, replace_surrogates(text)[0])
