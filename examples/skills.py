"""Skills: a SKILL.md folder and a Python skill, selected by name or loaded by the model.

The runtime finds skills in ``skills_dirs`` (here ``examples/skills/``, holding
``release-notes/SKILL.md``) and takes Python skills as values. The model sees a catalog of
them; ``$name`` in a prompt (or ``prompt(text, skills=[...])``) selects one for that turn,
and the model may load one itself with the ``load_skill`` tool, which brings the skill's
instructions into the System Context and its tools into the request. Offline: the scripted
model plays the calls a provider would make. Run it with ``python examples/skills.py``.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

import agentsession as ags

SKILLS = Path(__file__).resolve().parent / "skills"


@ags.tool
def roll(sides: int) -> str:
    """Roll a die.

    Args:
        sides: How many sides the die has.
    """
    state = ags.skill_context().state  # the skill's own state while it is loaded
    state["rolls"] = state.get("rolls", 0) + 1
    return f"rolled a 4 on a d{sides} (roll {state['rolls']} of this load)"


dice = ags.Skill(
    name="dice",
    description="Roll dice for games.",
    instructions="Roll with the roll tool; say the number.",
    tools=[roll],
    state_factory=dict,
)


async def main(folder: Path) -> None:
    """Select a file skill by name, then let the model load the Python one."""
    model = ags.ScriptedModel(
        [
            "## 2.1.0 (2026-12-06)\n\n### Added\n\n- Added dark mode.",
            [ags.ToolCall("load_skill", {"name": "dice"})],
            [ags.ToolCall("roll", {"sides": 6})],
            "A 4.",
        ]
    )
    runtime = ags.Runtime(
        store=ags.SQLiteStore(folder / "sessions.db"),
        model=model,
        skills_dirs=[SKILLS],
        skills=[dice],
        project_dir=folder,
        config=ags.Config(titles=False),
    )
    async with runtime:
        print("skills:", ", ".join(runtime.skill_set().names()))
        session = await runtime.create_session()

        # An explicit selection: read now, saved with this turn, shown before this message only.
        result = await session.prompt("$release-notes for 2.1.0: dark mode")
        print("reply:", result.text.splitlines()[0])
        (snapshot,) = session.runtime_contexts()
        print("saved with turn", snapshot.user_turn, "->", [s.name for s in snapshot.skills])
        sent = model.requests[0].messages[-1]
        print("the model got the skill in front of the message:", "<skill" in str(sent.content))

        # The model loads a skill itself; its tool joins the next request.
        result = await session.prompt("Roll a d6 for me.")
        print("reply:", result.text)
        tools = [spec.name for spec in model.requests[-1].tools]
        print("tools of the last request:", tools)
        # Its tools changed the request, so a new context epoch began: its baseline (the system
        # prompt) holds the loaded skill's instructions as their own section.
        print("system sections:", [key for key, _ in model.requests[-1].system])
        digest = next(m for m in session.messages if m.role == "tool")
        print("load_skill result:", str(digest.content)[:45], "...")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
