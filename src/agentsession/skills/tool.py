"""The declaration of the ``load_skill`` tool, through which the model loads a skill.

Its one parameter, ``name``, is an enum of the available skill names (sorted), so the model
cannot ask for a skill that does not exist and the declaration is byte-stable while the skill
set is. The call and its result are ordinary history; the session runs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import UsageError
from ..request import ToolSpec

__all__ = ["LOAD_SKILL", "load_skill_spec"]

#: The tool's name.
LOAD_SKILL = "load_skill"


def load_skill_spec(names: Iterable[str], *, max_loaded: int = 3) -> ToolSpec:
    """The ``load_skill`` declaration for these skill names.

    ``UsageError`` when there are none: without skills the tool is not offered at all.
    """
    choices = sorted(set(names))
    if not choices:
        raise UsageError("load_skill needs at least one available skill")
    description = (
        "Load a skill: its full instructions join the context and its tools become available."
        " Call it when a task matches a skill in the skills catalog, before you proceed."
        f" At most {max_loaded} skills stay loaded; loading another unloads the least recently"
        " used one. Loading a skill that is already loaded makes it the active one again."
        " The result lists what loaded and unloaded."
    )
    parameters = {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "enum": choices,
                "description": "The name of the skill to load.",
            }
        },
        "required": ["name"],
        "additionalProperties": False,
    }
    return ToolSpec(LOAD_SKILL, description, parameters)
