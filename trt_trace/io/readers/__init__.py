"""Trace readers: every trace file trt_trace reads (summary, diff, merge, slice, export, view's
checks, plots) goes through here, streamed in bounded chunks.

    info = read(path, visitor)            # slices in chunks, other events as dicts (chrome_json.Visitor)
    calls = read_calls(path, on_calls)    # whole calls, one CALL_DTYPE row each (calls.py)

The file's format is told by its content (trt_trace/io/formats.py, the registry writers use too;
chrome_json.py and perfetto.py register theirs); each format's reader turns it into the same
slices, so everything above works on any of them.
"""

from __future__ import annotations

from .calls import CallsRead, Window, read_calls, trace_origin
from .chrome_json import Visitor
from .in_memory import EventsReader, load_events
from .opening import open_reader, read
from .perfetto import PerfettoReader
from .trace_info import CUT_SHORT, NotATrace, ProcessInfo, TraceFileError, TraceInfo

__all__ = ["CUT_SHORT", "CallsRead", "EventsReader", "NotATrace", "PerfettoReader", "ProcessInfo", "TraceFileError",
           "TraceInfo", "Visitor", "Window", "load_events", "open_reader", "read", "read_calls", "trace_origin"]
