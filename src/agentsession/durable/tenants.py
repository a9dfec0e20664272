"""A tenant's limits on turns run by an engine, and the queue each tenant's turns go through.

A fleet serves many tenants; one tenant's burst must not take every worker, nor its provider's
rate limit. ``TenantLimits`` says how many of a tenant's turns may run at once across the whole
fleet and how many may start per minute. Engines give each tenant its own queue (named by
``tenant_queue``) carrying those limits, and inside it keep the per-session rule — one turn of
a session at a time, in the order they were enqueued — so both hold together: the tenant's cap
counts turns of all its sessions, the session's order is never traded for it.

Engine-neutral: nothing here imports an engine.
"""

from __future__ import annotations

from typing import Literal

from .._frozen import frozen
from ..errors import UsageError

__all__ = ["TenantLimits", "tenant_queue"]

#: The longest tenant name a queue name carries.
MAX_TENANT_CHARS = 100


@frozen
class TenantLimits:
    """How many of a tenant's turns run at once, and start per minute, across the fleet.

    ``concurrency``: at most this many of the tenant's turns run at the same time on all
    workers together (``None``: no cap). ``per_minute``: at most this many of its turns start
    in any rolling minute (``None``: no rate limit). A session's own turns always run one at a
    time, in order, whatever the limits.

    Raises:
        UsageError: A limit is below 1.
    """

    concurrency: int | None = None
    per_minute: int | None = None
    kind: Literal["tenant_limits"] = "tenant_limits"

    def __post_init__(self) -> None:
        for name in ("concurrency", "per_minute"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise UsageError(f"TenantLimits.{name} must be at least 1 (or None), not {value!r}")


def tenant_queue(base: str, tenant: str) -> str:
    """The name of ``tenant``'s turn queue beside the queue ``base``.

    Args:
        base: The default turn queue's name.
        tenant: The tenant's name: 1 to 100 printable characters without spaces.

    Raises:
        UsageError: The tenant's name is empty, too long, or holds a space or a control
            character.
    """
    if not tenant or len(tenant) > MAX_TENANT_CHARS:
        raise UsageError(f"a tenant name has 1 to {MAX_TENANT_CHARS} characters: {tenant!r}")
    if any(not c.isprintable() or c.isspace() for c in tenant):
        raise UsageError(f"a tenant name holds no spaces or control characters: {tenant!r}")
    return f"{base}.{tenant}"
