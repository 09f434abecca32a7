"""What the capture tests share: trt_trace's own record of calls (the reference a capture is compared
with) and the definition of "a capture matches it" (docs/captures.md#what-matches-means)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from trt_trace.analysis.trace_summary import load_events
from trt_trace.captures import align
from trt_trace.captures.model import CaptureCalls

# Clock conversion: Kineto stamps scopes with a TSC read converted to Unix-epoch ns, nsys with its own
# session clock. One offset fits every call of a capture to within this, at each end (measured: 0.34 µs
# torch.profiler, 2.11 / 2.13 stand-ins, 2 cores).
CLOCK_TOLERANCE_NS = 1000


@dataclass
class TraceCalls:
    """trt_trace's own calls of a trace file, in begin order."""

    engine: np.ndarray  # names (object)
    tid: np.ndarray
    call_id: np.ndarray
    begin_ns: np.ndarray
    end_ns: np.ndarray
    error: np.ndarray
    boundaries: dict[int, dict[str, int]]  # call_id -> phase -> begin ns of the phase

    def __len__(self) -> int:
        return len(self.begin_ns)


def trace_calls(path: str) -> TraceCalls:
    calls, phases = [], {}
    for e in load_events(path):
        if e.get("ph") != "X" or e.get("cat") != "trt_trace":
            continue
        if e["name"] == "execute_engine":
            calls.append(e)
        elif e["name"] in ("workspace", "inputs", "outputs", "enqueue"):
            phases.setdefault(e["args"]["call_id"], {})[e["name"]] = round(e["ts"] * 1000)
    calls.sort(key=lambda e: e["ts"])
    begin = np.asarray([round(e["ts"] * 1000) for e in calls], dtype=np.int64)
    return TraceCalls(engine=np.asarray([e["args"]["engine"] for e in calls], dtype=object),
                      tid=np.asarray([e["args"]["thread"] for e in calls], dtype=np.int64),
                      call_id=np.asarray([e["args"]["call_id"] for e in calls], dtype=np.int64), begin_ns=begin,
                      end_ns=begin + np.asarray([round(e["dur"] * 1000) for e in calls], dtype=np.int64),
                      error=np.asarray([bool(e["args"].get("error")) for e in calls]), boundaries=phases)


def counts(engines: np.ndarray, tids: np.ndarray) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for e, t in zip(engines.tolist(), tids.tolist(), strict=True):
        out[(str(e), int(t))] = out.get((str(e), int(t)), 0) + 1
    return out


def assert_matches(capture: CaptureCalls, trace: TraceCalls, by_call_id: bool = False) -> align.Alignment:
    """The capture and trt_trace saw the same calls: the same number per engine and thread, paired one
    to one, and one clock offset with which every capture scope contains its trace call (both read the
    same boundaries, the capture's outside trt_trace's: csrc/hook/call_scope.h)."""
    assert counts(capture.engine_names(), capture.tid) == counts(trace.engine, trace.tid)
    fit = align.align(capture, trace.engine, trace.tid, trace.begin_ns, trace.end_ns,
                      trace.call_id if by_call_id else None)
    assert fit.matched == len(trace) == len(capture) and fit.unmatched_capture == fit.unmatched_trace == 0
    assert fit.contained_within(CLOCK_TOLERANCE_NS), (fit, fit.low_ns - fit.high_ns)
    i, j = align.pair_calls(capture, trace.engine, trace.tid, trace.begin_ns,
                            trace.call_id if by_call_id else None)
    assert (capture.engine_names()[i] == trace.engine[j]).all()
    # The capture's call lasts at least as long as trt_trace's (it contains it), and its phase scopes
    # lie inside its call scope.
    assert (capture.total_ns[i] >= (trace.end_ns - trace.begin_ns)[j] - 2 * CLOCK_TOLERANCE_NS).all()
    assert (capture.phase_ns.sum(axis=1) <= capture.total_ns).all()
    return fit
