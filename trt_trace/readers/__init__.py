"""Trace readers: every trace file trt_trace reads (summary, diff, merge, slice, export, view's
checks, plots) goes through here, streamed in bounded chunks.

    info = read(path, visitor)            # slices in chunks, other events as dicts (chrome_json.Visitor)
    calls = read_calls(path, on_calls)    # whole calls, one CALL_DTYPE row each (calls.py)

The file's format is told by its content (trt_trace/formats.py, the registry writers use too);
each format's reader turns it into the same slices, so everything above works on any of them.
"""

from __future__ import annotations

import os
from typing import Any

from .. import formats
from .calls import CallsRead, Window, read_calls, trace_origin
from .chrome_json import Visitor
from .in_memory import EventsReader, load_events
from .trace_info import CUT_SHORT, ProcessInfo, TraceFileError, TraceInfo


def open_reader(path: str) -> Any:
    """The reader of the file's format; TraceFileError (one line) where there is none."""
    if os.path.isdir(path):
        raise TraceFileError(f"{path} is a directory, not a trace file")
    try:
        fmt = formats.sniff(path)
    except FileNotFoundError:
        raise TraceFileError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if os.path.getsize(path) == 0:
        raise TraceFileError(f"{path} is empty (not a trace file)")
    if fmt is None:
        named = formats.by_suffix(path)
        kind = {"json": "trace JSON", "perfetto": "Perfetto trace"}.get(named.name if named else "", "trace")
        hint = "" if named else " (neither Chrome JSON nor Perfetto)"
        raise TraceFileError(f"{path} is not a {kind} file{hint}")
    return fmt.reader_class()(path)


def read(path: str, visitor: Visitor | None = None) -> TraceInfo:
    return open_reader(path).read(visitor or Visitor())


__all__ = ["CUT_SHORT", "CallsRead", "EventsReader", "ProcessInfo", "TraceFileError", "TraceInfo", "Visitor", "Window",
           "load_events", "open_reader", "read", "read_calls", "trace_origin"]
