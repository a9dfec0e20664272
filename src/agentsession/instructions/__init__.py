"""Instruction files (AGENTS.md, CLAUDE.md as a fallback name) as System Context components.

``service`` decides which files apply to a session and renders each as its own component,
``files`` finds and reads one file safely (bounded, confined, never raising) and ``keys`` turns a
file's relative path into its stable component key.
"""

from __future__ import annotations

from .files import (
    CLAUDE_FILE,
    INSTRUCTION_FILE,
    MAX_INSTRUCTION_BYTES,
    DiagnosticKind,
    InstructionDiagnostic,
)
from .keys import GLOBAL_KEY, KEY_PREFIX, instruction_key, path_from_key
from .service import (
    InstructionFile,
    InstructionService,
    global_instruction_path,
    repository_root,
)

__all__ = [
    "CLAUDE_FILE",
    "GLOBAL_KEY",
    "INSTRUCTION_FILE",
    "KEY_PREFIX",
    "MAX_INSTRUCTION_BYTES",
    "DiagnosticKind",
    "InstructionDiagnostic",
    "InstructionFile",
    "InstructionService",
    "global_instruction_path",
    "instruction_key",
    "path_from_key",
    "repository_root",
]
