"""Managing sessions from the command line, in this process on real databases: export and
import (also through PostgreSQL), rename, fork, delete, and reading that never creates anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest

import agentsession as ags
from agentsession.log import AssistantEntry, Record

from .cli_helpers import Outcome, assert_clean_error, session_id_of
from .cli_inprocess import cli_here
from .store import pg

REPLY = "(scripted demo model) `count_words` returned **{}**."


def on(tmp_path: Path, db: Path | str, *args: str, **kw: str) -> Outcome:
    result = cli_here(tmp_path, "--db", str(db), *args, stdin=kw.get("stdin", ""))
    assert "Traceback" not in result.err, result.err
    return result


def two_turns(tmp_path: Path, db: Path | str) -> str:
    first = on(tmp_path, db, "run", "one two")
    assert first.code == 0, first.err
    session_id = session_id_of(first)
    assert on(tmp_path, db, "run", "--session", session_id, "three four five").code == 0
    return session_id


async def log_of(db: Path, session_id: str, project: Path) -> list[Record]:
    async with ags.Runtime(store=ags.SQLiteStore(db), project_dir=project) as runtime:
        return await (await runtime.open_session(session_id)).log()


def test_export_import_export_gives_the_same_bytes(tmp_path: Path) -> None:
    here, there = tmp_path / "here.db", tmp_path / "there.db"
    session_id = two_turns(tmp_path, here)
    exported = tmp_path / "session.jsonl"
    wrote = on(tmp_path, here, "export", session_id, "-o", str(exported))
    assert wrote.code == 0 and wrote.out == ""
    assert any(f"to {exported}" in line for line in wrote.err_lines)
    header = json.loads(exported.read_text("utf-8").splitlines()[0])
    assert header["kind"] == "session" and header["id"] == session_id

    imported = on(tmp_path, there, "import", str(exported))
    assert imported.code == 0, imported.err
    assert imported.out == f"{session_id}\n"  # the id alone on standard output
    again = on(tmp_path, there, "export", session_id)  # to standard output
    # The same bytes: the import's empty epoch, which sets the file's own System Context aside,
    # is the importing runtime's note to itself until a request uses it, and stays out of files.
    assert again.code == 0 and again.out.encode() == exported.read_bytes()
    shown = on(tmp_path, there, "show", session_id)
    assert REPLY.format(2) in shown.out and REPLY.format(3) in shown.out
    # The imported session goes on like any other.
    assert on(tmp_path, there, "run", "--session", session_id, "six").out == REPLY.format(1) + "\n"


def test_import_refuses_a_taken_id_and_a_corrupt_file_and_reads_standard_input(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.db"
    session_id = two_turns(tmp_path, db)
    text = on(tmp_path, db, "export", session_id).out

    taken = on(tmp_path, db, "import", "-", stdin=text)
    assert_clean_error(taken, session_id)
    assert "`import --copy` imports it under a new id" in taken.err  # the way on, named
    copied = on(tmp_path, db, "import", "--copy", "-", stdin=text)
    assert copied.code == 0, copied.err
    copy_id = copied.out.strip()
    assert copy_id != session_id
    assert on(tmp_path, db, "show", copy_id).out == on(tmp_path, db, "show", session_id).out

    lines = text.splitlines(keepends=True)
    lines[3] = '{"kind": "user", "content": \n'
    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("".join(lines), "utf-8")
    before = on(tmp_path, db, "sessions").out
    refused = on(tmp_path, db, "import", "--copy", str(corrupt))
    assert_clean_error(refused, f"{corrupt}:4: not valid JSON")
    piped = on(tmp_path, db, "import", "--copy", "-", stdin=corrupt.read_text("utf-8"))
    assert_clean_error(piped, "standard input:4: not valid JSON")
    assert on(tmp_path, db, "sessions").out == before  # nothing imported
    assert_clean_error(on(tmp_path, db, "import", str(tmp_path / "none.jsonl")), "none.jsonl")


async def test_rename_fork_and_delete(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    session_id = two_turns(tmp_path, db)

    renamed = on(tmp_path, db, "rename", session_id, "Counting", "words")
    assert renamed.code == 0, renamed.err
    assert on(tmp_path, db, "sessions").out.rstrip().endswith("Counting words")

    records = await log_of(db, session_id, tmp_path)
    first_reply = next(
        r.seq for r in records if isinstance(r.entry, AssistantEntry) and r.entry.content
    )
    forked = on(tmp_path, db, "fork", session_id, "--at", str(first_reply))
    assert forked.code == 0, forked.err
    fork_id = forked.out.strip()
    assert fork_id != session_id
    shown = on(tmp_path, db, "show", fork_id).out
    assert "# Counting words (fork)" in shown
    assert REPLY.format(2) in shown and REPLY.format(3) not in shown
    assert REPLY.format(3) in on(tmp_path, db, "show", session_id).out  # the original stays
    assert [r.entry for r in await log_of(db, fork_id, tmp_path)] == [
        r.entry for r in records[: first_reply + 1]
    ]
    whole = on(tmp_path, db, "fork", session_id)
    assert on(tmp_path, db, "show", whole.out.strip()).out.count("assistant:") == 2
    beyond = on(tmp_path, db, "fork", session_id, "--at", "9999")
    assert_clean_error(beyond)

    deleted = on(tmp_path, db, "delete", session_id)
    assert deleted.code == 0, deleted.err
    listed = on(tmp_path, db, "sessions").out
    assert session_id not in listed and fork_id in listed
    assert_clean_error(on(tmp_path, db, "show", session_id), session_id)
    assert_clean_error(on(tmp_path, db, "delete", session_id), session_id)


def test_reading_commands_create_neither_a_database_nor_its_folder(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "sessions.db"
    for command in (["show", "x"], ["export", "x"], ["context", "x"], ["request", "x"]):
        assert_clean_error(on(tmp_path, missing, *command), "no session database at")
    for command in (["delete", "x"], ["rename", "x", "y"], ["fork", "x"]):
        assert_clean_error(on(tmp_path, missing, *command), "no session database at")
    assert not missing.parent.exists()


def test_the_database_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "from-env.db"
    env = {"AGENTSESSION_DB": str(db)}
    made = cli_here(tmp_path, "run", "one two", env=env)
    assert made.code == 0, made.err
    assert db.is_file()
    listed = cli_here(tmp_path, "sessions", env=env)
    assert listed.out.startswith(session_id_of(made))
    info = cli_here(tmp_path, "info", env=env)
    assert f"{db} (exists)" in info.out


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A ``postgresql://`` URL for a schema of this test's own on the test server."""
    from psycopg.conninfo import conninfo_to_dict

    with pg.schema(pg.server_dsn()) as dsn:
        params = {k: str(v) for k, v in conninfo_to_dict(dsn).items()}
        user = quote(params.pop("user", ""), safe="")
        password = params.pop("password", None)
        dbname = quote(params.pop("dbname", ""), safe="")
        auth = f"{user}:{quote(password, safe='')}@" if password else (f"{user}@" if user else "")
        yield f"postgresql://{auth}/{dbname}?{urlencode(params, quote_via=quote)}"


@pytest.mark.postgres
def test_a_postgresql_url_wherever_a_database_is_named(tmp_path: Path, pg_url: str) -> None:
    session_id = two_turns(tmp_path, pg_url)
    listed = on(tmp_path, pg_url, "sessions")
    assert listed.code == 0, listed.err
    assert listed.out.startswith(session_id) and "  2 user   4 assistant   2 tool" in listed.out
    from_env = cli_here(tmp_path, "sessions", env={"AGENTSESSION_DB": pg_url})
    assert from_env.out == listed.out

    # PostgreSQL → SQLite → PostgreSQL (as a copy) gives the same file every time.
    text = on(tmp_path, pg_url, "export", session_id).out
    local = tmp_path / "local.db"
    assert on(tmp_path, local, "import", "-", stdin=text).out == f"{session_id}\n"
    assert on(tmp_path, local, "export", session_id).out == text
    on(tmp_path, pg_url, "delete", session_id)
    assert on(tmp_path, pg_url, "import", "-", stdin=text).out == f"{session_id}\n"
    assert on(tmp_path, pg_url, "export", session_id).out == text
    assert (
        on(tmp_path, pg_url, "show", session_id).out == on(tmp_path, local, "show", session_id).out
    )


@pytest.mark.postgres
def test_upgrade_gives_an_older_postgresql_database_the_news_trigger(
    tmp_path: Path, pg_url: str
) -> None:
    # Schema 6 had no trigger: only a server's own writes woke followers. After `upgrade`
    # every commit of entries notifies the log's channel, whoever writes.
    import psycopg

    from agentsession.store.migrations import LATEST, LOG_CHANNEL

    pg.make_schema(pg_url, 6)
    visible = "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
    visible += " WHERE t.tgname = 'entries_notified' AND c.oid = to_regclass('entries')"
    assert pg.run(pg_url, visible) == [(0,)]
    upgraded = on(tmp_path, pg_url, "upgrade")
    assert upgraded.code == 0, upgraded.err
    assert pg.run(pg_url, visible) == [(1,)]
    assert pg.run(pg_url, "SELECT max(version) FROM schema_migrations") == [(LATEST,)]
    with psycopg.connect(pg_url, autocommit=True) as listener:
        listener.execute(f"LISTEN {LOG_CHANNEL}")
        session_id = two_turns(tmp_path, pg_url)  # the command line writes: no server runs
        # The channel is the database's, not the schema's: tests writing in other schemas at
        # the same time are heard too. This session's id is written nowhere else.
        heard: list[str] = []
        for note in listener.notifies(timeout=120):
            heard.append(note.payload)
            if note.payload == session_id:
                break
    assert session_id in heard


def test_upgrade_lets_reading_commands_open_an_older_file(tmp_path: Path) -> None:
    # A reading command never migrates a file; after an upgrade of the package its error names
    # the command that does, and once that ran the reading commands see every session again.
    from .store.test_sqlite_schema_3_fixture import MAIN, build

    db = tmp_path / "old.db"
    build(db)
    refused = on(tmp_path, db, "sessions")
    assert refused.code == 1
    assert "schema version 3" in refused.err and "agentsession upgrade" in refused.err
    upgraded = on(tmp_path, db, "upgrade")
    assert upgraded.code == 0, upgraded.err
    assert "is up to date (3 sessions)" in upgraded.err
    listed = on(tmp_path, db, "sessions")
    assert listed.code == 0, listed.err
    assert MAIN in listed.out
    again = on(tmp_path, db, "--json", "upgrade")
    assert again.code == 0 and json.loads(again.out)["sessions"] == 3


def test_upgrade_never_creates_a_database(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    result = on(tmp_path, missing, "upgrade")
    assert_clean_error(result, "no session database")
    assert not missing.exists()


@pytest.mark.parametrize(
    "command",
    [
        ["export", "{id}", "-o", "{missing}/s.jsonl"],
        ["export", "{id}", "--format", "markdown", "-o", "{missing}/s.md"],
        ["export", "{id}", "--format", "html", "-o", "{missing}/s.html"],
        ["report", "{id}", "-o", "{missing}/r.html"],
        ["report", "--all", "-o", "{missing}/reports"],
    ],
)
def test_writing_into_a_missing_folder_is_refused_and_makes_none(
    tmp_path: Path, command: list[str]
) -> None:
    db = tmp_path / "s.db"
    session_id = two_turns(tmp_path, db)
    missing = tmp_path / "no" / "such"
    argv = [part.format(id=session_id, missing=missing) for part in command]
    result = on(tmp_path, db, *argv)
    assert result.code == 2
    assert_clean_error(result, f"the folder {missing} does not exist")
    assert not (tmp_path / "no").exists()


def test_report_all_makes_the_folder_it_is_given_and_names_it(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    two_turns(tmp_path, db)
    result = on(tmp_path, db, "report", "--all", "-o", str(tmp_path / "reports"))
    assert result.code == 0 and (tmp_path / "reports" / "index.html").is_file()
    assert f"wrote {tmp_path / 'reports' / 'index.html'}" in result.err


async def test_the_chats_report_and_export_refuse_a_missing_folder_too(tmp_path: Path) -> None:
    from agentsession.cli.inspectview import write_export, write_report

    store = ags.SQLiteStore(tmp_path / "s.db")
    async with ags.Runtime(store=store, model=ags.ScriptedModel(["hi"])) as runtime:
        session = await runtime.create_session()
        await session.prompt("hello")
        for write in (write_report, write_export):
            with pytest.raises(ags.UsageError, match="does not exist"):
                await write(session, tmp_path / "no" / "r.html")
    assert not (tmp_path / "no").exists()
