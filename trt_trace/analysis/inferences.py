"""The whole inference in the table (docs/inference.md): inference slices read beside the calls, each
inference's engine time joined from the engine calls of its thread that began inside it, and the figures
the table shows: count, p50/p99 latency, inferences per second, and the time outside engines (its own row,
`(outside engines)`).

An engine call is inside an inference when it ran on the inference's thread (`thread` arg) and began
within its span; nested engine calls are counted through their outer call only. Engine calls of other
threads (a package's own worker threads) are not inside: the share outside engines is the calling
thread's view, the one its latency is. Memory: in a trace with inferences, four integers per engine call
until the end of the reading (the join needs them sorted by thread and time); in one without, nothing
past its first CallSpans.LOOKAHEAD calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.readers.calls import Window
from ..io.readers.chrome_json import Visitor
from ..io.readers.columns import CALL_NESTED
from ..io.readers.events import U32, U64, Malformed, integer
from ..io.readers.value_counts import ValueCounts
from ..schema.trace_format import INFERENCE_CATEGORY
from . import summary_table

OUTSIDE_ROW = "(outside engines)"


class InferenceSpans(Visitor):
    """The inference slices of a trace (events of INFERENCE_CATEGORY): (pid, thread, begin, end) in ns."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int]] = []
        self.malformed = 0

    def event(self, ev: dict[str, Any]) -> None:
        if ev.get("ph") != "X" or ev.get("cat") != INFERENCE_CATEGORY:
            return
        args = ev.get("args")
        try:
            if not isinstance(args, dict):
                raise Malformed
            ts, dur = ev.get("ts"), ev.get("dur")
            if isinstance(ts, bool) or isinstance(dur, bool) or not isinstance(ts, (int, float)) \
                    or not isinstance(dur, (int, float)) or dur < 0:
                raise Malformed
            begin = round(float(ts) * 1000)
            self.rows.append((integer(ev.get("pid", 0), U32), integer(args.get("thread"), U64), begin,
                              begin + round(float(dur) * 1000)))
        except Malformed:
            self.malformed += 1  # such a slice is no inference; the table still reads


class CallSpans:
    """The engine calls' (pid, thread, begin, total) in ns, outer calls only, as the reader hands them out.

    Kept only in a trace with inferences: the writers put a batch's inferences right after its calls, so a
    trace whose first LOOKAHEAD calls came with no inference has none (a C++ deployment, an older trace),
    and its reading keeps the readers' memory bound (nothing per call)."""

    LOOKAHEAD = 1 << 20

    def __init__(self, spans: InferenceSpans) -> None:
        self._parts: list[np.ndarray] = []
        self._spans = spans
        self._seen = 0

    def add(self, calls: np.ndarray) -> None:
        self._seen += len(calls)
        if not self._spans.rows and self._seen > self.LOOKAHEAD:
            self._parts = []
            return
        outer = calls[(calls["flags"] & CALL_NESTED) == 0]
        part = np.empty((len(outer), 4), dtype=np.int64)
        part[:, 0] = outer["pid"]
        part[:, 1] = outer["thread_id"]
        part[:, 2] = outer["begin_ns"]
        part[:, 3] = outer["ns"][:, 0]  # the call's total (NS_COLUMNS[0])
        self._parts.append(part)

    def array(self) -> np.ndarray:
        return np.concatenate(self._parts) if self._parts else np.zeros((0, 4), dtype=np.int64)


@dataclass
class Inferences:
    """Per inference: its duration and its engine time (ns), and the span from the first begin to the last end."""

    duration: np.ndarray
    engine: np.ndarray
    first_ns: int
    last_ns: int

    @property
    def count(self) -> int:
        return len(self.duration)


def windowed(rows: np.ndarray, window: Window | None, bounds: tuple[int | None, int | None]) -> np.ndarray:
    """The inferences (pid, thread, begin, end) the table's window keeps, as it keeps calls: each process's first
    `skip_first` inferences (by begin) left out, then only those that begin in [lo, hi) ns (the calls' bounds).
    An inference is whole: where it counts, all of its engine calls count in its engine time."""
    if window is not None and window.skip_first > 0 and len(rows):
        order = np.lexsort((rows[:, 2], rows[:, 0]))
        rows = rows[order]
        first = np.searchsorted(rows[:, 0], rows[:, 0], "left")  # each row's process's first row
        rows = rows[np.arange(len(rows)) - first >= window.skip_first]
    lo, hi = bounds
    if lo is not None:
        rows = rows[rows[:, 2] >= lo]
    if hi is not None:
        rows = rows[rows[:, 2] < hi]
    return rows


def join(spans: InferenceSpans, calls: np.ndarray, pid: int | None = None, window: Window | None = None,
         bounds: tuple[int | None, int | None] = (None, None)) -> Inferences | None:
    """The inferences of process `pid` (all where None) in the window, with their engine time (from `calls`: every
    call read, the window's or not); None where there is none."""
    rows = windowed(np.array(spans.rows, dtype=np.int64).reshape(-1, 4), window, bounds)
    if pid is not None:
        rows = rows[rows[:, 0] == pid]
    if not len(rows):
        return None
    engine = np.zeros(len(rows), dtype=np.int64)
    # Calls sorted by (pid, thread, begin); each thread's inferences look up their calls by begin.
    order = np.lexsort((calls[:, 2], calls[:, 1], calls[:, 0]))
    calls = calls[order]
    keys = calls[:, 0] << 32 | calls[:, 1]
    inf_keys = rows[:, 0] << 32 | rows[:, 1]
    for key in np.unique(inf_keys):
        lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
        begins = calls[lo:hi, 2]
        cum = np.concatenate(([0], np.cumsum(calls[lo:hi, 3])))
        mine = np.nonzero(inf_keys == key)[0]
        first = np.searchsorted(begins, rows[mine, 2], "left")
        last = np.searchsorted(begins, rows[mine, 3], "left")
        engine[mine] = cum[last] - cum[first]
    duration = rows[:, 3] - rows[:, 2]
    return Inferences(duration, np.minimum(engine, duration), int(rows[:, 2].min()), int(rows[:, 3].max()))


def fields(inf: Inferences | None) -> dict[str, Any] | None:
    """The table's JSON `inferences` object: count, p50/p99 latency, inferences per second, time outside
    engines (ms and % of inference time); None where the trace has no inference."""
    if inf is None:
        return None
    vc = ValueCounts()
    vc.add(inf.duration)
    p50, p99 = vc.quantiles()
    total = int(inf.duration.sum())
    outside = total - int(inf.engine.sum())
    span = inf.last_ns - inf.first_ns
    return {"count": inf.count, "p50_ms": round(p50 / 1e6, 6), "p99_ms": round(p99 / 1e6, 6),
            "per_s": round(inf.count * 1e9 / span, 3) if span > 0 else None,
            "total_ms": round(total / 1e6, 6), "outside_engines_ms": round(outside / 1e6, 6),
            "outside_engines_pct": round(100.0 * outside / total, 4) if total > 0 else 0.0}


def outside_row(inf: Inferences) -> dict[str, Any]:
    """The `(outside engines)` row: the inferences' time less their engine calls', its share of inference
    time, and its statistics per inference; no phases."""
    outside = inf.duration - inf.engine
    vc = ValueCounts()
    vc.add(outside)
    p50, p99 = vc.quantiles()
    total = int(inf.duration.sum())
    row: dict[str, Any] = {"engine": OUTSIDE_ROW, "calls": inf.count, "total_ms": round(int(outside.sum()) / 1e6, 6),
                           "share_pct": round(100.0 * int(outside.sum()) / total, 4) if total > 0 else 0.0,
                           "p50_ms": round(p50 / 1e6, 6), "p99_ms": round(p99 / 1e6, 6)}
    row.update(summary_table.stat_fields(vc))
    return row


def line(f: dict[str, Any]) -> str:
    """The line above the table."""
    rate = "-" if f["per_s"] is None else f"{f['per_s']:.1f}/s"
    return (f"inferences: {f['count']}   p50 {f['p50_ms']:.3f} ms   p99 {f['p99_ms']:.3f} ms   {rate}   "
            f"outside engines {f['outside_engines_pct']:.1f}% of inference time")
