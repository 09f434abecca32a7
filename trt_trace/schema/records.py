"""The record layout shared with C++ (csrc/common/record.h) and the engine table's columns."""

from __future__ import annotations

import numpy as np

# The record kinds of csrc/common/record.h (TRT_TRACE_RECORD_KINDS): each 40 bytes, with the same five fields
# at bytes 24..36 (engine, thread, kind tag `phase`, flags, device), each field named for what it holds in
# that kind. tests/test_ring_buffer.py checks every kind, field by field, against the layout C++ exports
# from its own definition (torch.ops.trt_trace._record_layout).
_SHARED_FIELDS = [("engine_id", "<u4"), ("thread_id", "<u4"), ("phase", "u1"), ("flags", "u1"), ("device", "<u2")]
RECORD_KINDS: dict[str, list[tuple[str, str]]] = {
    # kCall .. kCallerWait: the spans a trace shows. C++ hands batches of these (and layers) over as raw bytes.
    "span": [("begin_ns", "<i8"), ("end_ns", "<i8"), ("call_id", "<u8"), *_SHARED_FIELDS, ("stream", "<u4")],
    # kPhaseBounds: up to three of a call's inner phase boundaries (never leaves C++: the drain expands it).
    "phase_bounds": [("bound0_ns", "<i8"), ("bound1_ns", "<i8"), ("bound2_ns", "<i8"), *_SHARED_FIELDS,
                     ("unused", "<u4")],
    # kGpuPending, kCallerWaitPending: a call's two CUDA events (never leave C++: the drain resolves them).
    "gpu_pending": [("start_event", "<u8"), ("stop_event", "<u8"), ("call_id", "<u8"), *_SHARED_FIELDS,
                    ("stream", "<u4")],
    # kLayer: one layer of a call profiled per layer; name_id indexes the interned layer names.
    "layer": [("begin_ns", "<i8"), ("end_ns", "<i8"), ("call_id", "<u8"), *_SHARED_FIELDS, ("name_id", "<u4")],
    # kInference: a model call (docs/inference.md); kind says what was called (trace_format.INFERENCE_KINDS).
    "inference": [("begin_ns", "<i8"), ("end_ns", "<i8"), ("call_id", "<u8"), *_SHARED_FIELDS, ("kind", "<u4")],
}
KIND_DTYPES: dict[str, np.dtype] = {kind: np.dtype(fields) for kind, fields in RECORD_KINDS.items()}
assert all(dt.itemsize == 40 for dt in KIND_DTYPES.values())
# A drained batch: spans, and layer records among them (read those as LAYER_DTYPE: as_layers).
RECORD_DTYPE = KIND_DTYPES["span"]
LAYER_DTYPE = KIND_DTYPES["layer"]


def layout() -> list[str]:
    """The kinds as torch.ops.trt_trace._record_layout() lists them: "kind:size", then "field:offset:size"."""
    out: list[str] = []
    for kind, dt in KIND_DTYPES.items():
        out.append(f"{kind}:{dt.itemsize}")
        out += [f"{name}:{dt.fields[name][1]}:{dt.fields[name][0].itemsize}" for name in dt.names]
    return out


def as_layers(records: np.ndarray) -> np.ndarray:
    """A batch's layer records (phase == LAYER_RECORD) seen as their own kind (no copy when contiguous)."""
    return np.ascontiguousarray(records).view(LAYER_DTYPE)


# What a record's phase and flags mean: trace_format.Phase and Flag.

# Columns of torch.ops.trt_trace._engine_stats(): derived from the phase list (phases.py).
from .phases import STATS_COLUMNS  # noqa: E402, F401


def from_bytes(buf: bytes | memoryview | np.ndarray) -> np.ndarray:
    """Views a batch of raw records as a structured array (no copy)."""
    return np.frombuffer(buf, dtype=RECORD_DTYPE)
