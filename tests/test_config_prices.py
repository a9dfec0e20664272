"""``[prices."PROVIDER:MODEL"]`` in config.toml: the command line's ``cost``, the server that
``serve`` builds and ``session.cost()`` with the same prices give the same figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

import httpx
import pytest

import agentsession as ags
from agentsession.cli.invocation import Invocation
from agentsession.cli.output import QuietOutput
from agentsession.cli.userconfig import load_config
from agentsession.ledger import cost_fields

from .cli_inprocess import cli_here

MODEL = "local:qwen3"  # a provider of the config file: no list price of its own
PRICE = ags.ModelPrice(
    input=0.2, cached_input=0.02, cache_write=0.25, cache_write_long=0.4, output=0.8
)
TOML = f"""
[prices."{MODEL}"]
input = 0.2
cached_input = 0.02
cache_write = 0.25
cache_write_long = 0.4
output = 0.8
"""
REPORTING = ags.ModelProfile(provider="test", reports_usage=True)


def _config_file(home: Path) -> Path:
    path = home / ".config" / "agentsession" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(TOML, encoding="utf-8")
    return path


async def _session(db: Path, tmp_path: Path) -> tuple[str, ags.CostSummary, ags.CostSummary]:
    model = ags.ScriptedModel(["one", "two"], name=MODEL, profile=REPORTING)
    async with ags.Runtime(
        store=ags.SQLiteStore(db),
        model=model,
        project_dir=tmp_path,
        config=ags.Config(titles=False, prices={MODEL: PRICE}),
    ) as runtime:
        session = await runtime.create_session()
        await session.prompt("a question")
        await session.prompt("another")
        priced = session.cost()
    async with ags.Runtime(store=ags.SQLiteStore(db), project_dir=tmp_path) as plain:
        unpriced = (await plain.open_session(session.id)).cost()
    return session.id, priced, unpriced


def test_cost_command_server_and_library_agree_on_config_file_prices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    path = _config_file(tmp_path)
    assert load_config(path).prices == {MODEL: PRICE}
    sid, summary, unpriced = asyncio.run(_session(db, tmp_path))
    assert summary.total_usd is not None and summary.total_usd > 0
    assert unpriced.total_usd is None and unpriced.no_price == (MODEL,)

    as_json = cli_here(tmp_path, "--db", str(db), "cost", sid, "--json")
    assert as_json.code == 0, as_json.err
    (row,) = [json.loads(line) for line in as_json.out.splitlines()]
    expected = cost_fields(summary)
    assert {k: row[k] for k in expected} == expected

    # The server as ``serve`` builds it: its runtime's configuration comes from the same file.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    monkeypatch.delenv("AGENTSESSION_CONFIG", raising=False)
    args = argparse.Namespace(db=str(db), model="scripted:demo", json=False, quiet=True)
    inv = Invocation(args, QuietOutput())

    async def served() -> dict[str, object]:
        runtime = inv.new_runtime(inv.store("write"), None)
        app = ags.server.create_app(runtime)
        transport = httpx.ASGITransport(app=app)
        try:
            async with httpx.AsyncClient(
                transport=transport, base_url="http://localhost"
            ) as client:
                answer = await client.get(f"/sessions/{sid}/cost")
                assert answer.status_code == 200, answer.text
                body: dict[str, object] = answer.json()
                return body
        finally:
            await runtime.close()

    body = asyncio.run(served())
    assert {k: body[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[prices."a:b"]\ninput = 1\noutput = 2\n', "needs cached_input"),
        ('[prices."a:b"]\ninput = 1\ncached_input = 0\noutput = -2\n', "output"),
        ('[prices."a:b"]\ninput = 1\ncached_input = 0\noutput = 2\ncahce_write = 1\n',
         "cache_write"),
        ('[prices."a:b"]\ninput = "1"\ncached_input = 0\noutput = 2\n', "input"),
        ('prices = 3\n', "must be tables"),
    ],
)  # fmt: skip
def test_a_bad_price_table_is_one_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ags.UsageError, match=message) as caught:
        load_config(path)
    assert str(path) in str(caught.value)
