"""``deploy/postgres-roles.sql`` as written: the owner role upgrades the schema with the command
line, and a server connected as the application role creates, prompts, follows, searches and
cancels; the application role cannot drop the store's tables."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import uuid
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

import agentsession as ags

from ..store import pg

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")

ROOT = Path(__file__).resolve().parents[2]
SQL = ROOT / "deploy" / "postgres-roles.sql"
pytestmark = pytest.mark.postgres


def _statements(suffix: str) -> list[str]:
    """The file's statements, its roles and schema renamed for this test."""
    text = "\n".join(
        line for line in SQL.read_text().splitlines() if not line.lstrip().startswith("--")
    )
    text = text.replace("agentsession_owner", f"owner_{suffix}")
    text = text.replace("agentsession_app", f"app_{suffix}")
    text = re.sub(r"\bagentsession\b", f"schema_{suffix}", text)
    return [s.strip() for s in text.split(";") if s.strip()]


def _url(server: str, user: str, password: str) -> str:
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(server)
    host = str(parts.get("host", "localhost"))
    where = f"?host={quote(host, safe='')}" if host.startswith("/") else ""
    at = "" if host.startswith("/") else host + (f":{parts['port']}" if "port" in parts else "")
    return f"postgresql://{user}:{password}@{at}/{parts.get('dbname', 'postgres')}{where}"


async def test_the_roles_file_serves_with_an_application_role(tmp_path: Path) -> None:
    server = pg.server_dsn()
    suffix = uuid.uuid4().hex[:10]
    owner, app = f"owner_{suffix}", f"app_{suffix}"
    try:
        for statement in _statements(suffix):
            pg.run(server, statement)
        for role in (owner, app):
            pg.run(server, f"ALTER ROLE {role} PASSWORD 'pw-{role}'")
        owner_url = _url(server, owner, f"pw-{owner}")
        upgraded = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "agentsession", "--db", owner_url, "upgrade"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert upgraded.returncode == 0, upgraded.stderr
        app_url = _url(server, app, f"pw-{app}")
        runtime = ags.Runtime(
            store=ags.PostgresStore(app_url),
            model=ags.ScriptedModel(lambda request: "the aardvark answers"),
            project_dir=tmp_path,
            config=ags.Config(titles=False),
        )
        token = "deploy-token-0123456789"
        auth = {"Authorization": f"Bearer {token}"}
        asgi = ags.server.create_app(runtime, tokens=[token])
        transport = httpx.ASGITransport(app=asgi)
        client = httpx.AsyncClient(transport=transport, base_url="http://localhost", headers=auth)
        # The app's lifespan, as a server runs it: it closes the notifier's connections.
        lifespan = asgi.router.lifespan_context(asgi)
        await lifespan.__aenter__()
        try:
            assert (await client.get("/readyz")).status_code == 200
            created = await client.post("/sessions", json={"title": "deployed"})
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            turn = await client.post(f"/sessions/{sid}/prompt", json={"text": "hello"})
            assert turn.status_code == 200 and "turn_finished" in turn.text
            assert (await client.post(f"/sessions/{sid}/cancel", json={})).status_code == 409
            listed = (await client.get("/sessions")).json()
            assert [s["id"] for s in listed["sessions"]] == [sid]
            found = (await client.get("/search?q=aardvark")).json()["hits"]
            assert [hit["session_id"] for hit in found] == [sid]
        finally:
            await client.aclose()
            await lifespan.__aexit__(None, None, None)
            await runtime.close()
        # The application role reads and writes rows; the store's tables are not its own.
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
            await asyncio.to_thread(pg.run, app_url, "DROP TABLE entries CASCADE")
    finally:
        pg.run(
            server,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename IN (%s, %s)",
            (owner, app),
        )
        for statement in (
            f"DROP SCHEMA IF EXISTS schema_{suffix} CASCADE",
            f"DROP OWNED BY {app}",
            f"DROP OWNED BY {owner}",
            f"DROP ROLE IF EXISTS {app}",
            f"DROP ROLE IF EXISTS {owner}",
        ):
            try:
                pg.run(server, statement)
            except Exception:  # a role that was never made: nothing to drop
                continue
