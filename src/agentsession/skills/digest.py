"""The ``contextChanged`` digest: the short result text of a ``load_skill`` call.

The full instructions of a loaded skill reach the model through its own component
(``core.skills.loaded.<name>``); the tool result only records what changed. It is ordinary
history, so it stays readable after the skill unloads, until the window leaves it: which skills
loaded and unloaded (loading one more than the limit unloads the least recently used), each with
its revision, and the first ``DIGEST_LINE_CHARS`` characters of every non-blank line a loaded
skill added to the context. One JSON object, keys in a fixed order: the same change always
renders the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .skill import SkillText

__all__ = ["DIGEST_LINE_CHARS", "context_changed"]

DIGEST_LINE_CHARS = 200


def context_changed(
    *,
    loaded: Sequence[SkillText] = (),
    unloaded: Sequence[SkillText] = (),
    active: str | None = None,
) -> str:
    """The digest of one change: ``loaded`` and ``unloaded`` skills and the ``active`` one.

    A read of a skill that was already loaded passes nothing loaded and only ``active``.
    """
    record: dict[str, Any] = {
        "loaded": [
            {
                "skill": read.name,
                "revision": read.revision,
                "lines": [
                    line[:DIGEST_LINE_CHARS] for line in read.text.splitlines() if line.strip()
                ],
            }
            for read in loaded
        ],
        "unloaded": [{"skill": read.name, "revision": read.revision} for read in unloaded],
    }
    if active is not None:
        record["active"] = active
    return json.dumps({"contextChanged": record}, ensure_ascii=False)
