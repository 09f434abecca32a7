"""The tracer's entry for engines run from Python (csrc/hook/python_calls.h), through ctypes.

A call of Torch-TensorRT's Python runtime never reaches the BackendSelect hook as a traced call: the
Python side (trt_trace/runtime/python_runtime.py) opens it, marks its phase boundaries and closes it
through these plain C functions of the tracer library. They are bound once, with `ctypes.PyDLL` (the GIL
stays held: each call is a few hundred nanoseconds of C that never blocks, where releasing and taking
the GIL back would cost more than the call)."""

from __future__ import annotations

import ctypes
import enum
from dataclasses import dataclass

from . import _library


class Mark(enum.IntEnum):
    """CallScope::Mark (csrc/hook/call_scope.h): the phase boundaries a Python runtime tells."""

    INPUTS_BEGIN = 0
    INPUTS_END = 1
    OUTPUTS_BEGIN = 2
    OUTPUTS_END = 3
    ENQUEUE_BEGIN = 4


@dataclass(frozen=True)
class Entry:
    """The bound C functions (each a ctypes function object: call it directly on the hot path)."""

    engine: ctypes._CFuncPtr  # (name: bytes) -> engine id, 0: none
    begin: ctypes._CFuncPtr  # (engine id, device or -1) -> handle, 0: not opened
    mark: ctypes._CFuncPtr  # (Mark) -> None
    end: ctypes._CFuncPtr  # (handle, error) -> None
    open_calls: ctypes._CFuncPtr  # () -> calls open on this thread


_entry: Entry | None = None


def entry() -> Entry:
    """The C functions, bound at the first use (the library is loaded first)."""
    global _entry
    if _entry is None:
        fn = _library.c_function
        _entry = Entry(
            engine=fn("trt_trace_py_engine", ctypes.c_uint32, ctypes.c_char_p),
            begin=fn("trt_trace_py_call_begin", ctypes.c_int32, ctypes.c_uint32, ctypes.c_int32),
            mark=fn("trt_trace_py_call_mark", None, ctypes.c_int32),
            end=fn("trt_trace_py_call_end", None, ctypes.c_int32, ctypes.c_int32),
            open_calls=fn("trt_trace_py_calls_open", ctypes.c_int32),
        )
    return _entry


def engine_id(name: str) -> int:
    """A new engine id for a Python engine object called `name` (keep it with the object)."""
    return int(entry().engine(name.encode("utf-8", "replace")))


def open_calls() -> int:
    """Python calls this thread has open now (0 between calls)."""
    return int(entry().open_calls())
