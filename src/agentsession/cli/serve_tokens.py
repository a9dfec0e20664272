"""The tokens ``agentsession serve`` accepts: given, read from files, or from the environment.

A token on the command line shows in every process listing of the machine; a file (one token
per line, ``#`` comments; a systemd credential, a mounted secret) or the ``AGENTSESSION_TOKEN``
variable (tokens separated by spaces) keeps it off. A file other users may read is said so
(unless it holds only hashes, ``sha256:<hex>``, which are no secret).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path

from ..errors import UsageError

__all__ = ["TOKEN_ENV", "given_tokens"]

#: The variable that may hold the server's tokens, as ``--token`` would.
TOKEN_ENV = "AGENTSESSION_TOKEN"


#: The most a token file may hold: tokens and comments, not a device or a log file.
_MOST = 64 * 1024


def _from_file(name: str) -> list[str]:
    path = Path(name)
    try:
        with path.open("rb") as handle:
            raw = handle.read(_MOST + 1)  # bounded: --token-file /dev/zero must not fill memory
        mode = path.stat().st_mode
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or "not UTF-8 text"
        raise UsageError(f"--token-file {name}: cannot read it ({why})") from None
    if len(raw) > _MOST:
        raise UsageError(f"--token-file {name}: over {_MOST // 1024} KiB, not a token file")
    found = [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not found:
        raise UsageError(f"--token-file {name}: it holds no token (one per line)")
    if mode & 0o077 and not all(token.startswith("sha256:") for token in found):
        sys.stderr.write(
            f"warning: --token-file {name} may be read by other users of this machine"
            f" (mode {oct(mode & 0o777)}): chmod 600 it\n"
        )
    return found


def given_tokens(tokens: Iterable[str], files: Iterable[str]) -> list[str]:
    """``--token`` values, then each ``--token-file``'s tokens, then ``AGENTSESSION_TOKEN``'s."""
    found = list(tokens)
    for name in files:
        found.extend(_from_file(name))
    found.extend(os.environ.get(TOKEN_ENV, "").split())
    return found
