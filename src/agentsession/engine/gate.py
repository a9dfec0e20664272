"""The permission gate of one session: its preset, changes while idle, approvals.

The effective preset is the session's own state, rebuilt from its log (``permission_changed``
entries; the configured default before the first one; ``read-only`` when the last one names a
preset the application no longer defines). ``set`` records a change in memory while
the session is idle; the change entries are promoted with the next request's admission (one per
effective change, in order) and the ``core.permissions`` component renders only the preset in
effect then, so several switches before a prompt send the last one. Every tool call is decided by
``permissions.decide`` on the tool's declared effect and paths, never on prompt text; a call the
preset asks about waits for the user, whose "always" approves that tool for the rest of the
session (``approval_decided`` entries, so it survives a restart) until an ``approvals_dropped``
entry (an imported session brings no approvals) — except a call that would change a protected
path: only an answer to that very call lets it run.

An answer is held in memory until the resumed turn reaches its call, and is committed right
before the call runs. So the log tells the truth about an approved call: a decision without a
result means the call started and was cut off (closed as interrupted, never run again), and a
request without a decision still waits (a restart before ``retry()`` asks again).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..context.component import ContextComponent, Rendered
from ..errors import UsageError
from ..log import (
    ApprovalDecided,
    ApprovalRequested,
    ApprovalsDropped,
    LogEntry,
    PermissionChanged,
    now,
)
from ..permissions import READ_ONLY, Decision, PermissionPreset, commands_text, decide, unsandboxed
from ..tools import Tool
from ..tools.command import run_command
from ..tools.protected import sandbox_read_only
from ..tools.sandbox import SandboxMode

__all__ = ["PERMISSIONS_KEY", "PermissionGate"]

PERMISSIONS_KEY = "core.permissions"
#: The sentence that puts the permissions in effect above any earlier permission text (spec 000).
SUPERSEDES = "Current system permissions supersede earlier guidance."
_UNSANDBOXED = "UNSANDBOXED"


class PermissionGate:
    """Decides each tool call of one session under its current preset."""

    def __init__(
        self,
        presets: Mapping[str, PermissionPreset],
        default: str,
        project_dir: Path,
        *,
        sandbox: SandboxMode = "none",
        commands: bool = False,
    ) -> None:
        if default not in presets:
            raise UsageError(f"unknown permission preset {default!r}")
        self._presets = presets
        self._current = presets[default]
        self._project_dir = project_dir
        self._sandbox: SandboxMode = sandbox
        self._commands = commands  # whether the session has run_command, the sandboxed tool
        self._pending: list[PermissionChanged] = []
        self._always: set[str] = set()
        # Tools whose "always" answered a question that said they run UNSANDBOXED: only those
        # cover a command without a sandbox (an "always" given where commands were sandboxed,
        # in a session reopened where they cannot be, does not).
        self._always_bare: set[str] = set()
        self._requests: dict[str, ApprovalRequested] = {}
        self._decisions: dict[str, ApprovalDecided] = {}
        self._answers: dict[str, ApprovalDecided] = {}
        self._component: ContextComponent | None = None
        self._rendered: tuple[PermissionPreset, Rendered] | None = None

    @property
    def preset(self) -> PermissionPreset:
        """The preset in effect (including changes not yet admitted)."""
        return self._current

    @property
    def pending_changes(self) -> tuple[PermissionChanged, ...]:
        """Changes recorded while idle that the next admission commits."""
        return tuple(self._pending)

    def set(self, name: str) -> bool:
        """Switch to the preset ``name``; ``False`` when it is already in effect."""
        preset = self._presets.get(name)
        if preset is None:
            known = ", ".join(sorted(self._presets))
            raise UsageError(f"unknown permission preset {name!r}; known presets: {known}")
        if preset.name == self._current.name:
            return False
        self._pending.append(PermissionChanged(preset.name, self._current.name, now()))
        self._current = preset
        return True

    def admitted(self) -> None:
        """The pending changes were committed."""
        self._pending.clear()

    def restore(self, entries: Iterable[LogEntry]) -> None:
        """Rebuild the state from the session's log (oldest first)."""
        for entry in entries:
            match entry:
                case PermissionChanged():
                    # A preset the application no longer defines: fail closed, since its rules
                    # are unknown and the one before it may allow more than the user chose.
                    self._current = self._presets.get(entry.preset) or READ_ONLY
                case ApprovalRequested():
                    self._requests[entry.call_id] = entry
                case ApprovalDecided():
                    self.record(entry)
                case ApprovalsDropped():
                    self._always.clear()
                    self._always_bare.clear()
                case _:
                    pass

    def record(self, entry: ApprovalDecided | ApprovalRequested) -> None:
        """Remember an approval request or answer that was just committed."""
        if isinstance(entry, ApprovalRequested):
            self._requests[entry.call_id] = entry
            return
        self._decisions[entry.call_id] = entry
        self._answers.pop(entry.call_id, None)
        request = self._requests.get(entry.call_id)
        if entry.approved and entry.always and request is not None:
            self._always.add(request.name)
            if _UNSANDBOXED in request.reason:
                self._always_bare.add(request.name)

    def answer(self, entry: ApprovalDecided) -> None:
        """Hold the user's answer until the resumed turn commits it, right before the call."""
        self._answers[entry.call_id] = entry

    def waiting(self) -> list[ApprovalRequested]:
        """Approval requests the user has not answered yet, oldest first."""
        return [r for r in self.paused() if r.call_id not in self._answers]

    def paused(self) -> list[ApprovalRequested]:
        """Approval requests whose answer is not in the log yet (answered or not), oldest first."""
        return [r for r in self._requests.values() if r.call_id not in self._decisions]

    def paused_reason(self) -> str | None:
        """Why a turn paused for approval keeps the session busy, or ``None`` when none is."""
        waiting = self.waiting()
        if waiting:
            first = waiting[0]
            return (
                f"has a tool call waiting for approval ({first.name}, {first.call_id}):"
                " approve() or deny() it, then retry()"
            )
        if self.paused():
            return (
                "has a turn paused for approval whose calls are answered: call retry() to"
                " finish it first"
            )
        return None

    def known_call_ids(self) -> frozenset[str]:
        """Every call id an approval was asked for or answered: a new call must not reuse one."""
        return frozenset({*self._requests, *self._decisions, *self._answers})

    def unsaved(self, call_id: str) -> ApprovalDecided | None:
        """The answer for ``call_id`` to commit before it runs, if one is held in memory."""
        return self._answers.get(call_id)

    def decide(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        call_id: str,
        *,
        allowed_tools: Collection[str] | None = None,
        readable: Collection[Path] = (),
    ) -> Decision:
        """The verdict on one call: the preset's, unless the user already answered for it."""
        decision = decide(
            self._current,
            tool,
            arguments,
            self._project_dir,
            allowed_tools=allowed_tools,
            readable=readable,
        )
        bare = False
        if tool is run_command and decision.kind != "deny" and not unsandboxed(self._current):
            decision, bare = self._command(decision, arguments)
        if decision.kind != "ask":
            return decision
        answer = self._decisions.get(call_id) or self._answers.get(call_id)
        asked = self._requests.get(call_id)
        # An answer is for the call it was asked about: never for another tool under that id.
        if answer is not None and asked is not None and asked.name == tool.name:
            if answer.approved:
                return replace(decision, kind="allow", reason="")
            note = f" ({answer.note})" if answer.note else ""
            return Decision(
                "deny",
                f"The user denied this call of {tool.name}{note}.",
                decision.preset,
                tool.name,
                decision.needs,
            )
        # A standing "always" never covers a protected change, nor a command without a sandbox
        # unless it answered a question that said so.
        always = self._always_bare if bare else self._always
        if tool.name in always and not decision.protected:
            return replace(decision, kind="allow", reason="")
        return decision

    def _command(self, decision: Decision, arguments: Mapping[str, Any]) -> tuple[Decision, bool]:
        """``run_command`` under a preset that sandboxes it, and whether it runs without one.

        Unsandboxed here, or asking to write the protected paths the sandbox keeps read-only:
        either way the user is asked, and told so.
        """
        if self._sandbox == "none":
            reason = (
                f"Approval needed: run_command will run {_UNSANDBOXED} here (no bubblewrap with "
                "a user namespace, or the sandbox is turned off): the command can read and change "
                "whatever this user can, though its environment has no credentials."
            )
            return replace(decision, kind="ask", reason=_joined(decision, reason)), True
        if arguments.get("write_protected") is not True:
            return decision, False
        writable = tuple(str(p) for p in sandbox_read_only(self._project_dir))
        if not writable:
            return decision, False
        shown = ", ".join(
            str(Path(p).relative_to(self._project_dir))
            if Path(p).is_relative_to(self._project_dir)
            else p
            for p in writable
        )
        reason = (
            f"Approval needed for protected paths: run_command asks to run with {shown} "
            "writable (otherwise read-only in the sandbox: git runs hooks and obeys config there, "
            ".mcp.json starts programs). This needs the user's approval of this call."
        )
        return replace(
            decision, kind="ask", reason=_joined(decision, reason), protected=writable
        ), False

    def component(self) -> ContextComponent:
        """``core.permissions``: the preset in effect at each boundary (one object, kept)."""
        if self._component is None:
            self._component = ContextComponent(PERMISSIONS_KEY, self._render)
        return self._component

    def _render(self) -> Rendered:
        # Sampled at every step: the text is kept for the preset it was rendered for (a frozen
        # value; the sandbox mode and whether commands run never change in a session).
        current, kept = self._current, self._rendered
        if kept is not None and kept[0] is current:
            return kept[1]
        commands = commands_text(current, self._sandbox) if self._commands else ""
        summary = current.summary() + (f"\n{commands}" if commands else "")
        # Spec 000: current system permissions supersede earlier guidance — also a
        # replayed version-2 <permissions> snapshot, which stands later in the history.
        rendered = Rendered(
            baseline=f"<permissions>\n{SUPERSEDES}\n{summary}\n</permissions>",
            update=f"Current permissions (these supersede earlier guidance):\n{summary}",
        )
        self._rendered = (current, rendered)
        return rendered


def _joined(decision: Decision, reason: str) -> str:
    """``reason`` first, then the preset's own question (when it asked one)."""
    return f"{reason} {decision.reason}" if decision.kind == "ask" and decision.reason else reason
