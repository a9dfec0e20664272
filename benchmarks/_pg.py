"""What the PostgreSQL figures share: the server's address and an agentsession system on it.

Every PostgreSQL figure runs beside a throwaway server: ``.ci/with-postgres CMD`` starts one and
passes its address in ``AGENTSESSION_TEST_PG_DSN`` (a Unix socket, ``fsync=off``: the figures
measure the client side, the same for every system, not the server's disk). Each script makes a
fresh database of its own on that server, so figures never share tables.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _systems import (
    QUESTION,
    AgentSession,
    LangGraph,
    OpenAIAgents,
    System,
    answer_text,
    grow_agentsession,
    result_text,
)

__all__ = [
    "PgAgentSession",
    "PgLangGraph",
    "PgOpenAIAgents",
    "ServerCPU",
    "fresh_database",
    "grow_agentsession",
    "pg_systems",
    "scratch_database",
    "server_dsn",
]


def server_dsn() -> str:
    """The server ``.ci/with-postgres`` started (exits with a hint when there is none)."""
    dsn = os.environ.get("AGENTSESSION_TEST_PG_DSN")
    if not dsn:
        sys.exit("needs a PostgreSQL server: run it as `.ci/with-postgres python benchmarks/...`")
    return dsn


def fresh_database(name: str) -> str:
    """Create database ``name_<random>`` on the server and return its DSN."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    dsn = server_dsn()
    database = f"{name}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{database}"')
    params = conninfo_to_dict(dsn)
    params["dbname"] = database
    return make_conninfo("", **params)


@contextlib.asynccontextmanager
async def scratch_database(base: str, name: str) -> AsyncIterator[str]:
    """Database ``name`` made on the server at ``base`` for the block (its DSN), then dropped."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        await conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(base, dbname=name)
    finally:
        async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class PgAgentSession(AgentSession):
    """``session.prompt()`` with ``PostgresStore``, the default Config (window of 60 messages)."""

    name = "agentsession"

    def __init__(self, dsn: str, **config: Any) -> None:
        super().__init__(**config)
        self.dsn = dsn

    async def setup(self, folder: Path, n: int) -> None:
        import agentsession as ags

        @ags.tool
        def lookup_order(order: int) -> str:
            """Look an order up."""
            return result_text(order)

        def reply(request: ags.Request) -> Any:
            last = request.messages[-1]
            if last.role == "user":
                number = int(str(last.content).split("order ")[1].split(" ")[0])
                return [ags.ToolCall("lookup_order", {"order": number})]
            return answer_text(int(str(last.content).split(":")[0].split(" ")[1]))

        self.ags = ags
        self.runtime = ags.Runtime(
            store=ags.PostgresStore(self.dsn),
            model=ags.ScriptedModel(reply),
            project_dir=folder,
            tools=[lookup_order],
            config=ags.Config(**self.config),
        )
        session = await self.runtime.create_session()
        await session.prompt(QUESTION.format(i=0))
        if n > 1:
            await grow_agentsession(self.runtime.store, session.id, n - 1)
        self.session = await self.runtime.open_session(session.id)


# -- the peers on the same server --------------------------------------------------------------


def asyncpg_url(dsn: str) -> str:
    """``dsn`` as SQLAlchemy's ``postgresql+asyncpg://`` URL (a Unix socket stays one)."""
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(dsn)
    user = quote(str(params.get("user", "")))
    query = f"?host={quote(str(params['host']))}" if "host" in params else ""
    return f"postgresql+asyncpg://{user}@/{params['dbname']}{query}"


class PgOpenAIAgents(OpenAIAgents):
    """``Runner.run`` with openai-agents' ``SQLAlchemySession`` on asyncpg; ``limit`` as before."""

    def __init__(self, dsn: str, limit: int | None) -> None:
        super().__init__(limit)
        self.dsn = dsn
        self.name = self.name.replace("openai-agents", "openai-agents SQLAlchemy")

    async def setup(self, folder: Path, n: int) -> None:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from agents.memory import SessionSettings

        await super().setup(folder, 1)  # the agent and its fake model; the SQLite file is unused
        self.session.close()  # the SQLiteSession ``OpenAIAgents.setup`` made
        settings = SessionSettings(limit=self.limit) if self.limit else None
        self.session = SQLAlchemySession.from_url(
            f"bench-{uuid.uuid4().hex[:8]}",
            url=asyncpg_url(self.dsn),
            create_tables=True,
            session_settings=settings,
        )
        await self.turn(0)
        if n > 1:
            _grow_sqlalchemy_session(self.dsn, self.session.session_id, n - 1)

    async def close(self) -> None:
        await self.session.engine.dispose()


def _grow_sqlalchemy_session(dsn: str, session_id: str, turns: int) -> None:
    """Copy the session's first turn ``turns`` times (fresh ids) into its table, with COPY."""
    import json

    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT message_data FROM agent_messages WHERE session_id = %s ORDER BY id",
            (session_id,),
        ).fetchall()
        items = [json.loads(r[0]) for r in rows]
        with (
            conn.cursor() as cursor,
            cursor.copy("COPY agent_messages (session_id, message_data) FROM STDIN") as copy,
        ):
            for _ in range(turns):
                call_id = f"call_{uuid.uuid4().hex[:12]}"
                for item in items:
                    item = dict(item)
                    if "call_id" in item:
                        item["call_id"] = call_id
                    if "id" in item:
                        item["id"] = f"{item['id'][:3]}{uuid.uuid4().hex[:12]}"
                    copy.write_row((session_id, json.dumps(item, separators=(",", ":"))))


class PgLangGraph(LangGraph):
    """``create_react_agent`` with LangGraph's ``PostgresSaver`` (psycopg, autocommit)."""

    name = "langgraph PostgresSaver"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    async def setup(self, folder: Path, n: int) -> None:
        import langgraph.checkpoint.sqlite as sqlite_saver
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row

        self.pg = psycopg.connect(
            self.dsn, autocommit=True, prepare_threshold=0, row_factory=dict_row
        )
        saver = PostgresSaver(self.pg)  # type: ignore[arg-type]
        saver.setup()
        # The same agent as on SQLite (``LangGraph.setup``), checkpointed by PostgresSaver.
        original = sqlite_saver.SqliteSaver
        sqlite_saver.SqliteSaver = lambda conn: saver  # type: ignore[assignment,misc]
        try:
            await super().setup(folder, n)
        finally:
            sqlite_saver.SqliteSaver = original  # type: ignore[misc]

    async def close(self) -> None:
        await super().close()
        self.pg.close()


def pg_systems(dsn: str) -> list[System]:
    """The systems of the PostgreSQL turn figure, all on the database ``dsn``."""
    return [
        PgAgentSession(dsn),
        PgOpenAIAgents(dsn, 60),
        PgOpenAIAgents(dsn, None),
        PgLangGraph(dsn),
    ]


class ServerCPU:
    """CPU seconds the PostgreSQL server's processes used (the postmaster and its children).

    The database work of every system runs there, not in the benchmark's process, so a turn's
    CPU is the client's plus this. Read from ``/proc``; other server work (autovacuum, the
    checkpointer) lands in it too, alike for every system.
    """

    def __init__(self, dsn: str) -> None:
        from psycopg.conninfo import conninfo_to_dict

        host = str(conninfo_to_dict(dsn).get("host", ""))
        pid_file = Path(host) / "data" / "postmaster.pid"
        self.postmaster = int(pid_file.read_text().split()[0]) if pid_file.exists() else None

    def seconds(self) -> float:
        if self.postmaster is None:
            return 0.0
        total = 0.0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
                pid, ppid = int(entry.name), int(fields[1])
                if pid != self.postmaster and ppid != self.postmaster:
                    continue
                # schedstat: nanoseconds on a CPU (stat's ticks are 10 ms, too coarse).
                total += int(Path(entry.path, "schedstat").read_text().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
        return total
