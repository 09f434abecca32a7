"""Whole calls of a trace, streamed: the slices of any reader joined by native code
(csrc/readers/call_joiner.cpp, whose comment gives the rules) into one row per call (CALL_DTYPE),
optionally cut to a window (`--skip-first`, `--from`/`--to`, `--engines`).

What makes a call whole: its execute_engine slice is there and its host phases add up to it (one
ns of rounding per slice). A call with pre-allocated outputs has no outputs phase and is whole;
a call cut by a kill has some of its phases, or phases without its call, and is left out (its
(pid, call id) listed, so that merge and slice leave its slices and flows out too). A GPU span
needs its call; a span whose call never comes is counted as an orphan."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import native
from .chrome_json import Visitor
from .columns import CALL_DTYPE, KEY_DTYPE
from .opening import open_reader
from .trace_info import TraceInfo

GPU_WINDOW = 1 << 18  # whole CUDA calls that wait for their GPU span (a span comes within the drainer's delay)
OPEN_CAP = 1 << 20  # calls still being assembled at once (cut inside, or split across batches)


@dataclass
class Window:
    """Which calls count: each engine's first `skip_first` calls (per process, by begin time) are
    left out, then only calls that begin in [from_s, to_s) seconds after the trace's first slice,
    of the engines named (all if None)."""

    skip_first: int = 0
    from_s: float | None = None
    to_s: float | None = None
    engines: frozenset[str] | None = None

    @property
    def timed(self) -> bool:
        return self.from_s is not None or self.to_s is not None

    @property
    def active(self) -> bool:
        return self.skip_first > 0 or self.timed or self.engines is not None

    def describe(self) -> str:
        parts = []
        if self.skip_first:
            parts.append(f"first {self.skip_first} call(s) of each engine left out")
        if self.timed:
            lo = f"{self.from_s:g}" if self.from_s is not None else "start"
            hi = f"{self.to_s:g}" if self.to_s is not None else "end"
            parts.append(f"calls from {lo} s to {hi} s")
        if self.engines is not None:
            parts.append(f"engines {', '.join(sorted(self.engines))}")
        return "; ".join(parts)


@dataclass
class CallsRead:
    info: TraceInfo
    partial: np.ndarray  # KEY_DTYPE: the calls left out as cut
    orphan_spans: int = 0
    calls: int = 0  # whole calls read (before the window)
    kept: int = 0  # calls the window kept
    skipped: dict[tuple[int, int], int] = field(default_factory=dict)
    windowed: bool = False  # a window (--from/--to, --skip-first, --engines) chose the calls kept
    calls_span_ns: tuple[int, int] | None = None  # the earliest call's begin, the latest call's end (all calls)
    # A timed window's bounds in ns ([lo, hi), None: open), as the calls were cut: the inferences are cut by them too.
    window_ns: tuple[int | None, int | None] = (None, None)

    def partial_by_pid(self) -> dict[int, int]:
        pids, counts = np.unique(self.partial["pid"], return_counts=True)
        return dict(zip(pids.tolist(), counts.tolist(), strict=True))


class _WindowFilter:
    def __init__(self, window: Window, origin_ns: int | None, info: TraceInfo) -> None:
        self.w = window
        self.info = info
        self.held: dict[int, np.ndarray] = {}  # (pid << 32 | engine id) -> its earliest calls so far
        lo = hi = None
        if window.timed:
            base = origin_ns or 0
            lo = None if window.from_s is None else base + round(window.from_s * 1e9)
            hi = None if window.to_s is None else base + round(window.to_s * 1e9)
        self.lo, self.hi = lo, hi

    def __call__(self, calls: np.ndarray) -> np.ndarray:
        w = self.w
        if w.engines is not None:
            info = self.info
            names = np.array([info.process(p).engines.get(e, f"engine_{e}") in w.engines
                              for p, e in zip(calls["pid"].tolist(), calls["engine_id"].tolist(), strict=True)],
                             dtype=bool)
            calls = calls[names]
        if w.skip_first > 0 and len(calls):
            keys = (calls["pid"].astype(np.uint64) << np.uint64(32)) | calls["engine_id"].astype(np.uint64)
            out = []
            for key in np.unique(keys).tolist():
                mine = calls[keys == key]
                held = self.held.get(key)
                both = mine if held is None else np.concatenate([held, mine])
                if len(both) <= w.skip_first:
                    self.held[key] = both
                    continue
                order = np.lexsort((both["call_id"], both["begin_ns"]))
                self.held[key] = both[order[: w.skip_first]]
                out.append(both[order[w.skip_first:]])
            calls = np.concatenate(out) if out else calls[:0]
        if self.lo is not None:
            calls = calls[calls["begin_ns"] >= self.lo]
        if self.hi is not None:
            calls = calls[calls["begin_ns"] < self.hi]
        return calls


class _Handout:
    """Counts the whole calls read and those the window keeps, and hands the kept ones to on_calls."""

    def __init__(self, on_calls: Callable[[np.ndarray, TraceInfo], None], filt: _WindowFilter | None,
                 on_all: Callable[[np.ndarray], None] | None = None) -> None:
        self.on_calls = on_calls
        self.filt = filt
        self.on_all = on_all
        self.calls = 0
        self.kept = 0
        self.first_ns: int | None = None  # the earliest call's begin and the latest call's end
        self.last_ns: int | None = None

    def __call__(self, part: np.ndarray, info: TraceInfo) -> None:
        self.calls += len(part)
        if len(part):  # the span of every call, window or not (an empty window names it)
            begin = int(part["begin_ns"].min())
            end = int((part["begin_ns"] + part["ns"][:, 0]).max())
            self.first_ns = begin if self.first_ns is None else min(self.first_ns, begin)
            self.last_ns = end if self.last_ns is None else max(self.last_ns, end)
            if self.on_all is not None:
                self.on_all(part)
        if self.filt is not None:
            part = self.filt(part)
        self.kept += len(part)
        if len(part):
            self.on_calls(part, info)


def read_calls(path: str | Any, on_calls: Callable[[np.ndarray, TraceInfo], None], visitor: Visitor | None = None,
               window: Window | None = None, origin_ns: int | None = None,
               on_all: Callable[[np.ndarray], None] | None = None) -> CallsRead:
    """Reads `path` (or a reader such as in_memory.EventsReader), handing every whole call (in the
    window) to on_calls in chunks; slices and events also go to `visitor`. origin_ns: the trace's
    first slice (for a timed window; read first with trace_origin() where None). on_all: every whole call,
    the window's or not (the inferences' engine time: docs/inference.md)."""
    reader = open_reader(path) if isinstance(path, str) else path
    path = reader.path
    if getattr(reader, "whole_calls", False):  # a profiler's capture: whole calls, no slices to join
        return _read_whole_calls(reader, on_calls, window, origin_ns, on_all)
    joiner = native.Joiner(GPU_WINDOW, OPEN_CAP)
    info = TraceInfo(path, reader.format)
    window = window or Window()
    if window.timed and origin_ns is None:
        origin_ns = trace_origin(path)
    handout = _Handout(on_calls, _WindowFilter(window, origin_ns, info) if window.active else None, on_all)

    def deliver() -> None:
        for part in joiner.take():
            handout(part, info)

    class _Joining(Visitor):
        def slices(self, slices: np.ndarray, buf: Any) -> None:
            joiner.add(slices)
            if visitor is not None:
                visitor.slices(slices, buf)
            deliver()

        def event(self, ev: dict[str, Any]) -> None:
            if visitor is not None:
                visitor.event(ev)

    reader.read(_Joining(), info)
    joiner.end()
    deliver()
    info.malformed += joiner.backwards_spans()  # an end before its begin is a time out of range
    pids, ids = joiner.partial()
    partial = np.zeros(len(pids), dtype=KEY_DTYPE)
    partial["pid"], partial["call_id"] = pids, ids
    partial.sort()
    return CallsRead(info, partial, joiner.orphan_spans(), handout.calls, handout.kept,
                     windowed=window.active, calls_span_ns=_span(handout), window_ns=_bounds(handout))


def _read_whole_calls(reader: Any, on_calls: Callable[[np.ndarray, TraceInfo], None], window: Window | None,
                      origin_ns: int | None, on_all: Callable[[np.ndarray], None] | None = None) -> CallsRead:
    info = TraceInfo(reader.path, reader.format)
    window = window or Window()
    handout = _Handout(on_calls, None, on_all)

    def deliver(part: np.ndarray, info: TraceInfo) -> None:
        if window.active and handout.filt is None:  # the capture's origin is known once its reading began
            handout.filt = _WindowFilter(window, info.origin_ns if origin_ns is None else origin_ns, info)
        handout(part, info)

    reader.read_calls(deliver, info)
    return CallsRead(info, np.zeros(0, dtype=KEY_DTYPE), 0, handout.calls, handout.kept,
                     windowed=window.active, calls_span_ns=_span(handout), window_ns=_bounds(handout))


def _span(handout: _Handout) -> tuple[int, int] | None:
    return None if handout.first_ns is None or handout.last_ns is None else (handout.first_ns, handout.last_ns)


def _bounds(handout: _Handout) -> tuple[int | None, int | None]:
    return (None, None) if handout.filt is None else (handout.filt.lo, handout.filt.hi)


def trace_origin(path: str | Any) -> int | None:
    """The earliest slice begin of the trace (the Perfetto UI's time 0): a first pass for windows."""
    return (open_reader(path) if isinstance(path, str) else path).read(Visitor()).origin_ns


__all__ = ["CALL_DTYPE", "CallsRead", "Window", "read_calls", "trace_origin"]
