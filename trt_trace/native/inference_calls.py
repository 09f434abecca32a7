"""The tracer's entry for whole inferences (csrc/hook/inference_calls.h), through ctypes: an inference is
opened before the model's call and closed after it (trt_trace/runtime/inference.py). Bound once with
`ctypes.PyDLL` (the GIL stays held: each call is a few hundred nanoseconds of C that never blocks)."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass

from . import _library


class Kind(enum.IntEnum):
    """InferenceKind (csrc/hook/inference_calls.h): what was called; the trace's `kind` arg names it."""

    AOTI = 1
    MODULE = 2


@dataclass(frozen=True)
class Entry:
    """The bound C functions (call them directly on the hot path)."""

    begin: ctypes._CFuncPtr  # () -> handle, 0: not opened
    end: ctypes._CFuncPtr  # (handle, Kind, error) -> None


_entry: Entry | None = None


def entry() -> Entry:
    """The C functions, bound at the first use (the library is loaded first)."""
    global _entry
    if _entry is None:
        _entry = Entry(begin=_library.c_function("trt_trace_inference_begin", ctypes.c_int32),
                       end=_library.c_function("trt_trace_inference_end", None, ctypes.c_int32, ctypes.c_int32,
                                               ctypes.c_int32))
    return _entry
