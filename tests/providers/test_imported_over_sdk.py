"""Another tool's session, imported, continues one turn through each official SDK.

Every real foreign session file is imported and continued against a loopback server speaking
OpenAI Chat, OpenAI Responses, Anthropic Messages and Gemini: the next request passes the
package's validator and the SDK's own request types, the SDK sends it, and the reply lands in
the session. The files are read in place beside the repository; the tests skip without them.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import pytest
from provider_fakes import LocalServer, Reply, check_sdk_types
from vendor_replies import ANTHROPIC_FULL, CHAT_FULL, GEMINI_FULL, KEYS, RESP_FULL, VENDORS

import agentsession as ags
from agentsession.providers.validate import validate

REPO = Path(__file__).absolute().parents[2]


def _foreign() -> Path:
    told = os.environ.get("AGENTSESSION_TESTDATA")
    if told:
        return Path(told) / "foreign-sessions"
    for folder in REPO.parents:
        if (folder / "shared" / "testdata").is_dir():
            return folder / "shared" / "testdata" / "foreign-sessions"
    return REPO.parent / "shared" / "testdata" / "foreign-sessions"


FOREIGN = _foreign()
SOURCES = sorted(
    [str(p.relative_to(FOREIGN)) for p in FOREIGN.glob("*/*.jsonl")]
    + [str(p.relative_to(FOREIGN)) for p in FOREIGN.glob("opencode/*/storage")]
)


def _text_reply(vendor: str) -> dict[str, Any]:
    """The vendor's complete reply, holding the text ``continued`` and no tool call."""
    if vendor == "openai-chat":
        body = copy.deepcopy(CHAT_FULL)
        body["choices"][0].update(
            finish_reason="stop", message={"role": "assistant", "content": "continued"}
        )
    elif vendor == "openai-responses":
        body = copy.deepcopy(RESP_FULL)
        body["output"] = body["output"][:1]
        body["output"][0]["content"][0]["text"] = "continued"
    elif vendor == "anthropic":
        body = copy.deepcopy(ANTHROPIC_FULL)
        body.update(content=[{"type": "text", "text": "continued"}], stop_reason="end_turn")
    else:
        body = copy.deepcopy(GEMINI_FULL)
        body["candidates"][0]["content"]["parts"] = [{"text": "continued"}]
    return body


WIRE = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic": "anthropic-messages",
    "gemini": "gemini",
}


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.setenv(name, "test-key")


@pytest.mark.parametrize("vendor", sorted(WIRE))
@pytest.mark.parametrize("name", SOURCES or ["(none)"])
async def test_an_imported_session_continues_through_the_sdk(
    name: str, vendor: str, server: LocalServer, tmp_path: Path
) -> None:
    if not SOURCES:
        pytest.skip(f"foreign session files not present at {FOREIGN}")
    store = ags.SQLiteStore(tmp_path / "s.db")
    report = await ags.import_session(store, FOREIGN / name)
    model = VENDORS[vendor].model(server, streaming=False)
    async with ags.Runtime(store=store, model=model, project_dir=tmp_path) as runtime:
        session = await runtime.open_session(report.session_id)
        before = len(session.messages)
        request = await session.preview_request("please continue")
        body = ags.lower(request, WIRE[vendor], model="model-x")
        validate(body, WIRE[vendor])
        check_sdk_types(WIRE[vendor], body)
        server.reply(Reply(body=_text_reply(vendor)))
        result = await session.prompt("please continue")
        assert result.text == "continued"
        assert len(server.requests) == 1
        assert len(session.messages) == before + 2
