"""The record layout shared with C++ (csrc/common/record.h) and the names of its fields' values."""

from __future__ import annotations

import numpy as np

# One 40-byte record per event; C++ hands batches of these over as raw bytes.
RECORD_DTYPE = np.dtype(
    [
        ("begin_ns", "<i8"),
        ("end_ns", "<i8"),
        ("call_id", "<u8"),
        ("engine_id", "<u4"),
        ("thread_id", "<u4"),
        ("phase", "u1"),
        ("flags", "u1"),
        ("device", "<u2"),
        ("stream", "<u4"),
    ]
)
assert RECORD_DTYPE.itemsize == 40

PHASE_CALL = 0
PHASE_GPU = 5
# Index = Record.phase. Host phases 1..4 partition the call.
PHASE_NAMES = ("execute_engine", "workspace", "inputs", "outputs", "enqueue", "gpu")
HOST_PHASES = PHASE_NAMES[1:5]
# The durations of a call that tables and diffs report: its host time, its host phases, its GPU span.
DURATIONS = ("total", *HOST_PHASES, "gpu")

FLAG_ERROR = 1
FLAG_NESTED = 2
FLAG_CAPTURED = 4
NO_DEVICE = 0xFFFF

# Columns of torch.ops.trt_trace.engine_stats() (csrc/hook/engine_stats.h StatColumn).
STATS_COLUMNS = (
    "calls",
    "errors",
    "total_ns",
    "workspace_ns",
    "inputs_ns",
    "outputs_ns",
    "enqueue_ns",
    "gpu_ns",
    "gpu_calls",
)


def from_bytes(buf: bytes | memoryview | np.ndarray) -> np.ndarray:
    """Views a batch of raw records as a structured array (no copy)."""
    return np.frombuffer(buf, dtype=RECORD_DTYPE)
