"""Trace writers: each turns drained record batches into one output format, streamed."""

from .chrome_json import ChromeJsonWriter
from .perfetto_trace import PerfettoTraceWriter
from .select import FORMATS, resolve_format, suffix_matches

__all__ = ["FORMATS", "ChromeJsonWriter", "PerfettoTraceWriter", "resolve_format", "suffix_matches"]
