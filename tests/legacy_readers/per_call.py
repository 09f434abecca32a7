# ruff: noqa
# Today's reader as it was before trt_trace/io/readers (issue 24), kept as the oracle that
# tests/test_readers_oracle.py compares the streaming readers with. Not used by the package.
"""The engine calls of a trace, one row per call with its durations: the one extraction behind the
summary's sums and exact percentiles (`trt-trace summary`) and `trt-trace diff`.

Only whole calls are kept (complete_calls.py): a call cut by a kill is left out with all its slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .complete_calls import partial_calls
from trt_trace.schema.trace_format import CATEGORY, DURATIONS, PHASE_NAMES, Phase

# Columns of CallTable.ns: trace_format.DURATIONS, the call's host time, its four host phases, its GPU span.
GPU = DURATIONS.index("gpu")
NO_SPAN = -1  # ns of a GPU span the call does not have (host phases of no duration are 0: not written)
_COLUMN = {PHASE_NAMES[Phase.CALL]: 0, **{name: DURATIONS.index(name) for name in DURATIONS[1:]}}


@dataclass
class CallTable:
    """Whole engine calls: pid, engine id (per process), error flag and durations in ns."""

    pid: np.ndarray  # int64 [calls]
    engine_id: np.ndarray  # int64 [calls]
    error: np.ndarray  # bool [calls]
    ns: np.ndarray  # int64 [calls, len(DURATIONS)]
    names: dict[tuple[int, int], str]  # (pid, engine id) -> engine name
    partial: set[tuple[int, int]]  # (pid, call id) of the calls left out
    on_cuda: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # bool [calls]: names a CUDA device
    captured: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # bool [calls]: in a graph capture

    def __len__(self) -> int:
        return len(self.pid)


def _ns(us: Any) -> int:
    return round(float(us) * 1000.0)


def extract(events: list[dict[str, Any]]) -> CallTable:
    """The whole calls of a trace's events (trace_summary.load_events: JSON, Perfetto, merged)."""
    partial = partial_calls(events)
    index: dict[tuple[int, int], int] = {}
    pids: list[int] = []
    engines: list[int] = []
    errors: list[bool] = []
    on_cuda: list[bool] = []
    captured: list[bool] = []
    names: dict[tuple[int, int], str] = {}
    slices: list[tuple[tuple[int, int], int, int]] = []
    for ev in events:
        if ev.get("ph") != "X" or ev.get("cat") != CATEGORY:
            continue
        column = _COLUMN.get(ev.get("name"))
        args = ev.get("args", {})
        call_id = args.get("call_id")
        if column is None or call_id is None:
            continue
        key = (int(ev.get("pid", 0)), int(call_id))
        if partial and key in partial:
            continue
        if column == 0:
            index[key] = len(pids)
            eid = int(args.get("engine_id", 0))
            pids.append(key[0])
            engines.append(eid)
            errors.append(bool(args.get("error")))
            on_cuda.append(args.get("device") is not None)
            captured.append(bool(args.get("captured")))
            names.setdefault((key[0], eid), str(args.get("engine", f"engine_{eid}")))
        slices.append((key, column, _ns(ev.get("dur", 0.0))))
    ns = np.zeros((len(pids), len(DURATIONS)), dtype=np.int64)
    found = [(index[key], column, dur) for key, column, dur in slices if key in index]  # GPU spans need their call
    if found:
        rows, cols, durs = (np.asarray(a, dtype=np.int64) for a in zip(*found, strict=True))
        np.add.at(ns, (rows, cols), durs)
        has_gpu = np.zeros(len(pids), dtype=bool)
        has_gpu[rows[cols == GPU]] = True
        ns[~has_gpu, GPU] = NO_SPAN
    else:
        ns[:, GPU] = NO_SPAN
    return CallTable(pid=np.asarray(pids, dtype=np.int64), engine_id=np.asarray(engines, dtype=np.int64),
                     error=np.asarray(errors, dtype=bool), ns=ns, names=names, partial=partial,
                     on_cuda=np.asarray(on_cuda, dtype=bool), captured=np.asarray(captured, dtype=bool))


def percentiles(values: np.ndarray, groups: np.ndarray, n_groups: int,
                ps: Sequence[int] = (50, 99)) -> np.ndarray:
    """Exact per-group percentiles, int64 [n_groups, len(ps)], -1 for a group with no values.

    The p-th percentile is an order statistic: the ceil(p n / 100)-th smallest value of the group
    (numpy's method="inverted_cdf"), a duration some call really took; the live histograms estimate
    the same quantity. Vectorised: one sort over all groups."""
    out = np.full((n_groups, len(ps)), -1, dtype=np.int64)
    if len(values) == 0:
        return out
    order = np.lexsort((values, groups))
    counts = np.bincount(groups, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    for j, p in enumerate(ps):
        rank = (int(p) * counts + 99) // 100  # 1-based
        idx = starts + np.maximum(rank, 1) - 1
        out[has, j] = values[order[idx[has]]]
    return out


def durations_of(ns: np.ndarray, duration: str) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the calls that have it, every call's ns) of one of DURATIONS; ns: CallTable.ns rows."""
    if duration not in DURATIONS:
        raise ValueError(f"unknown phase {duration!r}; use one of {', '.join(DURATIONS)}")
    col = ns[:, DURATIONS.index(duration)]
    mask = col != NO_SPAN if duration == "gpu" else np.ones(len(col), dtype=bool)
    return mask, col
