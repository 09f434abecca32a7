"""The error a session's start raises: one line that names the fix (a module of its own so that the
settings table, the session and the CLI can all raise it without importing each other)."""


class TraceError(RuntimeError):
    """A tracing session could not be started (its message is one line and names the fix)."""
