"""Escape codes in ids, titles, model strings and text reach no terminal raw, and `report --all`
writes only inside its folder — for a store that already holds such a session (written by an
older version, or imported raw), in real CLI processes.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

import agentsession as ags
from agentsession.cli.console import RichOutput
from agentsession.cli.screens import print_sessions
from agentsession.hygiene import visible, visible_json, visible_line
from agentsession.store.session_file import import_session

from ..cli_helpers import cli

TITLE_CODE = "\x1b]0;pwned\x07"  # sets the window title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
EVIL_ID = "../../escaped\x1b[2J"
RAW = ("\x1b", "\x07", "\x9b")


async def hostile_store(tmp_path: Path) -> Path:
    """A database holding one session whose every shown string carries escape codes."""
    source = tmp_path / "source.db"
    model = ags.ScriptedModel([f"reply {CLEAR}with\x9b codes"], name=f"scripted{TITLE_CODE}")
    async with ags.Runtime(store=ags.SQLiteStore(source), model=model) as runtime:
        session = await runtime.create_session()
        await session.prompt(f"hello {TITLE_CODE}")
        exported = tmp_path / "s.jsonl"
        await session.export(exported)
    lines = exported.read_text().splitlines()
    header = json.loads(lines[0])
    header.update(id=EVIL_ID, title=f"title {TITLE_CODE}{CLEAR}")
    exported.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    (tmp_path / "db").mkdir()
    db = tmp_path / "db" / "hostile.db"
    store = ags.SQLiteStore(db)
    try:
        await import_session(store, exported)  # raw: what an older version may have stored
    finally:
        await store.close()
    return db


def assert_clean(text: str) -> None:
    for code in RAW:
        assert code not in text, repr(text)


@pytest.fixture
async def db(tmp_path: Path) -> Path:
    return await hostile_store(tmp_path)


def test_listings_and_transcripts_show_escapes_as_text(tmp_path: Path, db: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config")}
    listed = cli(tmp_path, "--db", str(db), "sessions", env=env)
    assert listed.code == 0, listed.err
    assert_clean(listed.out + listed.err)
    assert "\\x1b]0;pwned\\x07" in listed.out and "escaped\\x1b[2J" in listed.out
    assert "scripted\\x1b]0;pw" in listed.out  # the model string (cut to its column)

    shown = cli(tmp_path, "--db", str(db), "show", EVIL_ID, env=env)
    assert shown.code == 0, shown.err
    assert_clean(shown.out + shown.err)
    assert "reply \\x1b[2J\\x1b[Hwith\\x9b codes" in shown.out

    as_json = cli(tmp_path, "--db", str(db), "--json", "show", EVIL_ID, env=env)
    assert as_json.code == 0, as_json.err
    assert_clean(as_json.out)
    first = json.loads(as_json.out.splitlines()[0])
    assert first["id"] == EVIL_ID  # JSON keeps the value, only its spelling is escaped

    missing = cli(tmp_path, "--db", str(db), "show", f"nope{TITLE_CODE}", env=env)
    assert missing.code == 1 and "nope\\x1b]0;pwned\\x07" in missing.err
    assert_clean(missing.err)


def test_report_all_stays_in_its_folder(tmp_path: Path, db: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    before = {p for p in tmp_path.rglob("*") if not {"work", "db"} & set(p.parts)}
    done = cli(work, "--db", str(db), "report", "--all", "-o", "out", env={})
    assert done.code == 0, done.err
    assert_clean(done.out + done.err)
    after = {p for p in tmp_path.rglob("*") if not {"work", "db"} & set(p.parts)}
    assert after == before  # nothing outside the working folder
    written = sorted(p.relative_to(work) for p in work.rglob("*") if p.is_file())
    assert written[0] == Path("out/index.html") and len(written) == 2
    (report,) = written[1:]
    assert report.parent == Path("out") and report.name.startswith("session-")
    assert "escaped" not in report.name
    single = cli(work, "--db", str(db), "report", EVIL_ID, env={})
    assert single.code == 0, single.err
    assert_clean(single.out + single.err)
    (made,) = [p for p in work.iterdir() if p.name != "out"]
    assert made.name.startswith("agentsession-session-") and made.suffix == ".html"
    # The page holds no raw control character anywhere: the header shows escapes as text, and
    # the embedded data spells every one as a JSON escape.
    for page in (made, work / report):
        html = page.read_text(encoding="utf-8")
        assert_clean(html)
        assert "title \\x1b]0;pwned\\x07\\x1b[2J\\x1b[H" in html
        assert "hello \\u001b]0;pwned\\u0007" in html  # the request as sent, JSON-escaped
        assert "reply \\\\x1b[2J\\\\x1b[Hwith\\\\x9b codes" in html  # the timeline
    assert {p for p in tmp_path.rglob("*") if not {"work", "db"} & set(p.parts)} == before


async def test_the_rich_screens_show_escapes_as_text(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")
    async with ags.Runtime(store=ags.SQLiteStore(db, read_only=True)) as runtime:
        (info,) = await runtime.list_sessions()
        session = await runtime.open_session(info.id)
        messages = list(session.messages)
    print_sessions([(info, 1, 1, 0, f"m{TITLE_CODE}")], rich=True)
    buffer = io.StringIO()
    RichOutput(console=Console(file=buffer, force_terminal=True, width=200)).transcript(messages)
    written = capsys.readouterr().out + buffer.getvalue()
    assert "\x1b[" in written  # the terminal still gets rich's own colours
    assert TITLE_CODE not in written and "\x1b[2J" not in written and "\x07" not in written
    assert "\x9b" not in written
    assert "\\x1b]0;pwned\\x07" in written and "\\x1b[2J" in written


def _shown_raw(text: str) -> list[str]:
    """Characters a terminal would obey: C0 but newline and tab, DEL, C1, bidi overrides."""
    bidi = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
    return [
        ch
        for ch in text
        if (ord(ch) < 0x20 and ch not in "\n\t") or 0x7F <= ord(ch) <= 0x9F or ch in bidi
    ]


@given(st.text())
def test_visible_leaves_nothing_a_terminal_obeys(text: str) -> None:
    shown = visible(text)
    assert _shown_raw(shown) == []
    line = visible_line(text)
    assert not any(ch in "\n\t" for ch in line) and _shown_raw(line) == []
    if not _shown_raw(text):
        assert shown == text  # ordinary text, newlines and tabs pass unchanged
    as_json = json.dumps({"v": text}, ensure_ascii=False)
    assert json.loads(visible_json(as_json)) == {"v": text}
    assert _shown_raw(visible_json(as_json)) == []


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=20_000), st.text()), max_size=8))
def test_visible_json_of_a_long_text_escapes_as_one_pass_over_it_does(
    pieces: list[tuple[int, str]],
) -> None:
    # A long text is looked at in spans (a report's data is megabytes): what is escaped, and
    # where, is what one pass of the pattern over the whole text gives, wherever spans end.
    from agentsession.hygiene import _JSON_RAW

    edges = [(8_191, "\ud800"), (0, "\udc00"), (8_192, "\x7f"), (3, "\u2028")]
    long = "".join(f"{'a' * n}{piece}" for n, piece in [*pieces, *edges])
    as_json = json.dumps({"v": long}, ensure_ascii=False)
    one_pass = _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", as_json)
    assert visible_json(as_json) == one_pass
    assert visible_json("a" * 20_000) == "a" * 20_000
