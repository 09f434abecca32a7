"""Which trace format a session writes: the one asked for, else the one the file's suffix names
(the format registry, trt_trace/formats.py, decides both)."""

from __future__ import annotations

from ..formats import resolve_format, suffix_matches, written

FORMATS = written()

__all__ = ["FORMATS", "resolve_format", "suffix_matches"]
