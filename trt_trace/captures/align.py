"""A capture's calls paired with trt_trace's own records of the same calls, and the clock offset between them.

The two see the same boundaries through different clocks: trt_trace reads CLOCK_MONOTONIC right
after it opens a call's profiler scope (or NVTX range) and right before it closes it
(csrc/hook/call_scope.h), torch.profiler stamps its scopes on the Unix-epoch clock, nsys on its
session clock. So for the right offset every capture scope *contains* its trace call, and the
containment of all calls bounds the offset from both sides:

    offset >= max(trace_end - capture_end)      offset <= min(trace_begin - capture_begin)

An empty interval means the pairing or the clocks disagree by more than the tolerance. The offset
puts the capture's kernels on the trace's timeline (merge), and the interval's width says how well.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import CaptureCalls


@dataclass(frozen=True)
class Alignment:
    offset_ns: int  # add to capture times to get trace times: the middle of the feasible interval
    low_ns: int  # the feasible interval (low > high where containment fails)
    high_ns: int
    matched: int  # calls paired
    unmatched_capture: int
    unmatched_trace: int

    def contained_within(self, tolerance_ns: int) -> bool:
        """One offset makes every capture scope contain its trace call up to tolerance_ns at each end."""
        return self.low_ns - self.high_ns <= 2 * tolerance_ns


def pair_calls(capture: CaptureCalls, engine: np.ndarray, tid: np.ndarray, begin_ns: np.ndarray,
               call_id: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices (into the capture's calls, into the trace's calls) of the pairs.

    By call id where both sides have it (an nsys capture's NVTX payload), with the thread as a check;
    otherwise by order: the k-th call of an engine on a thread in one is the k-th in the other (both
    record every call of the thread in the order made). engine: the trace calls' engine names."""
    if call_id is not None and len(capture) and (capture.call_id >= 0).all():
        order = np.argsort(call_id, kind="stable")
        pos = np.searchsorted(call_id[order], capture.call_id)
        pos_c = np.minimum(pos, max(len(order) - 1, 0))
        ok = (pos < len(order)) & (call_id[order][pos_c] == capture.call_id) if len(order) else \
            np.zeros(len(capture), dtype=bool)
        j = order[pos_c[ok]]
        i = np.flatnonzero(ok)
        same = tid[j] == capture.tid[i]
        return i[same], j[same]
    names = capture.engine_names()
    ci, ti = [], []
    groups: dict[tuple[str, int], list[int]] = {}
    for j in np.argsort(begin_ns, kind="stable").tolist():
        groups.setdefault((str(engine[j]), int(tid[j])), []).append(j)
    mine: dict[tuple[str, int], list[int]] = {}
    for i in np.argsort(capture.begin_ns, kind="stable").tolist():
        mine.setdefault((str(names[i]), int(capture.tid[i])), []).append(i)
    for key, cs in mine.items():
        ts = groups.get(key, [])
        k = min(len(cs), len(ts))
        ci += cs[:k]
        ti += ts[:k]
    return np.asarray(ci, dtype=np.int64), np.asarray(ti, dtype=np.int64)


def align(capture: CaptureCalls, engine: np.ndarray, tid: np.ndarray, begin_ns: np.ndarray, end_ns: np.ndarray,
          call_id: np.ndarray | None = None) -> Alignment:
    """The offset from the capture's clock to the trace's, from the calls both hold."""
    i, j = pair_calls(capture, engine, tid, begin_ns, call_id)
    if len(i) == 0:
        return Alignment(0, 1, 0, 0, len(capture), len(begin_ns))
    low = int((end_ns[j] - capture.end_ns[i]).max())
    high = int((begin_ns[j] - capture.begin_ns[i]).min())
    return Alignment(offset_ns=low + (high - low) // 2, low_ns=low, high_ns=high, matched=len(i),
                     unmatched_capture=len(capture) - len(i), unmatched_trace=len(begin_ns) - len(i))
