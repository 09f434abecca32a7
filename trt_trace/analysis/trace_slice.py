"""`trt-trace slice TRACE -o WINDOW.json`: a window of a trace (`--from`/`--to` seconds from its
first slice, `--skip-first N`, `--engines`) as a new Chrome JSON trace, small enough for the
Perfetto UI, which holds a few hundred MB of trace at most.

Two passes (trt_trace/io/readers): the first finds the whole calls in the window, the second writes
them with every slice and launch flow, each process's names, metadata and track names, and a last
metadata event that says what was cut (`"sliced"`) and `"ended": "closed"`. Any input format; the
output is always Chrome JSON (the events re-encoded by the writer's own encoder)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..io.output_files import output_problem
from ..io.readers import TraceFileError, Visitor, Window, native, read, read_calls
from ..io.readers.columns import NATIVE, keys_of
from ..io.readers.end_notes import end_notes
from ..io.readers.trace_info import bad_input_rc
from ..schema.trace_format import INFERENCE_CATEGORY, METADATA_EVENT
from ..schema.version import __version__
from .merge import MergeError, _Output, engine_literals, json_output_problem


class SliceError(ValueError):
    """One line; rc: the exit code it means (2: bad input, such as a file that is not a trace)."""

    def __init__(self, message: str, rc: int = 1) -> None:
        super().__init__(message)
        self.rc = rc


class _Keep(Visitor):
    def __init__(self, out: _Output, keep: np.ndarray, engines: dict[int, dict[int, str]], lo: int | None,
                 hi: int | None) -> None:
        self.out = out
        self.keep = keep
        self.lo, self.hi = lo, hi
        self.blobs: dict[int, tuple[bytes, np.ndarray]] = {}
        for pid, names in engines.items():
            self.blobs[pid] = engine_literals(names)

    def _kept(self, pids: np.ndarray, ids: np.ndarray) -> np.ndarray:
        return np.isin(keys_of(pids, ids).view(np.dtype("V16")), self.keep)

    def slices(self, slices: np.ndarray, buf: Any) -> None:
        s = slices[slices["origin"] == NATIVE]
        if not len(s):
            return
        keep = self._kept(s["pid"], s["call_id"])
        so = native.lib()
        address = native.address(buf) if isinstance(buf, bytearray) else 0
        for pid in np.unique(s["pid"][keep]).tolist():
            mine = np.ascontiguousarray(s[keep & (s["pid"] == pid)])
            blob, off = self.blobs.get(pid, (b'""', np.array([0, 2], dtype=np.int64)))
            text = str(pid).encode()
            while True:
                n = so.tt_json_encode(mine.ctypes.data, len(mine), None, address, text, len(text), 0, 0, blob,
                                      off.ctypes.data, len(off) - 1, native.address(self.out.buf), len(self.out.buf))
                if n >= 0:
                    break
                self.out.buf = bytearray(-n)
            self.out.piece(memoryview(self.out.buf)[:n], len(mine))

    def event(self, ev: dict[str, Any]) -> None:
        ph = ev.get("ph")
        if ph == "M":
            self.out.event(ev)
            return
        args = ev.get("args")
        call_id = ev.get("id") if ph in ("s", "t", "f") else (args.get("call_id") if isinstance(args, dict) else None)
        pid = ev.get("pid", 0)
        if ev.get("cat") == INFERENCE_CATEGORY:  # (docs/inference.md) its own call id, no engine call's
            self._inference(ev)
            return
        if isinstance(call_id, int) and isinstance(pid, int) and 0 <= call_id < 1 << 64 and 0 <= pid < 1 << 64:
            if self._kept(np.array([pid], dtype=np.uint64), np.array([call_id], dtype=np.uint64))[0]:
                self.out.event(ev)
            return
        ts = ev.get("ts")  # another tool's event: kept where it lies in the window
        if isinstance(ts, int | float) and not isinstance(ts, bool):
            ns = ts * 1000
            if (self.lo is not None and ns < self.lo) or (self.hi is not None and ns >= self.hi):
                return
        self.out.event(ev)


    def _inference(self, ev: dict[str, Any]) -> None:
        """An inference is kept where it overlaps the window: it begins before its first engine call."""
        ts, dur = ev.get("ts"), ev.get("dur", 0)
        if isinstance(ts, int | float) and isinstance(dur, int | float) and not isinstance(ts, bool):
            begin, end = ts * 1000, (ts + dur) * 1000
            if (self.lo is not None and end <= self.lo) or (self.hi is not None and begin >= self.hi):
                return
        self.out.event(ev)


def slice_trace(path: str, output: str, window: Window) -> tuple[dict[str, Any], list[str]]:
    """Writes the calls of `path` in `window` to `output`; returns what it did and the source's end
    notes (cut short, size limit, ...)."""
    problem = json_output_problem(output, "slice") or output_problem(output, [path], (".json",), "Chrome JSON")
    if problem:
        raise SliceError(problem)
    if os.path.exists(output) and os.path.exists(path) and os.path.samefile(path, output):
        raise SliceError(f"{output} is the input; give another output file")
    keys: list[np.ndarray] = []
    try:
        read_ = read_calls(path, lambda calls, info: keys.append(keys_of(calls["pid"], calls["call_id"])),
                           window=window)
    except TraceFileError as exc:
        raise SliceError(str(exc), rc=bad_input_rc(exc)) from None
    keep = np.sort(np.concatenate(keys).view(np.dtype("V16"))) if keys else np.zeros(0, dtype="V16")
    info = read_.info
    lo = hi = None
    if window.timed and info.origin_ns is not None:
        lo = None if window.from_s is None else info.origin_ns + round(window.from_s * 1e9)
        hi = None if window.to_s is None else info.origin_ns + round(window.to_s * 1e9)
    try:
        out = _Output(output)
    except MergeError as exc:
        raise SliceError(str(exc), rc=exc.rc) from None
    try:
        read(path, _Keep(out, keep, {p.pid: p.engines for p in info.processes.values()}, lo, hi))
        sliced = {"tool": "trt_trace slice", "trt_trace_version": __version__, "source": os.path.basename(path),
                  "source_ended": info.ended, "window": window.describe() or "everything",
                  "calls": read_.kept, "calls_in_source": read_.calls}
        first = min(info.processes.values(), key=lambda p: p.order).pid if info.processes else 0
        out.event({"ph": "M", "name": METADATA_EVENT, "pid": first, "tid": 0,
                   "args": {"sliced": sliced, "ended": "closed"}})
        out.close()
    except TraceFileError as exc:
        out.abandon()
        raise SliceError(str(exc)) from None
    except MergeError as exc:
        raise SliceError(str(exc), rc=exc.rc) from None
    except BaseException:
        out.abandon()
        raise
    return sliced, end_notes(read_)
