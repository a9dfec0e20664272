"""Component keys of instruction files: ``core.instructions:<encoded relative path>``.

A key must match the component key syntax (no whitespace after the ``:``), stay the same for the
same file across processes, and never name two files at once. The relative path (POSIX ``/``
separators, relative to the repository root) is therefore percent-encoded: ``%``, ``~``, every
whitespace character and every non-printable character (controls, format characters, lone
surrogates from undecodable file names) become ``%XX`` per byte of their UTF-8 form (surrogates
pass through as their three-byte form); every other character stays as it is, so ordinary paths
read naturally (``core.instructions:pkg/AGENTS.md``, ``core.instructions:my%20docs/AGENTS.md``).
The encoding is reversible (``path_from_key``), hence unambiguous. The global user file has the
fixed key ``core.instructions:~global``; since ``~`` is always encoded in paths, no relative path
can produce it.
"""

from __future__ import annotations

from ..errors import UsageError

__all__ = ["GLOBAL_KEY", "KEY_PREFIX", "instruction_key", "path_from_key"]

KEY_PREFIX = "core.instructions:"
GLOBAL_KEY = KEY_PREFIX + "~global"

_ALWAYS_ENCODED = frozenset("%~")
_HEX = frozenset("0123456789ABCDEF")


def _needs_encoding(ch: str) -> bool:
    return ch in _ALWAYS_ENCODED or ch.isspace() or not ch.isprintable()


def instruction_key(relative_path: str) -> str:
    """The component key of the instruction file at ``relative_path`` (POSIX, non-empty)."""
    if not isinstance(relative_path, str) or not relative_path:
        raise UsageError(f"an instruction file path must be a non-empty string: {relative_path!r}")
    parts: list[str] = []
    for ch in relative_path:
        if _needs_encoding(ch):
            parts.extend(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))
        else:
            parts.append(ch)
    return KEY_PREFIX + "".join(parts)


def path_from_key(key: str) -> str | None:
    """The relative path a key was made from; ``None`` for the global key or a foreign key."""
    if not key.startswith(KEY_PREFIX) or key == GLOBAL_KEY:
        return None
    encoded = key[len(KEY_PREFIX) :]
    raw = bytearray()
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch == "%":
            pair = encoded[i + 1 : i + 3]
            if len(pair) != 2 or not set(pair) <= _HEX:
                return None
            raw.append(int(pair, 16))
            i += 3
        else:
            raw.extend(ch.encode("utf-8", "surrogatepass"))
            i += 1
    try:
        path = raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return None
    # Only the canonical spelling maps back, so a key and its path correspond one to one.
    return path if path and instruction_key(path) == key else None
