"""Reads a trace file back and aggregates it into the per-engine table."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .records import PHASE_NAMES, STATS_COLUMNS
from .writers.chrome_json import CATEGORY, METADATA_EVENT

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
_PHASE_COLUMN = {
    "workspace": _COL["workspace_ns"],
    "inputs": _COL["inputs_ns"],
    "outputs": _COL["outputs_ns"],
    "enqueue": _COL["enqueue_ns"],
}


class TraceFileError(ValueError):
    pass


def load_events(path: str) -> list[dict[str, Any]]:
    """Events of a trace file; accepts an unterminated array (a process killed mid-run)."""
    from . import pftrace_reader

    if pftrace_reader.looks_like_perfetto(path):  # native Perfetto: the same events, from the protos
        return pftrace_reader.load_events(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise TraceFileError(f"cannot read {path}: {exc.strerror or exc}") from exc
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


def aggregate(events: list[dict[str, Any]]) -> TraceSummary:
    rows: dict[int, np.ndarray] = {}
    names: dict[int, str] = {}
    meta: dict[str, Any] = {}
    for ev in events:
        ph = ev.get("ph")
        if ph == "M" and ev.get("name") == METADATA_EVENT:
            meta.update(ev.get("args", {}))
            continue
        if ph != "X" or ev.get("cat") != CATEGORY:
            continue
        args = ev.get("args", {})
        eid = int(args.get("engine_id", 0))
        row = rows.get(eid)
        if row is None:
            row = rows[eid] = np.zeros(len(STATS_COLUMNS), dtype=np.int64)
            names[eid] = str(args.get("engine", f"engine_{eid}"))
        dur_ns = round(float(ev.get("dur", 0.0)) * 1000.0)
        name = ev.get("name")
        if name == PHASE_NAMES[0]:
            row[_COL["calls"]] += 1
            row[_COL["total_ns"]] += dur_ns
            if args.get("error"):
                row[_COL["errors"]] += 1
        elif name in _PHASE_COLUMN:
            row[_PHASE_COLUMN[name]] += dur_ns
        elif name == "gpu":
            row[_COL["gpu_ns"]] += dur_ns
            row[_COL["gpu_calls"]] += 1
    ids = sorted(rows)
    threads = meta.get("threads", [])
    return TraceSummary(
        names=[names[i] for i in ids],
        stats=np.stack([rows[i] for i in ids]) if ids else np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64),
        dropped=int(meta.get("dropped_events", 0)),
        threads_with_drops=sum(1 for t in threads if t.get("dropped")),
        metadata=meta,
    )


def summary_text(path: str) -> str:
    import torch

    from . import ops

    s = aggregate(load_events(path))
    return ops.format_timing_table(s.names, torch.from_numpy(s.stats), s.dropped, s.threads_with_drops)
