"""Sessions across tools: importing other agents' sessions, exporting ours in readable forms.

Importers (one module per source format: ``claude_code``, ``codex``, ``opencode``, ``pi``) read
a foreign session as untrusted data and map it onto the package's own log (``draft``), keeping
tool calls and their results structured so the session continues on any wire format.
"""

from __future__ import annotations

from .draft import ImportReport
from .importing import FORMATS, detect_format, import_session

__all__ = ["FORMATS", "ImportReport", "detect_format", "import_session"]
