"""Trace writers: each turns drained record batches into one output format, streamed. Which one a session
uses is the format registry's answer (trt_trace/io/formats.py), where each writer's module adds it; the writer
contract is formats.TraceWriter."""

from .chrome_json import ChromeJsonWriter
from .perfetto_trace import PerfettoTraceWriter

__all__ = ["ChromeJsonWriter", "PerfettoTraceWriter"]
