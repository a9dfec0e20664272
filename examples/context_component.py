"""A context component: a fact of the application's own, kept current in the System Context.

A ``ContextComponent`` has a key and a loader. The loader runs right before each provider call
(never while the session is idle); the first request carries its text in the system prompt,
and a later change reaches the model as one mid-conversation system message, never as a
rewrite of what was sent before, so the provider's prompt cache stays warm. A loader returns
``ags.UNAVAILABLE`` when its source is down for now (the model keeps what it was told) and
``ags.ABSENT`` when the fact is gone (the model is told once). Offline: the scripted model
stands in for a provider. Run it with ``python examples/context_component.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import agentsession as ags
from agentsession.context import LoadResult

status: dict[str, object] = {"build": "passing"}


def ci_status() -> LoadResult:
    """The loader: the build's status as the CI server reports it."""
    build = status.get("build")
    if build is None:
        return ags.ABSENT
    if build == "?":
        return ags.UNAVAILABLE
    # The baseline is the fact as the system prompt states it; the update, how a change is told.
    return ags.Rendered(f"CI: the build is {build}.", update=f"CI: the build is now {build}.")


def system_messages(request: ags.Request) -> list[str]:
    """The mid-conversation system messages of a request."""
    return [m.content for m in request.messages if isinstance(m, ags.SystemMessage)]


async def main(folder: Path) -> None:
    """Change the status between prompts and show what the model was told."""
    model = ags.ScriptedModel(["ok"] * 5)
    runtime = ags.Runtime(
        store=ags.SQLiteStore(folder / "sessions.db"),
        model=model,
        project_dir=folder,
        config=ags.Config(titles=False, environment=()),
    )
    async with runtime:
        runtime.plugin("ci").register(ags.ContextComponent("plugin.ci.status", ci_status))
        session = await runtime.create_session()

        await session.prompt("Is the build green?")
        print("system prompt:", dict(model.requests[-1].system)["plugin.ci.status"])

        status["build"] = "failing"
        await session.prompt("And now?")
        (told,) = system_messages(model.requests[-1])
        print("told mid-conversation:", told.splitlines()[-1])

        status["build"] = "?"  # the CI server is down: nothing is sent, nothing is lost
        await session.prompt("Still failing?")
        print("while unavailable:", system_messages(model.requests[-1])[1:])

        status.pop("build")  # the fact is gone: the model is told once
        await session.prompt("Any news?")
        print("after removal:", system_messages(model.requests[-1])[-1].splitlines()[-1])

        # What each dispatched request changed, as the session recorded it.
        for checkpoint in session.system_prompt_checkpoints():
            changed = checkpoint.changed.get("plugin.ci.status", "(unchanged)")
            print(f"  after {checkpoint.message_count} messages: plugin.ci.status = {changed}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
