"""The configuration file: named providers with their key variable, defaults, aliases, models.

In-process (``main(argv)``) against the loopback OpenAI-compatible server of ``cli_model``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentsession.cli.modelchoice import DEMO_MODEL, ModelChoice
from agentsession.cli.userconfig import UserConfig, load_config
from agentsession.errors import UsageError

from .cli_helpers import assert_clean_error
from .cli_inprocess import run_cli
from .cli_model import ScriptedServer, serve


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    yield from serve()


def write_config(folder: Path, text: str) -> Path:
    path = folder / ".config" / "agentsession" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def gateway(folder: Path, server: ScriptedServer, *, model: bool = True) -> Path:
    head = 'model = "gw:scripted"\n' if model else ""
    return write_config(
        folder,
        f'{head}[providers.gw]\nbase_url = "{server.url}/v1"\napi_key_env = "GW_KEY"\n',
    )


def test_a_named_provider_with_api_key_env_drives_the_server_from_the_cli_alone(
    tmp_path: Path, server: ScriptedServer
) -> None:
    gateway(tmp_path, server)
    server.key = "s3cret-key"
    server.reply("hello from the gateway")
    done = run_cli(tmp_path, "run", "hi there", env={"GW_KEY": "s3cret-key"})
    assert done.code == 0, done.err
    assert done.out == "hello from the gateway\n"
    assert server.authorizations[-1] == "Bearer s3cret-key"
    assert "demo model" not in done.err
    listed = run_cli(tmp_path, "--json", "sessions")
    (row,) = [json.loads(line) for line in listed.out.splitlines()]
    # The session records the configured name, so continuing finds the provider again.
    assert row["model"] == "gw:scripted" and row["schema_version"] == 1
    server.reply("again")
    again = run_cli(tmp_path, "run", "-c", "more", env={"GW_KEY": "s3cret-key"})
    assert again.code == 0 and again.out == "again\n", again.err


def test_without_the_key_the_error_names_the_variable_and_nothing_is_stored(
    tmp_path: Path, server: ScriptedServer
) -> None:
    gateway(tmp_path, server)
    done = run_cli(tmp_path, "run", "hi")
    line = assert_clean_error(done, "GW_KEY")
    assert done.code == 1
    assert not any(x.startswith("session ") for x in done.err_lines), done.err
    assert server.requests == []
    listed = run_cli(tmp_path, "--json", "sessions")
    assert listed.out == "", line


def test_a_refused_key_names_the_variable_it_came_from_not_the_key(
    tmp_path: Path, server: ScriptedServer
) -> None:
    gateway(tmp_path, server)
    server.key = "the-right-one"
    done = run_cli(tmp_path, "run", "hi", env={"GW_KEY": "a-wrong-one"})
    line = assert_clean_error(done, "GW_KEY")
    assert "a-wrong-one" not in done.err + done.out
    assert "401" in line or "invalid api key" in line


def test_an_unset_model_uses_a_set_vendor_key_and_says_so(tmp_path: Path) -> None:
    empty = UserConfig(tmp_path / "none.toml")
    spec, note = ModelChoice(empty).default_model()
    assert spec == DEMO_MODEL and note is not None and "demo" in note
    monkey = run_cli(tmp_path, "--json", "info", env={"ANTHROPIC_API_KEY": "k"})
    info = json.loads(monkey.out)
    assert info["model"].startswith("anthropic:") and info["model_configured"] is False
    assert info["schema_version"] == 1 and info["config_file"]["exists"] is False
    listed = run_cli(tmp_path, "models", env={"ANTHROPIC_API_KEY": "k"})
    marked = [line for line in listed.out.splitlines() if line.startswith("*")]
    assert len(marked) == 1 and "anthropic:" in marked[0], listed.out


def test_models_lists_what_is_usable_and_why_not(tmp_path: Path, server: ScriptedServer) -> None:
    gateway(tmp_path, server, model=False)
    write_config(
        tmp_path,
        (tmp_path / ".config/agentsession/config.toml").read_text()
        + '[aliases]\nfast = "gw:scripted"\n',
    )
    rows = run_cli(tmp_path, "--json", "models")
    found = {r["name"]: r for r in map(json.loads, rows.out.splitlines())}
    assert found["gw:MODEL"]["usable"] is False and "GW_KEY" in found["gw:MODEL"]["problem"]
    assert found["fast"]["usable"] is False
    assert found["openai:gpt-4.1"]["problem"] == "no API key: set OPENAI_API_KEY"
    assert found[DEMO_MODEL]["usable"] is True
    keyed = run_cli(tmp_path, "--json", "models", env={"GW_KEY": "k"})
    found = {r["name"]: r for r in map(json.loads, keyed.out.splitlines())}
    assert found["gw:MODEL"]["usable"] is True and found["fast"]["usable"] is True


def test_an_alias_and_a_mistyped_model(tmp_path: Path, server: ScriptedServer) -> None:
    gateway(tmp_path, server, model=False)
    path = tmp_path / ".config/agentsession/config.toml"
    path.write_text(path.read_text() + '[aliases]\nfast = "gw:scripted"\n')
    server.reply("via the alias")
    done = run_cli(tmp_path, "-m", "fast", "run", "hi", env={"GW_KEY": "k"})
    assert done.code == 0 and done.out == "via the alias\n", done.err
    typo = run_cli(tmp_path, "run", "--model", "gww:scripted", "hi")
    assert_clean_error(typo, "did you mean 'gw:scripted'")
    vendor = run_cli(tmp_path, "run", "-m", "opnai:gpt-4.1", "hi")
    assert_clean_error(vendor, "did you mean 'openai:gpt-4.1'")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('modle = "x:y"\n', "did you mean 'model'"),
        ("[providers.gw]\napi_key_env = 'K'\n", "needs a base_url"),
        ("[providers.gw]\nbase_url = 'ftp://x'\n", "http:// or https://"),
        ("[providers.gw]\nbase_url = 'http://x'\nformat = 'soap'\n", "format 'soap'"),
        ("[providers.gw]\nbase_url = 'http://x'\napi_key_env = '$K'\n", "names a variable"),
        ("model = \n", "config file"),
    ],
)
def test_a_bad_config_file_is_one_clear_error(tmp_path: Path, text: str, fragment: str) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(UsageError, match="config file") as caught:
        load_config(path)
    assert fragment in str(caught.value) and str(path) in str(caught.value)
    done = run_cli(tmp_path, "run", "hi")
    assert_clean_error(done, fragment)


def test_the_config_file_gives_a_new_sessions_preset_and_system(tmp_path: Path) -> None:
    write_config(tmp_path, 'preset = "read-only"\nsystem = "You answer in French."\n')
    done = run_cli(tmp_path, "--json", "run", "count these words")
    assert done.code == 0, done.err
    session = json.loads(done.out.splitlines()[0])["id"]
    shown = run_cli(tmp_path, "--json", "context", session[:8])
    view = json.loads(shown.out)
    texts = json.dumps(view)
    assert "You answer in French." in texts and "read-only" in texts


def test_a_vendor_model_without_its_key_stores_and_prints_no_session(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    done = run_cli(tmp_path, "--db", db, "run", "--model", "openai:gpt-4.1", "hi")
    assert_clean_error(done, "OPENAI_API_KEY")
    assert not any(line.startswith("session ") for line in done.err_lines), done.err
    assert run_cli(tmp_path, "--db", db, "--json", "sessions").out == ""
