"""Which trace format a session writes: the one asked for, else the one the file's suffix names."""

from __future__ import annotations

from ..trace_format import FORMATS, JSON_SUFFIX, PERFETTO_SUFFIXES


def resolve_format(path: str, requested: str | None = None) -> str:
    """'json' or 'perfetto'. requested None or 'auto': by suffix (*.pftrace, *.perfetto-trace, *.pb
    -> perfetto; anything else -> json, the format every older tool reads). Raises ValueError."""
    if requested is None or requested.strip().lower() in ("", "auto"):
        return "perfetto" if path.endswith(PERFETTO_SUFFIXES) else "json"
    value = requested.strip().lower()
    if value not in FORMATS:
        raise ValueError(f"unknown trace format {requested!r}; use json or perfetto")
    return value


def suffix_matches(path: str, fmt: str) -> bool:
    return path.endswith(PERFETTO_SUFFIXES) if fmt == "perfetto" else path.endswith(JSON_SUFFIX)
