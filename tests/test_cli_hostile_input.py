"""What a new user mistypes and what an attacker feeds the command line: a clear ``error:``
line, no traceback, no password."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import assert_clean_error
from .cli_inprocess import run_cli


@pytest.mark.parametrize("command", [["sessions"], ["serve"], ["run", "hi"]])
def test_a_database_url_of_another_kind_is_refused_and_nothing_is_made(
    tmp_path: Path, command: list[str]
) -> None:
    done = run_cli(tmp_path, "--db", "mysql://me:s3cret@db.example/app", *command)
    line = assert_clean_error(done, "--db mysql://…", "postgresql://")
    assert "s3cret" not in done.out + done.err and line
    assert not (tmp_path / "mysql:").exists()  # no folder named after the URL
    told = run_cli(tmp_path, *command, env={"AGENTSESSION_DB": "sqlite:///x.db"})
    assert_clean_error(told, "AGENTSESSION_DB sqlite://…")


def test_an_empty_database_option_is_refused_not_replaced_by_the_default(tmp_path: Path) -> None:
    assert_clean_error(run_cli(tmp_path, "--db", "", "sessions"), "--db is empty")
    assert_clean_error(run_cli(tmp_path, "sessions", "--db", " "), "--db is empty")


@pytest.mark.parametrize(
    "url", ["postgresql://bob:s3cret@[bad/x", "postgresql://bob:s3%zzcret@127.0.0.1:1/x"]
)
def test_an_unreadable_postgresql_url_is_refused_without_its_password(
    tmp_path: Path, url: str
) -> None:
    pytest.importorskip("psycopg")
    done = run_cli(tmp_path, "--db", url, "sessions")
    assert_clean_error(done, "invalid PostgreSQL connection string")
    assert "s3" not in done.err and "bob" not in done.err


def test_a_search_for_nothing_is_refused_as_the_server_refuses_it(tmp_path: Path) -> None:
    for words in ([""], ["  ", " "]):
        assert_clean_error(run_cli(tmp_path, "search", *words), "give the words to search for")


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--port", "70000"], "expected a port number from 0 to 65535, got '70000'"),
        (["--port", "-1"], "expected a port number from 0 to 65535"),
        (["--otlp-endpoint", "collector:4318"], "expected an http:// or https:// URL"),
    ],
)
def test_serve_refuses_a_bad_port_or_collector_before_it_starts(
    tmp_path: Path, option: list[str], said: str
) -> None:
    done = run_cli(tmp_path, "serve", *option)
    assert done.code == 2 and "serving on" not in done.err and "token=" not in done.out
    assert_clean_error(done, said, "(see: agentsession serve --help)")


def test_a_token_file_that_never_ends_is_refused_not_read_into_memory(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "serve", "--port", "0", "--token-file", "/dev/zero")
    assert_clean_error(done, "--token-file /dev/zero: over 64 KiB, not a token file")
