"""The session's engine: one turn, admission, the log writer, leases, parts and tool calls."""
