"""What `trt-trace view` checks before it serves a trace: that the Perfetto UI can hold it (the
in-browser UI holds a few GB of memory; JSON traces of about 1 GB have crashed it, and a native
trace needs about as much memory per event as JSON), and how the trace ended."""

from __future__ import annotations

import os

from .. import formats
from .calls import read_calls
from .end_notes import end_notes
from .opening import open_reader
from .trace_info import NotATrace, TraceFileError

# The largest file `view` hands to the UI, by format: about 5 M events either way.
UI_LIMIT_BYTES = {"json": 1 << 30, "perfetto": 320 << 20}


def too_large(path: str) -> str | None:
    """One line where the file is larger than the UI holds, naming the command that cuts it."""
    try:
        fmt = formats.sniff(path)
        size = os.path.getsize(path)
    except OSError:
        return None
    if fmt is None:
        return None
    limit = UI_LIMIT_BYTES.get(fmt.name)
    if limit is None or size <= limit:
        return None
    name = os.path.basename(path)
    return (f"{path} is {size / 2**20:,.0f} MiB, more than the Perfetto UI holds (about {limit / 2**20:,.0f} MiB of "
            f"{'JSON' if fmt.name == 'json' else 'native trace'}); cut a window first: "
            f"trt-trace slice {name} -o window.json --from 0 --to 10 (seconds), then view window.json")


def end_state_notes(path: str) -> list[str]:
    """The trace's end notes (cut short, size limit, split, ...), [] where a trace cannot be read here (the UI
    may still show it). NotATrace, and the opening's errors (empty, not JSON nor Perfetto), go through: no
    trace to serve."""
    open_reader(path)
    try:
        return end_notes(read_calls(path, lambda calls, info: None))
    except NotATrace:
        raise
    except TraceFileError:
        return []
