"""The HTTP server: ``create_app(runtime)`` is an ASGI app serving the runtime's sessions.

Here an httpx client talks to the app in-process (``httpx.ASGITransport``: no port, no
network); ``agentsession serve`` runs the same app under uvicorn for many users and processes.
A prompt's response is an event stream (server-sent events): log entries with their seq as the
event id, live events without one, and ``turn_finished`` last. A turn that needs approval ends
there too; the answers travel with the resume. Needs the ``server`` extra (Starlette, uvicorn)
and httpx. Run it with ``python examples/server.py``.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

import httpx

import agentsession as ags
from agentsession.server import create_app


@ags.tool(effect="execute")
def restart(service: str) -> str:
    """Restart a service.

    Args:
        service: The service's name.
    """
    return f"{service} restarted"


def events(stream: str) -> list[tuple[str, str | None, dict[str, object]]]:
    """The (event, id, data) of each server-sent event in a response body."""
    found = []
    for block in stream.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in fields:
            found.append((fields["event"], fields.get("id"), json.loads(fields["data"])))
    return found


async def main(folder: Path) -> None:
    """Create a session, prompt it and answer an approval, all over HTTP."""
    model = ags.ScriptedModel(
        ["Hello over HTTP.", [ags.ToolCall("restart", {"service": "web"})], "Restarted web."]
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(folder / "sessions.db"),
        model=model,
        tools=[restart],
        project_dir=folder,
        config=ags.Config(titles=False),
    )
    app = create_app(runtime)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
        created = await client.post("/sessions", json={"title": "over HTTP"})
        sid = created.json()["id"]
        print("created:", created.status_code, created.json()["title"])

        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "Hi!"})
        for event, seq, data in events(answer.text):
            if event == "entry":
                print(f"  entry seq={seq}: {data['kind']}")
            elif event == "turn_finished":
                print("  finished:", data["result"]["text"])  # type: ignore[index]

        # A call that needs approval ends the turn; the answer goes with the resume.
        answer = await client.post(f"/sessions/{sid}/prompt", json={"text": "Restart web."})
        (waiting,) = (await client.get(f"/sessions/{sid}/approvals")).json()["waiting"]
        print("waiting:", waiting["name"], waiting["arguments"])
        decision = {"call_id": waiting["call_id"], "approved": True}
        answer = await client.post(f"/sessions/{sid}/resume", json={"decisions": [decision]})
        (last,) = [data for event, _, data in events(answer.text) if event == "turn_finished"]
        print("resumed:", last["result"]["text"])  # type: ignore[index]

        # A client that lost the stream asks GET /sessions/{id}/events with Last-Event-ID: the
        # log after that seq, then live (it never ends on its own, so it is not shown here).
        listed = (await client.get("/sessions")).json()
        print("sessions:", [s["title"] for s in listed["sessions"]])
    await runtime.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
