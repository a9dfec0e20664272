"""Titles cannot reorder what a user sees ("Trojan source" spoofs in a session list).

A bidirectional override, isolate or mark in a title makes the text around it display in
another order: ``invoice\u202efdp.exe`` lists as ``invoiceexe.pdf``. A user's own title
(``rename``, ``PATCH``, ``POST /sessions``) holding one is refused with a clear error; a title
a model made or an imported file carries is data: those characters (and zero-width ones) are
dropped. A title already stored with them (written before, or straight into the store) is
shown escaped wherever it is shown: the command line's lists, the picker, the exports, the
report and the web UI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

import agentsession as ags
from agentsession.cli.addressing import _row
from agentsession.engine.titles import checked_title, clean_title
from agentsession.inspection.report import render_report
from agentsession.portability.readable import render_html, render_markdown

REORDERING = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068"]
REORDERING += ["\u2069", "\u200e", "\u200f", "\u061c"]
ZERO_WIDTH = ["\u200b", "\u2060", "\ufeff"]
UNSEEN = re.compile("[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
SPOOF = "invoice\u202efdp.exe"
STATIC = Path(ags.__file__).parent / "server" / "static"


@pytest.mark.parametrize("char", REORDERING)
async def test_rename_refuses_a_character_that_reorders_the_title(
    tmp_path: Path, char: str
) -> None:
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"), model=ags.ScriptedModel([])
    ) as runtime:
        session = await runtime.create_session()
        await session.rename("mine")
        with pytest.raises(ags.UsageError, match=f"U\\+{ord(char):04X}") as refused:
            await session.rename(f"invoice{char}fdp.exe")
        assert "order in which" in str(refused.value)
        assert session.title == "mine"
        assert (await runtime.store.get_session(session.id)).title == "mine"


async def test_rename_drops_zero_width_characters_and_keeps_joiners(tmp_path: Path) -> None:
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"), model=ags.ScriptedModel([])
    ) as runtime:
        session = await runtime.create_session()
        await session.rename("pay\u200bpal \ufeffrefund \U0001f468\u200d\U0001f469")
        assert session.title == "paypal refund \U0001f468\u200d\U0001f469"


async def test_a_title_a_model_makes_is_cleaned(tmp_path: Path) -> None:
    namer = ags.ScriptedModel([f"\u2067{SPOOF}\u2069 \u200bplan"])
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"),
        model=ags.ScriptedModel(["hello"]),
        title_model=namer,
        project_dir=tmp_path,
    )
    async with runtime:
        session = await runtime.create_session()
        await session.prompt("name this")
        assert await session.named() == "invoicefdp.exe plan"


async def test_an_imported_title_is_cleaned(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    head = {"kind": "session", "version": 2, "id": "spoofed", "title": SPOOF + "\u200f"}
    path.write_text(json.dumps(head) + "\n")
    async with ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"), model=ags.ScriptedModel([])
    ) as runtime:
        session = await runtime.import_session(path)
        assert session.title == "invoicefdp.exe"


async def test_the_server_refuses_such_a_title_with_a_400(tmp_path: Path) -> None:
    runtime = ags.Runtime(
        store=ags.SQLiteStore(tmp_path / "s.db"), model=ags.ScriptedModel([]), project_dir=tmp_path
    )
    app = ags.server.create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        made = await client.post("/sessions", json={"title": SPOOF})
        sid = (await client.post("/sessions", json={"title": "kept"})).json()["id"]
        patched = await client.patch(f"/sessions/{sid}", json={"title": SPOOF})
        shown = (await client.get(f"/sessions/{sid}")).json()
        listed = (await client.get("/sessions")).json()
    await runtime.close()
    for answer in (made, patched):
        assert answer.status_code == 400, answer.text
        assert "U+202E" in answer.json()["error"]["message"]
    assert shown["title"] == "kept"
    assert [s["title"] for s in listed["sessions"]] == ["kept"]  # nothing made by the refusal


async def test_a_stored_title_is_shown_escaped_everywhere(tmp_path: Path) -> None:
    """Written before this check, or straight into the store: every display escapes it."""
    store = ags.SQLiteStore(tmp_path / "s.db")
    async with ags.Runtime(store=store, model=ags.ScriptedModel(["hi"])) as runtime:
        session = await runtime.create_session()
        await session.prompt("hello")
        await store.set_title(session.id, SPOOF)
        info = await store.get_session(session.id)
        inspection = await (await runtime.open_session(session.id)).inspect()
        entries = [r.entry for r in await store.read(session.id)]
    shown = {
        "picker": _row(info, tmp_path, {}),
        "markdown": render_markdown(info, entries),
        "html": render_html(info, entries),
        "report": render_report(inspection, generated="now", version="test"),
    }
    for where, text in shown.items():
        assert "\u202e" not in text, where
        assert "202e" in text.lower(), where  # the reader sees that it was there


def test_the_web_ui_writes_every_title_through_its_escaping() -> None:
    script = (STATIC / "app.js").read_text()
    writes = re.findall(r'\$\("title"\)\.textContent = ([^;]+);', script)
    assert writes, "the page sets its title somewhere"
    for value in writes:
        assert value.startswith('"') or value.startswith("UI.visible("), value
    for shown in re.findall(r'"name", ([^)]*title[^)]*)\)', script):
        assert shown.startswith("UI.visible("), shown
    hidden = (STATIC / "render.js").read_text()
    for char in REORDERING:
        assert f"\\\\u{ord(char):04x}" in hidden or _in_range(hidden, ord(char)), char


def _in_range(script: str, code: int) -> bool:
    for low, high in re.findall(r"\\\\u([0-9a-f]{4})-\\\\u([0-9a-f]{4})", script):
        if int(low, 16) <= code <= int(high, 16):
            return True
    return False


@given(st.text())
def test_a_cleaned_title_holds_nothing_unseen(text: str) -> None:
    cleaned = clean_title(text)
    assert UNSEEN.search(cleaned) is None
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in cleaned)
    assert cleaned == cleaned.strip()


@given(st.text(alphabet=st.sampled_from([*REORDERING, *ZERO_WIDTH, "a", " ", "\n", "\u05d0"])))
def test_a_users_title_is_refused_exactly_when_it_reorders(text: str) -> None:
    reorders = any(c in text for c in REORDERING)
    try:
        title = checked_title(text)
    except ags.UsageError as exc:
        assert reorders or "needs some text" in str(exc)
        return
    assert not reorders
    assert UNSEEN.search(title) is None
