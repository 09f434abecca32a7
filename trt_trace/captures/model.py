"""What a capture reader hands on: the engine calls found in another profiler's capture, as columns.

A capture is a file written by a profiler that owns CUPTI (torch.profiler's Chrome trace, an Nsight
Systems export): it holds trt_trace's scopes or NVTX ranges for every engine call, and, where CUDA
activity was recorded, the device work each call launched, joined through the profiler's own
correlation ids (join.py). One row per call, numpy columns, no Python object per call: the readers
registry, `summary`, `diff` and `merge` consume these arrays as they are.

Times are in ns on the capture's own clock (`clock` says which); durations are exact differences of
the capture's timestamps. Device time is never estimated: `kernel_ns` and the other unions are of
the intervals CUPTI reported for the activities the call launched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..schema.trace_format import DURATIONS, HOST_PHASES, PHASE_NAMES

# DeviceActivities.kind
KERNEL, MEMCPY, MEMSET = 0, 1, 2
KIND_NAMES = ("kernel", "memcpy", "memset")
# DeviceActivities.phase: the call's host phase whose scope held the launch (0: the call itself, outside
# every phase scope: the profiler's own cost between two of them)
PHASE_CODES = ("call", *HOST_PHASES)
# A scope's or range's name (the slice names: the call's, then its host phases') -> its PHASE_CODES code.
SCOPE_PHASE_CODES = {PHASE_NAMES[0]: 0, **{name: 1 + i for i, name in enumerate(HOST_PHASES)}}


class CaptureError(ValueError):
    """A capture that cannot be read: the message is one line naming the file and why."""


def _i64(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int64)


def _i32(n: int = 0) -> np.ndarray:
    return np.zeros(n, dtype=np.int32)


@dataclass
class DeviceActivities:
    """The device activities (kernels, copies, memsets) that the calls launched: one row each."""

    call: np.ndarray = field(default_factory=_i64)  # row in CaptureCalls
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # KERNEL, MEMCPY, MEMSET
    name: np.ndarray = field(default_factory=_i32)  # index into CaptureCalls.activity_names
    begin_ns: np.ndarray = field(default_factory=_i64)
    end_ns: np.ndarray = field(default_factory=_i64)
    device: np.ndarray = field(default_factory=_i32)
    stream: np.ndarray = field(default_factory=_i64)
    phase: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))  # PHASE_CODES index

    def __len__(self) -> int:
        return len(self.call)


@dataclass
class CaptureCalls:
    """Engine calls of one capture. Columns are numpy arrays of one length (the calls), sorted by
    begin_ns. `has_device_activity` is False for a capture without CUDA activity (a CPU-only
    torch.profiler trace, nsys without --trace=cuda): then every device column is 0 and no call's
    kernel time is known (kernel_ns_known())."""

    source: str  # "torch.profiler" or "nsys"
    path: str
    clock: str  # what begin_ns / end_ns count from
    engines: list[str]  # engine names; `engine` indexes it
    engine: np.ndarray  # int32 [calls]
    pid: np.ndarray  # int64 [calls]
    tid: np.ndarray  # int64 [calls]: the OS thread id
    call_id: np.ndarray  # int64 [calls]: trt_trace's call id (NVTX payload), -1 where the capture has none
    begin_ns: np.ndarray  # int64 [calls]
    end_ns: np.ndarray  # int64 [calls]
    phase_ns: np.ndarray  # int64 [calls, host phases]: trace_format.HOST_PHASES, in order
    has_device_activity: bool
    launches: np.ndarray  # int32 [calls]: CUDA API calls inside the call that launch device work
    launches_unmatched: np.ndarray  # int32 [calls]: of those, how many had no device activity in the capture
    kernels: np.ndarray  # int32 [calls]
    kernel_ns: np.ndarray  # int64 [calls]: union of the call's kernel intervals
    copies: np.ndarray  # int32 [calls]: memcpy and memset activities
    copy_ns: np.ndarray  # int64 [calls]: union of their intervals
    device_ns: np.ndarray  # int64 [calls]: union of all the call's device activities
    device_begin_ns: np.ndarray  # int64 [calls]: first device activity's begin, -1 where none
    device_end_ns: np.ndarray  # int64 [calls]: last device activity's end, -1 where none
    activities: DeviceActivities
    activity_names: list[str]
    metadata: dict = field(default_factory=dict)  # the capture's own header (trace name, versions, devices)
    notes: list[str] = field(default_factory=list)  # what the reader left out and why, one line each
    api_calls: np.ndarray = field(default_factory=_i32)  # int32 [calls]: CUDA API calls of any kind inside the call

    def __len__(self) -> int:
        return len(self.engine)

    @property
    def total_ns(self) -> np.ndarray:
        return self.end_ns - self.begin_ns

    def engine_names(self) -> np.ndarray:
        """The engine name of every call (object array)."""
        return np.asarray(self.engines, dtype=object)[self.engine] if len(self) else np.zeros(0, dtype=object)

    def durations(self) -> np.ndarray:
        """int64 [calls, len(trace_format.DURATIONS)]: total, the four host phases and `gpu`, the column
        layout of trt_trace's own per-call tables (per_call.CallTable.ns). A capture has no CUDA-event
        span, so `gpu` is -1 (per_call.NO_SPAN) on every call: its device time is kernel_ns."""
        out = np.empty((len(self), len(DURATIONS)), dtype=np.int64)
        out[:, 0] = self.total_ns
        out[:, 1 : 1 + len(HOST_PHASES)] = self.phase_ns
        out[:, DURATIONS.index("gpu")] = -1
        return out

    def no_cuda_activity(self) -> np.ndarray:
        """bool [calls]: a capture with CUDA activity that holds none at all in this call's time on its thread
        (no API call, so no launch and no kernel): the profiler recorded nothing there, which is not 0 µs
        of kernels (nsys 2023.4 under a CUDA 13 driver loses whole threads' CUDA records: captures.md)."""
        if not self.has_device_activity or len(self.api_calls) != len(self):
            return np.zeros(len(self), dtype=bool)
        return self.api_calls == 0

    def kernel_ns_known(self) -> np.ndarray:
        """bool [calls]: the capture recorded CUDA activity and the call launched work that it holds."""
        return (self.kernels + self.copies) > 0 if self.has_device_activity else np.zeros(len(self), dtype=bool)

