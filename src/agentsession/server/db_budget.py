"""How many PostgreSQL connections one server process opens at most: its connection budget.

One ``serve`` process holds, at most: the store's pool; one connection for the store's
blocking reads; one for its presence (the session-level advisory lock that voids a dead
holder's leases at once); one listening for news, cancels and live text (``LISTEN``; the
database's trigger sends the news, so no connection of the server does); one sending live text
and the wants for it (``live_relay``; open only while there is some to send). The server's
own table (owners, settings, cancel requests) is read and written on the store's pool
(``side_table``). ``--db-connections N`` sets the total; the pool gets what the others
leave. A deployment of P processes needs ``P × N`` connections below the server's
``max_connections`` (minus its reserved ones);
``docs/server.md`` says how to count, and why a pooler in front must keep sessions (advisory
locks and ``LISTEN`` live on a session).
"""

from __future__ import annotations

from ..errors import UsageError

__all__ = [
    "DEFAULT_DB_CONNECTIONS",
    "FIXED_CONNECTIONS",
    "MIN_DB_CONNECTIONS",
    "SIDE_CONNECTIONS",
    "pool_size_for",
]

#: Blocking reads, presence, LISTEN, live text: one connection each.
FIXED_CONNECTIONS = 4
#: Statements on the server's own table at once, each on a short-lived connection, for a store
#: with an address that offers no statement on its own pool (``side_table``); not in the budget.
SIDE_CONNECTIONS = 2
#: The smallest pool a process works with, under load (the server's own table's statements too).
_MIN_POOL = 4
MIN_DB_CONNECTIONS = FIXED_CONNECTIONS + _MIN_POOL
#: The budget of ``serve`` unless told (a pool of 10, a library store's default).
DEFAULT_DB_CONNECTIONS = 16


def pool_size_for(budget: int) -> int:
    """The store's pool size within a budget of ``budget`` connections (``UsageError`` if low)."""
    if budget < MIN_DB_CONNECTIONS:
        raise UsageError(
            f"--db-connections must be {MIN_DB_CONNECTIONS} or more (a pool of {_MIN_POOL} beside"
            f" {FIXED_CONNECTIONS} the server keeps), got {budget}"
        )
    return budget - FIXED_CONNECTIONS
