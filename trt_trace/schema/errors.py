"""The error a session's start raises: one line that names the fix (a module of its own so that the
settings table, the session and the CLI can all raise it without importing each other)."""


class TraceError(RuntimeError):
    """A tracing session could not be started (its message is one line and names the fix)."""


class BufferUnavailable(TraceError):
    """The session's ring of buffer_events per thread cannot be allocated (the start-up hook then falls
    back to the default buffer, in one line)."""
