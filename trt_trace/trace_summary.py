"""Reads a trace file back and aggregates it into the per-engine table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .complete_calls import cut_short_note, partial_calls
from .records import STATS_COLUMNS
from .trace_format import CATEGORY, METADATA_EVENT, PHASE_NAMES, Phase

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


@dataclass
class _Process:
    """What one pid of the trace contributes (a merged trace holds one per rank)."""

    pid: int
    rows: dict[int, np.ndarray] = field(default_factory=dict)  # engine id -> stats row
    names: dict[int, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    label: str = ""
    sort_index: int | None = None
    partial_calls: int = 0

    def summary(self) -> TraceSummary:
        ids = sorted(self.rows)
        threads = self.meta.get("threads", [])
        return TraceSummary(
            names=[self.names[i] for i in ids],
            stats=np.stack([self.rows[i] for i in ids]) if ids else np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64),
            dropped=int(self.meta.get("dropped_events", 0)),
            threads_with_drops=sum(1 for t in threads if t.get("dropped")),
            metadata=self.meta,
            label=self.label or f"pid {self.pid}",
            partial_calls=self.partial_calls,
        )


def _by_process(events: list[dict[str, Any]]) -> list[_Process]:
    procs: dict[int, _Process] = {}
    partial = partial_calls(events)
    for pid, _ in partial:
        procs.setdefault(pid, _Process(pid)).partial_calls += 1
    for ev in events:
        ph = ev.get("ph")
        if ph != "M" and (ph != "X" or ev.get("cat") != CATEGORY):
            continue
        pid = int(ev.get("pid", 0))
        proc = procs.get(pid)
        if proc is None:
            proc = procs[pid] = _Process(pid)
        args = ev.get("args", {})
        if ph == "X" and partial and (pid, int(args.get("call_id", -1))) in partial:
            continue
        if ph == "M":
            if ev.get("name") == METADATA_EVENT:
                proc.meta.update(args)
            elif ev.get("name") == "process_name":
                proc.label = str(args.get("name", ""))
            elif ev.get("name") == "process_sort_index":
                proc.sort_index = int(args.get("sort_index", 0))
            continue
        eid = int(args.get("engine_id", 0))
        row = proc.rows.get(eid)
        if row is None:
            row = proc.rows[eid] = np.zeros(len(STATS_COLUMNS), dtype=np.int64)
            proc.names[eid] = str(args.get("engine", f"engine_{eid}"))
        dur_ns = round(float(ev.get("dur", 0.0)) * 1000.0)
        name = ev.get("name")
        if name == PHASE_NAMES[Phase.CALL]:
            row[_COL["calls"]] += 1
            row[_COL["total_ns"]] += dur_ns
            if args.get("error"):
                row[_COL["errors"]] += 1
        elif name in _PHASE_COLUMN:
            row[_PHASE_COLUMN[name]] += dur_ns
        elif name == "gpu":
            row[_COL["gpu_ns"]] += dur_ns
            row[_COL["gpu_calls"]] += 1
    # Processes with no engine call and no metadata of ours (another tool's events) are not ours.
    out = [p for p in procs.values() if p.rows or p.meta or p.partial_calls]
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
    rows: dict[tuple[str, int], np.ndarray] = {}
    meta: dict[str, Any] = {}
    for part in parts:
        meta.update(part.metadata)
        # Engine ids are per process; two engines of one process may share a name, so the k-th
        # engine called `n` in each process goes into row (n, k).
        seen: dict[str, int] = {}
        for name, row in zip(part.names, part.stats, strict=True):
            k = seen.get(name, 0)
            seen[name] = k + 1
            if (name, k) in rows:
                rows[(name, k)] = rows[(name, k)] + row
            else:
                rows[(name, k)] = row.copy()
    keys = list(rows)
    return TraceSummary(
        names=[name for name, _ in keys],
        stats=np.stack([rows[k] for k in keys]) if keys else np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64),
        dropped=sum(p.dropped for p in parts),
        threads_with_drops=sum(p.threads_with_drops for p in parts),
        metadata=meta,
        partial_calls=sum(p.partial_calls for p in parts),
    )


def _table(s: TraceSummary) -> str:
    import torch

    from . import ops

    table = ops.format_timing_table(s.names, torch.from_numpy(s.stats), s.dropped, s.threads_with_drops)
    return table + (cut_short_note(s.partial_calls) + "\n" if s.partial_calls else "")


def summary_text(path: str, by_process: bool = False) -> str:
    """The per-engine table of a trace file; by_process=True puts one table per process (rank)
    before the table of all of them."""
    events = load_events(path)
    if not by_process:
        return _table(aggregate(events))
    parts = aggregate_by_process(events)
    out = [f"== {p.label} ==\n{_table(p)}" for p in parts]
    if len(parts) > 1:
        out.append(f"== all {len(parts)} processes ==\n{_table(aggregate(events))}")
    return "\n".join(out)
