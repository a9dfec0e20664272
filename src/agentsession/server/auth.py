"""Who may call the server: bearer tokens, kept only as hashes, and the owner each one names.

A token is given as itself or as ``sha256:<hex>`` (its hash), so a configuration file need not
hold the secret. The server keeps hashes only and compares them in constant time. The owner a
token names is derived from its hash, so it stays the same across restarts and processes; a
session created with a token belongs to that owner, and a token sees only its own sessions.
A token may also name no owner (``Tokens.of(..., open_tokens=[...])``): the token ``serve`` makes
for one run when it is given none, which sees every session as the user at the terminal does.
Without any token the server is open to whoever reaches it: ``serve --no-auth`` allows that on
loopback only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable

from .._frozen import frozen
from ..errors import UsageError

__all__ = ["Tokens", "hash_token", "is_loopback"]

_PREFIX = "sha256:"


def hash_token(token: str) -> str:
    """The stored form of a token: ``sha256:`` and the hex digest of its UTF-8 bytes."""
    return _PREFIX + hashlib.sha256(token.encode("utf-8")).hexdigest()


def _stored(given: str) -> str:
    if given.startswith(_PREFIX):
        digest = given[len(_PREFIX) :].lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise UsageError("a hashed token is 'sha256:' and 64 hex digits")
        return _PREFIX + digest
    if len(given) < 16:
        raise UsageError("a server token needs at least 16 characters")
    return hash_token(given)


@frozen
class Tokens:
    """The hashes of the tokens the server accepts (none at all: no authentication).

    ``hashes`` each name an owner; ``open_hashes`` name none and see every session.
    """

    hashes: tuple[str, ...] = ()
    open_hashes: tuple[str, ...] = ()

    @classmethod
    def of(cls, given: Iterable[str], open_tokens: Iterable[str] = ()) -> Tokens:
        """Tokens from their plain or hashed forms (``UsageError`` for a malformed one)."""
        return cls(tuple(_stored(g) for g in given), tuple(_stored(g) for g in open_tokens))

    @property
    def required(self) -> bool:
        """Whether requests must carry a token."""
        return bool(self.hashes or self.open_hashes)

    def is_open(self, authorization: str | None) -> bool:
        """Whether the ``Authorization`` header carries a token that names no owner."""
        candidate = _bearer(authorization)
        found = False
        for stored in self.open_hashes:
            found |= candidate is not None and hmac.compare_digest(stored, candidate)
        return found

    def owner(self, authorization: str | None) -> str | None:
        """The owner the ``Authorization`` header's bearer token names, or ``None`` if unknown."""
        candidate = _bearer(authorization)
        if candidate is None:
            return None
        found = None
        for stored in self.hashes:
            if hmac.compare_digest(stored, candidate):
                found = stored
        return None if found is None else "owner-" + found[len(_PREFIX) :][:16]


def _bearer(authorization: str | None) -> str | None:
    """The hash of the bearer token an ``Authorization`` header carries, if it carries one."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return hash_token(token.strip())


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
