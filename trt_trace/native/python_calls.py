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
    # (engine id, device or -1, layered) -> handle, 0: not opened, LAYERED: take the layered way
    begin: ctypes._CFuncPtr
    mark: ctypes._CFuncPtr  # (Mark) -> None
    end: ctypes._CFuncPtr  # (handle, error) -> None
    open_calls: ctypes._CFuncPtr  # () -> calls open on this thread
    # (engine id, device or -1) -> NO_LAYERS / NOT_PROFILED / PROFILED / PROFILED_WANTS_INFO; the GIL released
    layers_open: ctypes._CFuncPtr
    # (outcome, note, names NUL-joined, ns array, n, layer information or None) -> None
    layers_close: ctypes._CFuncPtr


# trt_trace_py_call_begin with layered = 0 while per-layer timing is on: nothing opened.
LAYERED = -1
# trt_trace_py_layers_open's answers.
NO_LAYERS, NOT_PROFILED, PROFILED, PROFILED_WANTS_INFO = -1, 0, 1, 2
# trt_trace_py_layers_close's outcomes.
RETURNED, RAISED, NOT_PROFILED_AFTER_ALL = 0, 1, 2


_entry: Entry | None = None


def entry() -> Entry:
    """The C functions, bound at the first use (the library is loaded first)."""
    global _entry
    if _entry is None:
        fn = _library.c_function
        _entry = Entry(
            engine=fn("trt_trace_py_engine", ctypes.c_uint32, ctypes.c_char_p),
            begin=fn("trt_trace_py_call_begin", ctypes.c_int32, ctypes.c_uint32, ctypes.c_int32, ctypes.c_int32),
            mark=fn("trt_trace_py_call_mark", None, ctypes.c_int32),
            end=fn("trt_trace_py_call_end", None, ctypes.c_int32, ctypes.c_int32),
            open_calls=fn("trt_trace_py_calls_open", ctypes.c_int32),
            layers_open=fn("trt_trace_py_layers_open", ctypes.c_int32, ctypes.c_uint32, ctypes.c_int32,
                           release_gil=True),
            layers_close=fn("trt_trace_py_layers_close", None, ctypes.c_int32, ctypes.c_char_p, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_int64), ctypes.c_int32, ctypes.c_char_p),
        )
    return _entry


def engine_id(name: str) -> int:
    """A new engine id for a Python engine object called `name` (keep it with the object)."""
    return int(entry().engine(name.encode("utf-8", "replace")))


def open_calls() -> int:
    """Python calls this thread has open now (0 between calls)."""
    return int(entry().open_calls())


def close_layers(outcome: int, note: str = "", layers: list[tuple[str, int]] | None = None,
                 info: str | None = None) -> None:
    """Ends this thread's innermost layer decision (after its call ended): the layers its profiler heard,
    (name, ns) in order."""
    layers = layers or []
    names = b"".join(name.encode("utf-8", "replace").replace(b"\0", b" ") + b"\0" for name, _ in layers)
    ns = (ctypes.c_int64 * max(len(layers), 1))(*(t for _, t in layers))
    entry().layers_close(outcome, note.encode("utf-8", "replace"), names or None, ns, len(layers),
                         None if info is None else info.encode("utf-8", "replace"))
