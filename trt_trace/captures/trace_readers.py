"""Captures as inputs of trt_trace's own reading verbs (summary, diff, merge, export): the readers of
torch.profiler Chrome traces and Nsight Systems SQLite exports, registered here with the format
registry (trt_trace/io/formats.py) as kinds trt_trace reads but never writes.

A capture is read whole by its capture reader (torch_profiler.read / nsys_sqlite.read: numpy columns,
a few tens of bytes per call), and its calls are handed to readers.read_calls as whole calls
(CALL_DTYPE rows) directly: the call joiner's rule that a call's phases add up to it holds for
trt_trace's own slices, not for a profiler's scopes, whose gaps are the profiler's own time. Each
row's `call_id` is its row in the capture (CaptureCalls), so the summary finds the call's kernels
(readers.TraceInfo.capture) through it; nsys's own call ids stay in CaptureCalls.call_id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..io import formats
from ..io.readers.columns import CALL_DTYPE, NO_SPAN, SLICE_DTYPE, SLICE_X
from ..io.readers.trace_info import CLOSED, TraceFileError, TraceInfo
from . import nsys_sqlite, torch_profiler
from .model import CaptureCalls, CaptureError

CHUNK = 1 << 16  # calls handed on at a time
NO_DEVICE = 0xFFFF


class CaptureReader:
    """The registry's reader of one capture file (subclasses name the capture reader)."""

    format = ""
    whole_calls = True  # readers.read_calls: this reader hands out whole calls, not slices to join

    def __init__(self, path: str) -> None:
        self.path = path
        self._calls: CaptureCalls | None = None

    def _read_capture(self) -> CaptureCalls:
        raise NotImplementedError

    def capture(self) -> CaptureCalls:
        """The capture's calls (read once). TraceFileError (one line) where it cannot be used."""
        if self._calls is None:
            try:
                calls = self._read_capture()
            except CaptureError as exc:
                raise TraceFileError(str(exc)) from None
            except (OSError, MemoryError) as exc:
                raise TraceFileError(f"cannot read {self.path}: {getattr(exc, 'strerror', None) or exc}") from None
            if not len(calls):
                raise TraceFileError(f"{self.path} is a {calls.source} capture without trt_trace's engine calls "
                                     f"({_why_empty(calls)})")
            self._calls = calls
        return self._calls

    def _info(self, info: TraceInfo | None) -> tuple[CaptureCalls, TraceInfo]:
        calls = self.capture()
        info = info or TraceInfo(self.path, self.format)
        info.capture = calls
        info.bytes_read = info.bytes_read or 0
        for pid in np.unique(calls.pid).tolist():
            p = info.process(int(pid) & 0xFFFFFFFF)
            if not p.metas:
                p.label = f"{calls.source} pid {pid}"
                # The capture's end: the profiler wrote it whole (a cut file's notes say otherwise).
                info.metadata_event(p.pid, {"capture": calls.source, "ended": CLOSED})
            mine = calls.engine[calls.pid == pid]
            for e in np.unique(mine).tolist():
                p.engines[int(e)] = calls.engines[int(e)]
        if len(calls):
            low = int(calls.begin_ns.min())
            info.origin_ns = low if info.origin_ns is None else min(info.origin_ns, low)
        return calls, info

    def call_rows(self, calls: CaptureCalls) -> np.ndarray:
        out = np.zeros(len(calls), dtype=CALL_DTYPE)
        out["begin_ns"] = calls.begin_ns
        out["ns"] = calls.durations()
        out["ns"][:, -1] = NO_SPAN
        out["wait_ns"] = -1
        out["call_id"] = np.arange(len(calls), dtype=np.uint64)
        out["pid"] = calls.pid & 0xFFFFFFFF
        out["engine_id"] = calls.engine
        out["thread_id"] = calls.tid & 0xFFFFFFFF
        out["device"] = NO_DEVICE
        return out

    def read_calls(self, on_calls: Callable[[np.ndarray, TraceInfo], None], info: TraceInfo) -> int:
        """Every call, as whole calls, to on_calls in chunks; returns how many."""
        calls, info = self._info(info)
        rows = self.call_rows(calls)
        for start in range(0, len(rows), CHUNK):
            on_calls(rows[start: start + CHUNK], info)
        return len(rows)

    def read(self, visitor: Any, info: TraceInfo | None = None, progress: Any = None) -> TraceInfo:
        """The calls as execute_engine slices (what a visitor of slices, e.g. trace_origin, reads)."""
        calls, info = self._info(info)
        s = np.zeros(len(calls), dtype=SLICE_DTYPE)
        s["begin_ns"], s["end_ns"] = calls.begin_ns, calls.end_ns
        s["call_id"] = np.arange(len(calls), dtype=np.uint64)
        s["engine_id"] = calls.engine
        s["pid"], s["tid"] = calls.pid & 0xFFFFFFFF, calls.tid & 0xFFFFFFFF
        s["kind"] = SLICE_X
        s["origin"] = 1  # CONVERTED: no literals in a buffer
        info.slices += len(s)
        for start in range(0, len(s), CHUNK):
            visitor.slices(s[start: start + CHUNK], None)
        return info


def _why_empty(calls: CaptureCalls) -> str:
    if calls.source == "nsys":
        return "no NVTX ranges of the trt_trace domain: run with TRT_TRACE_NVTX=1 under nsys profile --trace=nvtx"
    return "no trt:: scopes: was trt_trace imported while the profiler recorded?"


class TorchProfilerReader(CaptureReader):
    format = "torch.profiler"

    def _read_capture(self) -> CaptureCalls:
        return torch_profiler.read(self.path)


class NsysReader(CaptureReader):
    format = "nsys"

    def _read_capture(self) -> CaptureCalls:
        return nsys_sqlite.read(self.path)


CAPTURE_FORMATS = ("torch.profiler", "nsys")

# Captures of the profilers that own CUPTI, read (summary, diff, merge, export) but never written.
formats.register(formats.TraceFormat("torch.profiler", (".json", ".json.gz"), torch_profiler.sniff, TorchProfilerReader,
                                     priority=10, description="a torch.profiler capture (Chrome trace JSON)",
                                     noun="torch.profiler capture"))
formats.register(formats.TraceFormat("nsys", (".sqlite",), nsys_sqlite.sniff, NsysReader, priority=10,
                                     description="an Nsight Systems SQLite export",
                                     noun="Nsight Systems SQLite export"))
