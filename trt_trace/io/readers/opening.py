"""Opening a trace: the reader of the file's format, told by its content (the format registry,
trt_trace/io/formats.py), or one TraceFileError line."""

from __future__ import annotations

import os
from typing import Any

from .. import formats
from .chrome_json import Visitor
from .trace_info import TraceFileError, TraceInfo


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
        kind = named.noun if named else "trace"
        hint = "" if named else " (neither Chrome JSON nor Perfetto)"
        raise TraceFileError(f"{path} is not a {kind} file{hint}")
    if fmt.reader is None:
        raise TraceFileError(f"{path} is a {fmt.name} file, which trt_trace writes but does not read back")
    return fmt.reader(path)


def read(path: str, visitor: Visitor | None = None) -> TraceInfo:
    return open_reader(path).read(visitor or Visitor())
