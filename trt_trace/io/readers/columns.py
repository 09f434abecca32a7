"""The rows the native readers hand over, as numpy views (csrc/readers/read_types.h: Slice, Call).

A Slice is one parsed event (a Chrome JSON X / s / f event, a Perfetto begin-end pair) whose first
40 bytes are the tracer's Record; a Call is a whole call joined from its slices (calls.py)."""

from __future__ import annotations

import numpy as np

from ...schema.records import RECORD_DTYPE
from ...schema.trace_format import DURATIONS

SLICE_DTYPE = np.dtype(
    [(name, RECORD_DTYPE.fields[name][0]) for name in RECORD_DTYPE.names]
    + [("pid", "<u4"), ("tid", "<u4"), ("name_off", "<u4"), ("name_len", "<u4"), ("kind", "u1"),
       ("has_device", "u1"), ("origin", "u1"), ("pad", "V5")]
)
assert SLICE_DTYPE.itemsize == 64

SLICE_X, FLOW_START, FLOW_END = 0, 1, 2  # Slice.kind
NATIVE, CONVERTED = 0, 1  # Slice.origin: parsed by the fast path, or converted from a dict (written as one)
FLAG_FLOW_OUT, FLAG_FLOW_IN = 1 << 6, 1 << 7  # reader-only bits of Slice.flags (Perfetto launch flows)

NS_COLUMNS = DURATIONS  # Call.ns: the call's total, its host phases, its GPU span (-1: none)
CALL_DTYPE = np.dtype([
    ("begin_ns", "<i8"), ("ns", "<i8", (len(NS_COLUMNS),)), ("wait_ns", "<i8"), ("call_id", "<u8"), ("pid", "<u4"),
    ("engine_id", "<u4"), ("thread_id", "<u4"), ("device", "<u2"), ("flags", "u1"), ("pad", "u1"),
])
assert CALL_DTYPE.itemsize == 40 + 8 * len(NS_COLUMNS)  # read_types.h's static_assert; tt_layout() checks the rest

# Call.flags
CALL_ERROR, CALL_NESTED, CALL_CAPTURED, CALL_ON_CUDA, CALL_GPU_ENGINE_STREAM = 1, 2, 4, 8, 16
NO_SPAN = -1

KEY_DTYPE = np.dtype([("pid", "<u8"), ("call_id", "<u8")])  # (pid, call id) of a call


def layout() -> list[int]:
    """Sizes and offsets as tt_layout() lists them, from the dtypes above."""
    s, c = SLICE_DTYPE.fields, CALL_DTYPE.fields
    return [SLICE_DTYPE.itemsize, s["pid"][1], s["tid"][1], s["name_off"][1], s["kind"][1], s["has_device"][1],
            CALL_DTYPE.itemsize, c["ns"][1], c["wait_ns"][1], c["call_id"][1], c["pid"][1], c["engine_id"][1],
            c["thread_id"][1], c["device"][1], c["flags"][1]]


def keys_of(pid: np.ndarray, call_id: np.ndarray) -> np.ndarray:
    """(pid, call id) pairs as one sortable 128-bit key per call (KEY_DTYPE)."""
    out = np.empty(len(pid), dtype=KEY_DTYPE)
    out["pid"] = pid
    out["call_id"] = call_id
    return out


def key_codes(keys: np.ndarray) -> np.ndarray:
    """The keys as one opaque 16-byte value each, which np.isin and np.unique compare as a whole."""
    return np.ascontiguousarray(keys).view(np.dtype("V16"))
