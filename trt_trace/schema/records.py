"""The record layout shared with C++ (csrc/common/record.h) and the engine table's columns."""

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

# What a record's phase and flags mean: trace_format.Phase and Flag.

# Columns of torch.ops.trt_trace._engine_stats(): derived from the phase list (phases.py).
from .phases import STATS_COLUMNS  # noqa: E402, F401


def from_bytes(buf: bytes | memoryview | np.ndarray) -> np.ndarray:
    """Views a batch of raw records as a structured array (no copy)."""
    return np.frombuffer(buf, dtype=RECORD_DTYPE)
