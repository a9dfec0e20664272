"""Turns run as steps of a durable execution engine, passing references, never prompts.

``agentsession.durable`` is engine-neutral: it imports no engine. Its steps (``steps``) take and
return small references (``refs``) — a session id, seqs, call ids, a digest — and each is
idempotent against the session's log, so an engine that retries or recovers a step gets what was
committed instead of a second model call or a second tool run. ``agentsession.durable.dbos``
runs them as DBOS workflows (the ``durable`` extra).
"""

from __future__ import annotations

from .refs import (
    Admitted,
    ApprovalAnswer,
    Paused,
    Reference,
    Responded,
    Settled,
    StaleStepError,
    ToolRan,
    reference_from_json,
)
from .steps import admit_prompt, last_seq, model_step, paused_turn, run_tool, settle_turn
from .tenants import TenantLimits, tenant_queue

__all__ = [
    "Admitted",
    "ApprovalAnswer",
    "Paused",
    "Reference",
    "Responded",
    "Settled",
    "StaleStepError",
    "TenantLimits",
    "ToolRan",
    "admit_prompt",
    "last_seq",
    "model_step",
    "paused_turn",
    "reference_from_json",
    "run_tool",
    "settle_turn",
    "tenant_queue",
]
