"""Entry types of the inbox: input given while a turn runs, kept until it is delivered.

``session.steer()`` and ``session.queue()`` each write an ``InputQueued`` the moment they accept
the input, so a crash loses none. A steer is delivered at the running turn's next step boundary
(after the step's tool results), a queued input as a prompt of its own when the turn ends; the
admission that delivers it writes ``InputDelivered`` right before the user entry it became, in
the same transaction, so an input is delivered once or not at all. ``InputCancelled`` withdraws
an input not yet delivered. None of these is part of the user transcript or of the model view.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .._frozen import frozen

__all__ = ["INBOX_KINDS", "InputCancelled", "InputDelivered", "InputMode", "InputQueued"]

#: How an input joins the conversation: into the running turn, or as the next prompt.
InputMode: TypeAlias = Literal["steer", "queue"]


@frozen(slots=True)
class InputQueued:
    """Input accepted into the session's inbox (``steer`` or ``queue``), not yet delivered."""

    input_id: str
    mode: InputMode
    text: str
    timestamp: str = ""
    kind: Literal["input_queued"] = "input_queued"


@frozen(slots=True)
class InputDelivered:
    """The accepted input ``input_id`` became the user entry that follows this one."""

    input_id: str
    mode: InputMode = "steer"
    timestamp: str = ""
    kind: Literal["input_delivered"] = "input_delivered"


@frozen(slots=True)
class InputCancelled:
    """The accepted input ``input_id`` was withdrawn before it was delivered."""

    input_id: str
    timestamp: str = ""
    kind: Literal["input_cancelled"] = "input_cancelled"


#: The inbox's entry kinds; a session reads them when it is opened (with ``STATE_KINDS``).
INBOX_KINDS: tuple[str, ...] = ("input_queued", "input_delivered", "input_cancelled")
