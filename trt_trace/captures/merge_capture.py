"""A profiler's capture merged onto trt_trace's timeline (`trt-trace merge trace.json prof.json -o all.json`).

The capture's calls are paired with the calls of the trt_trace process they ran in (the same OS pid:
by trt_trace's call id for nsys, by engine, thread and order for torch.profiler: align.pair_calls), and
one clock offset from the capture's clock to the trace's is found from all pairs (align.align: every
capture scope contains its trace call). With it, the capture goes into the merged file under that
process, on tracks of its own:

* `<source> scopes · thread T`: each paired call's scope as the profiler saw it (name: the engine),
* `<source> kernels · device D stream S`: each kernel, memcpy and memset the call launched, at CUPTI's
  own device times (exact to the ns in the JSON's three decimals of µs), with the call's trt_trace
  `call_id` and engine in its args, so a kernel is one query away from its call.

Only calls paired with a call the merged trace holds are placed (a window, or a call cut by a kill,
leaves its capture call out too). What was placed, and how well the clocks fit, goes into the merge's
metadata (`captures`) and the CLI's report.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from ..io import formats
from ..io.readers import TraceFileError, read_calls
from ..io.readers.columns import keys_of
from . import align
from .model import KIND_NAMES, CaptureCalls
from .trace_readers import CAPTURE_FORMATS

CAPTURE_TID = 1_900_000_000  # the merged file's capture tracks: far above trt_trace's track ids (engine * 1000 + k)


def is_capture(path: str) -> bool:
    """Whether the file is a capture the registry reads (False for anything else, also a missing file)."""
    try:
        fmt = formats.sniff(path)
    except OSError:
        return False
    return fmt is not None and fmt.name in CAPTURE_FORMATS


def read_capture(path: str) -> CaptureCalls:
    fmt = formats.sniff(path)
    assert fmt is not None
    return fmt.reader(path).capture()


@dataclasses.dataclass
class ProcessCalls:
    """The whole calls of one process of the merge (as its trace records them, on its own clock)."""

    engine: np.ndarray  # names (object)
    tid: np.ndarray
    call_id: np.ndarray
    begin_ns: np.ndarray
    end_ns: np.ndarray


def process_calls(files: list[str]) -> ProcessCalls:
    parts: list[tuple] = []

    def collect(calls: np.ndarray, info: Any) -> None:
        names = []
        for pid, eid in zip(calls["pid"].tolist(), calls["engine_id"].tolist(), strict=True):
            names.append(info.process(pid).engines.get(eid, f"engine_{eid}"))
        parts.append((np.asarray(names, dtype=object), calls["thread_id"].astype(np.int64),
                      calls["call_id"].astype(np.int64), calls["begin_ns"].copy(),
                      calls["begin_ns"] + calls["ns"][:, 0]))

    for path in files:
        read_calls(path, collect)
    if not parts:
        empty = np.zeros(0, dtype=np.int64)
        return ProcessCalls(np.zeros(0, dtype=object), empty, empty, empty, empty)
    cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    return ProcessCalls(*cols)


def _subset(capture: CaptureCalls, rows: np.ndarray) -> CaptureCalls:
    per_call = {f.name: getattr(capture, f.name)[rows] for f in dataclasses.fields(capture)
                if isinstance(getattr(capture, f.name), np.ndarray) and len(getattr(capture, f.name)) == len(capture)}
    return dataclasses.replace(capture, **per_call)


def _us(ns: np.ndarray | int) -> Any:
    return np.round(np.asarray(ns, dtype=np.float64) / 1000.0, 3)


class _Tracks:
    """The capture's tracks in the merged file: a tid of its own each, named once."""

    def __init__(self, emit: Callable[[dict[str, Any]], None]) -> None:
        self.emit = emit
        self.next = CAPTURE_TID
        self.tids: dict[tuple, int] = {}

    def of_process(self, pid: int) -> Callable[[tuple, str], int]:
        def track_of(key: tuple, name: str) -> int:
            tid = self.tids.get((pid, *key))
            if tid is None:
                tid = self.tids[(pid, *key)] = self.next
                self.next += 1
                self.emit({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
                self.emit({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
            return tid

        return track_of


def place(path: str, capture: CaptureCalls, processes: list[Any], shift_ns: int,
          emit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Writes the capture's tracks into the merged file (emit: one event); returns what was placed.
    processes: merge.ProcessTrace of the merge (files, os_pid, pid, offset_ns, kept)."""
    done: dict[str, Any] = {"file": path, "source": capture.source, "calls": len(capture), "placed_calls": 0,
                            "placed_activities": 0, "processes": []}
    tracks = _Tracks(emit)
    by_pid = {p.os_pid: p for p in processes}
    missing = sorted(set(np.unique(capture.pid).tolist()) - set(by_pid))
    if missing:
        done["notes"] = [f"{path}: no trace of pid(s) {', '.join(map(str, missing))} in this merge; "
                         "their calls are left out"]
    acts = capture.activities
    for pid in np.unique(capture.pid).tolist():
        p = by_pid.get(pid)
        if p is None:
            continue
        rows = np.flatnonzero(capture.pid == pid)
        mine = _subset(capture, rows)
        try:
            trace = process_calls(p.files)
        except TraceFileError as exc:
            raise ValueError(str(exc)) from None
        by_id = trace.call_id if capture.source == "nsys" else None
        fit = align.align(mine, trace.engine, trace.tid, trace.begin_ns, trace.end_ns, by_id)
        i, j = align.pair_calls(mine, trace.engine, trace.tid, trace.begin_ns, by_id)
        if p.kept:  # a window: only calls the merged file holds
            kept = np.concatenate(p.kept)
            codes = keys_of(np.full(len(j), p.os_pid, dtype=np.uint64), trace.call_id[j].astype(np.uint64))
            ok = np.isin(codes.view(np.dtype("V16")), kept)
            i, j = i[ok], j[ok]
        offset = fit.offset_ns + p.offset_ns + shift_ns  # capture clock -> the merged file's clock
        info = {"pid_in_file": pid, "pid": p.pid, "paired": int(fit.matched), "placed_calls": len(i),
                "offset_ns": int(fit.offset_ns), "fit_ns": int(fit.high_ns - fit.low_ns),
                "unpaired_capture_calls": int(fit.unmatched_capture)}
        if fit.matched == 0:
            info["note"] = "no call of the capture pairs with one of the trace"
            done["processes"].append(info)
            continue
        track_of = tracks.of_process(p.pid)
        src = capture.source
        cap_rows = rows[i]
        begin_us, end_us = _us(capture.begin_ns[cap_rows] + offset), _us(capture.end_ns[cap_rows] + offset)
        for k in range(len(i)):
            thread = int(capture.tid[cap_rows[k]])
            tid = track_of(("scope", thread), f"{src} scopes · thread {thread}")
            emit({"ph": "X", "cat": src, "name": capture.engines[int(capture.engine[cap_rows[k]])], "pid": p.pid,
                  "tid": tid, "ts": float(begin_us[k]), "dur": round(float(end_us[k] - begin_us[k]), 3),
                  "args": {"call_id": int(trace.call_id[j[k]]), "engine": str(trace.engine[j[k]]), "capture": path}})
        placed = 0
        if len(acts):
            trace_row = np.full(len(capture), -1, dtype=np.int64)
            trace_row[cap_rows] = j
            a = np.flatnonzero(trace_row[acts.call] >= 0)
            a = a[np.argsort(acts.begin_ns[a], kind="stable")]
            ab, ae = _us(acts.begin_ns[a] + offset), _us(acts.end_ns[a] + offset)
            for k, x in enumerate(a.tolist()):
                dev, stream = int(acts.device[x]), int(acts.stream[x])
                tid = track_of(("device", dev, stream), f"{src} kernels · device {dev} stream {stream}")
                t = int(trace_row[acts.call[x]])
                emit({"ph": "X", "cat": f"{src} {KIND_NAMES[int(acts.kind[x])]}",
                      "name": capture.activity_names[int(acts.name[x])], "pid": p.pid, "tid": tid,
                      "ts": float(ab[k]), "dur": round(float(ae[k] - ab[k]), 3),
                      "args": {"call_id": int(trace.call_id[t]), "engine": str(trace.engine[t]),
                               "kind": KIND_NAMES[int(acts.kind[x])], "device": dev, "stream": stream,
                               "dur_ns": int(acts.end_ns[x] - acts.begin_ns[x])}})
                placed += 1
        info["placed_activities"] = placed
        done["placed_calls"] += len(i)
        done["placed_activities"] += placed
        done["processes"].append(info)
    return done


def report_lines(done: dict[str, Any]) -> list[str]:
    """The merge's stdout lines for one capture."""
    lines = [f"  {done['source']} capture {done['file']}: {done['placed_calls']} of {done['calls']} calls placed, "
             f"{done['placed_activities']} kernels/copies"]
    for p in done["processes"]:
        if p.get("note"):
            lines.append(f"    pid {p['pid_in_file']}: {p['note']}")
        else:
            fit = ("every scope contains its trace call" if p["fit_ns"] >= 0 else
                   f"scopes contain their trace calls to within {-p['fit_ns'] / 2000:.2f} µs")
            lines.append(f"    pid {p['pid_in_file']}: {p['paired']} calls paired, clock offset "
                         f"{p['offset_ns'] / 1e6:+.3f} ms ({fit})")
    return lines
