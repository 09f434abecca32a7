# ruff: noqa
# Today's reader as it was before trt_trace/io/readers (issue 24), kept as the oracle that
# tests/test_readers_oracle.py compares the streaming readers with. Not used by the package.
"""Reads a trace file back and aggregates it into the per-engine table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .complete_calls import cut_short_note
from .per_call import DURATIONS, GPU, NO_SPAN, CallTable, durations_of, extract, percentiles
from trt_trace.schema.records import STATS_COLUMNS
from trt_trace.schema.trace_format import METADATA_EVENT

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
_PHASE_COLUMN = {
    "workspace": _COL["workspace_ns"],
    "inputs": _COL["inputs_ns"],
    "outputs": _COL["outputs_ns"],
    "enqueue": _COL["enqueue_ns"],
}


class TraceFileError(ValueError):
    pass


def read_trace_bytes(path: str) -> bytes:
    """The whole file, or a one-line TraceFileError naming why it cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise TraceFileError(f"cannot read {path}: {exc.strerror or exc}") from exc


def load_events(path: str) -> list[dict[str, Any]]:
    """Events of a trace file; accepts an unterminated array (a process killed mid-run)."""
    from . import pftrace_reader

    if pftrace_reader.looks_like_perfetto(path):  # native Perfetto: the same events, from the protos
        return pftrace_reader.load_events(path)
    data = read_trace_bytes(path)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        # Streamed array cut short: keep every complete event.
        cut = data.rstrip()
        end = cut.rfind(b"},")
        tail = cut.rfind(b"}")
        candidates = [cut[: end + 1] + b"]", cut[: tail + 1] + b"]"] if end >= 0 or tail >= 0 else []
        doc = None
        for text in candidates:
            try:
                doc = orjson.loads(text)
                break
            except orjson.JSONDecodeError:
                continue
        if doc is None:
            raise TraceFileError(f"{path} is not a trace JSON file") from None
    if isinstance(doc, dict):
        doc = doc.get("traceEvents", [])
    if not isinstance(doc, list):
        raise TraceFileError(f"{path} is not a trace JSON file")
    return doc


@dataclass
class TraceSummary:
    names: list[str] = field(default_factory=list)
    stats: np.ndarray = field(default_factory=lambda: np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64))
    dropped: int = 0
    threads_with_drops: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    label: str = ""  # the process's name (process_name event); "" for several processes together
    partial_calls: int = 0  # calls left out: the file was cut inside them (complete_calls.py)
    call_ns: np.ndarray = field(default_factory=lambda: np.zeros((0, len(DURATIONS)), dtype=np.int64))
    call_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # row of each call
    gpu_every: int = 1  # GPU events on every Nth CUDA call (the session's setting; the largest of merged ranks)

    def percentiles(self, duration: str = "total") -> tuple[np.ndarray, np.ndarray]:
        """Exact p50 and p99 in ns of one of per_call.DURATIONS: int64 [rows, 2] and [2] over every
        call (-1 where no call has it)."""
        mask, values = durations_of(self.call_ns, duration)
        per_row = percentiles(values[mask], self.call_row[mask], len(self.names))
        overall = percentiles(values[mask], np.zeros(int(mask.sum()), dtype=np.int64), 1)[0]
        return per_row, overall


def gpu_every_of(meta: dict[str, Any]) -> int:
    """The GPU-timing sampling a process's trace was taken with (1: every CUDA call, older traces, and
    traces without GPU timing)."""
    if not meta.get("gpu_timing"):
        return 1
    try:
        return max(1, int(meta.get("gpu_every", 1)))
    except (TypeError, ValueError):
        return 1


def _row_stats(calls: CallTable, rows: np.ndarray, n_rows: int, gpu_every: int = 1) -> np.ndarray:
    """The table's columns (records.STATS_COLUMNS) summed per row over the calls.

    A file does not mark sampled-out calls: with gpu_every > 1, a call on a CUDA device that has no
    GPU span and neither failed nor was captured into a CUDA graph counts as sampled out. (A call
    whose inputs were all on the CPU names its outputs' device but got no events either: such calls,
    rare, count too.)"""
    stats = np.zeros((n_rows, len(STATS_COLUMNS)), dtype=np.int64)
    ns = calls.ns
    has_gpu = ns[:, GPU] != NO_SPAN
    stats[:, _COL["calls"]] = np.bincount(rows, minlength=n_rows)
    stats[:, _COL["errors"]] = np.bincount(rows, weights=calls.error, minlength=n_rows).astype(np.int64)
    for duration, column in (("total", "total_ns"), *((p, f"{p}_ns") for p in _PHASE_COLUMN)):
        np.add.at(stats[:, _COL[column]], rows, ns[:, DURATIONS.index(duration)])
    np.add.at(stats[:, _COL["gpu_ns"]], rows[has_gpu], ns[has_gpu, GPU])
    stats[:, _COL["gpu_calls"]] = np.bincount(rows[has_gpu], minlength=n_rows)
    if gpu_every > 1:  # only for traces with GPU timing on (gpu_every_of)
        out = calls.on_cuda & ~has_gpu & ~calls.error & ~calls.captured
        stats[:, _COL["gpu_sampled_out"]] = np.bincount(rows[out], minlength=n_rows)
    return stats


@dataclass
class _Process:
    """What one pid of the trace contributes (a merged trace holds one per rank)."""

    pid: int
    meta: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    sort_index: int | None = None
    partial_calls: int = 0
    engine_ids: list[int] = field(default_factory=list)  # sorted: the rows of its table
    names: list[str] = field(default_factory=list)
    stats: np.ndarray = field(default_factory=lambda: np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64))
    call_ns: np.ndarray = field(default_factory=lambda: np.zeros((0, len(DURATIONS)), dtype=np.int64))
    call_row: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def summary(self) -> TraceSummary:
        threads = self.meta.get("threads", [])
        return TraceSummary(
            names=list(self.names),
            stats=self.stats,
            dropped=int(self.meta.get("dropped_events", 0)),
            threads_with_drops=sum(1 for t in threads if t.get("dropped")),
            metadata=self.meta,
            label=self.label or f"pid {self.pid}",
            partial_calls=self.partial_calls,
            call_ns=self.call_ns,
            call_row=self.call_row,
            gpu_every=gpu_every_of(self.meta),
        )


def _by_process(events: list[dict[str, Any]]) -> list[_Process]:
    procs: dict[int, _Process] = {}
    calls = extract(events)
    for pid, _ in calls.partial:
        procs.setdefault(pid, _Process(pid)).partial_calls += 1
    for ev in events:
        if ev.get("ph") != "M":
            continue
        pid = int(ev.get("pid", 0))
        proc = procs.get(pid)
        if proc is None:
            proc = procs[pid] = _Process(pid)
        args = ev.get("args", {})
        if ev.get("name") == METADATA_EVENT:
            proc.meta.update(args)
        elif ev.get("name") == "process_name":
            proc.label = str(args.get("name", ""))
        elif ev.get("name") == "process_sort_index":
            proc.sort_index = int(args.get("sort_index", 0))
    for pid in dict.fromkeys(calls.pid.tolist()):  # in the order of their first call
        proc = procs.setdefault(pid, _Process(pid))
        mine = np.flatnonzero(calls.pid == pid)
        ids = calls.engine_id[mine]
        proc.engine_ids = np.unique(ids).tolist()
        proc.names = [calls.names[(pid, i)] for i in proc.engine_ids]
        proc.call_row = np.searchsorted(np.asarray(proc.engine_ids, dtype=np.int64), ids)
        proc.call_ns = calls.ns[mine]
        sub = CallTable(pid=calls.pid[mine], engine_id=ids, error=calls.error[mine], ns=proc.call_ns, names={},
                        partial=set(), on_cuda=calls.on_cuda[mine], captured=calls.captured[mine])
        proc.stats = _row_stats(sub, proc.call_row, len(proc.engine_ids), gpu_every_of(proc.meta))
    # Processes with no engine call and no metadata of ours (another tool's events) are not ours.
    out = [p for p in procs.values() if p.engine_ids or p.meta or p.partial_calls]
    order = {id(p): i for i, p in enumerate(out)}
    out.sort(key=lambda p: (p.sort_index is None, p.sort_index or 0, order[id(p)]))
    return out


def aggregate_by_process(events: list[dict[str, Any]]) -> list[TraceSummary]:
    """One summary per process (per rank in a merged trace), in the trace's process order."""
    return [p.summary() for p in _by_process(events)]


def aggregate(events: list[dict[str, Any]]) -> TraceSummary:
    """The per-engine table of the whole trace. In a merged trace, the engines of all processes
    are added up by name: rank 0's and rank 1's `_run_on_acc_0_engine` make one row."""
    parts = aggregate_by_process(events)
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return TraceSummary()
    keys: dict[tuple[str, int], int] = {}  # (name, k) -> row
    meta: dict[str, Any] = {}
    call_rows = []
    row_ofs = []
    for part in parts:
        meta.update(part.metadata)
        # Engine ids are per process; two engines of one process may share a name, so the k-th
        # engine called `n` in each process goes into row (n, k).
        seen: dict[str, int] = {}
        row_of = np.zeros(len(part.names), dtype=np.int64)
        for i, name in enumerate(part.names):
            k = seen.get(name, 0)
            seen[name] = k + 1
            row_of[i] = keys.setdefault((name, k), len(keys))
        row_ofs.append(row_of)
        call_rows.append(row_of[part.call_row])
    stats = np.zeros((len(keys), len(STATS_COLUMNS)), dtype=np.int64)
    for part, row_of in zip(parts, row_ofs, strict=True):
        np.add.at(stats, row_of, part.stats)
    return TraceSummary(
        names=[name for name, _ in keys],
        stats=stats,
        dropped=sum(p.dropped for p in parts),
        threads_with_drops=sum(p.threads_with_drops for p in parts),
        metadata=meta,
        partial_calls=sum(p.partial_calls for p in parts),
        call_ns=np.concatenate([p.call_ns for p in parts]),
        call_row=np.concatenate(call_rows),
        gpu_every=max(p.gpu_every for p in parts),
    )


def _table(s: TraceSummary, phase: str = "total", json: bool = False) -> str:
    import torch

    from trt_trace.native import ops

    per_row, overall = s.percentiles(phase)
    table = ops.format_timing_table(s.names, torch.from_numpy(s.stats), s.dropped, s.threads_with_drops,
                                    percentiles=torch.from_numpy(per_row), all_percentiles=tuple(overall.tolist()),
                                    percentiles_of=phase, json=json, gpu_every=s.gpu_every)
    if json:
        doc = orjson.loads(table)
        doc["partial_calls"] = s.partial_calls
        if s.label:
            doc["process"] = s.label
        return orjson.dumps(doc).decode()
    return table + (cut_short_note(s.partial_calls) + "\n" if s.partial_calls else "")


def summary_text(path: str, by_process: bool = False, phase: str = "total", json: bool = False) -> str:
    """The per-engine table of a trace file; by_process=True puts one table per process (rank)
    before the table of all of them. phase: the p50/p99 columns are of the call's total (default)
    or of one phase (per_call.DURATIONS), exact over the file's calls. json=True: the table as
    JSON (one object; with by_process, a list of them, the last for all processes)."""
    if phase not in DURATIONS:
        raise TraceFileError(f"unknown phase {phase!r}; use one of {', '.join(DURATIONS)}")
    events = load_events(path)
    if not by_process:
        return _table(aggregate(events), phase, json) + ("\n" if json else "")
    parts = aggregate_by_process(events)
    tables = [_table(p, phase, json) for p in parts]
    if len(parts) > 1:
        tables.append(_table(aggregate(events), phase, json))
    if json:
        return "[" + ",".join(tables) + "]\n"
    labels = [f"== {p.label} ==" for p in parts] + ([f"== all {len(parts)} processes =="] if len(parts) > 1 else [])
    return "\n".join(f"{label}\n{table}" for label, table in zip(labels, tables, strict=True))
