"""docs/cli.md stays true: its TOML example loads, every ``--json`` kind the code emits is listed,
every command is in the table, and the exit codes it documents are the ones the CLI returns."""

from __future__ import annotations

import re
import tomllib
import typing
from pathlib import Path

from agentsession import events
from agentsession.cli.app import build_parser
from agentsession.cli.userconfig import load_config

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
SRC = ROOT / "src" / "agentsession"


def test_the_toml_example_is_a_valid_config_with_the_binding_names(tmp_path: Path) -> None:
    (block,) = re.findall(r"```toml\n(.*?)```", DOC, flags=re.S)
    data = tomllib.loads(block)
    assert ":" in data["model"]
    (name, provider), *_ = data["providers"].items()
    assert data["model"].startswith(f"{name}:")
    assert provider["base_url"] and provider["api_key_env"]
    path = tmp_path / "config.toml"
    path.write_text(block, encoding="utf-8")
    config = load_config(path)
    assert config.provider_of(data["model"]) is not None


def emitted_kinds() -> set[str]:
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found |= set(re.findall(r'emit\(\s*"([a-z_]+)"', text))
        found |= set(re.findall(r'_said\(\s*inv,\s*"([a-z_]+)"', text))
    for name in events.__all__:
        cls = getattr(events, name)
        hints = getattr(cls, "__dataclass_fields__", {})
        if "kind" in hints:
            found |= set(typing.get_args(typing.get_type_hints(cls)["kind"]))
    return found


def test_every_json_kind_is_documented() -> None:
    kinds = emitted_kinds()
    assert {"session", "error", "text_delta", "turn_finished", "model", "info"} <= kinds
    table = DOC.split("## `--json`", 1)[1]
    missing = sorted(k for k in kinds if f"`{k}`" not in table)
    assert missing == [], f"document these --json kinds in docs/cli.md: {missing}"
    assert "schema_version" in table and "retryable" in table and "status" in table


def test_every_command_and_exit_code_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    commands = sorted(sub.choices)  # type: ignore[arg-type]
    table = DOC.split("## Commands", 1)[1].split("## The configuration file", 1)[0]
    missing = [c for c in commands if f"`{c}" not in table]
    assert missing == [], missing
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 130 |"):
        assert code in DOC
