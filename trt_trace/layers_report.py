"""`trt-trace layers`: per engine, its layers by time, from a trace recorded with TRT_TRACE_LAYERS.

In two halves, so that the arithmetic can move onto any reader of trace events:
* `LayerCalls.from_events(events)` collects what the table needs from a trace's events (the layer
  slices, each call's engine, GPU span and enqueue phase, the per-engine layer metadata), into arrays;
* `layer_tables(calls)` does the per-call arithmetic on those arrays alone.

Per engine: each layer's calls, total, share of the engine's layer time, and p50 over its calls; the
layers' sum per call against the GPU span of the same calls (what the profiled calls' GPU work took
as CUDA events measured it) and against the engine's unprofiled calls' GPU span. A large difference
is a finding in itself: GPU work outside TensorRT's layers (reformatting, the runtime's own copies),
or profiling that changes what it measures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from .trace_format import CATEGORY, LAYER_CATEGORY, METADATA_EVENT

# Beyond this relative difference between the layers' sum and the GPU span, the table says so.
NOTABLE_DIFFERENCE = 0.10


def _ns(us: Any) -> int:
    return round(float(us) * 1000.0)


@dataclass
class LayerCalls:
    """What a trace holds of per-layer timing, as arrays (one row per layer slice; one per call)."""

    # Layer slices.
    pid: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    engine_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    call_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    layer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # index into `names`
    ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    names: list[str] = field(default_factory=list)
    # Every call of the trace (profiled or not): its GPU span and enqueue phase in ns (-1: none).
    calls_pid: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    calls_engine: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    calls_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    calls_gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    calls_enqueue: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    engines: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, engine id) -> name
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> the end metadata's "layers"
    processes: dict[int, str] = field(default_factory=dict)  # pid -> process name

    @classmethod
    def from_events(cls, events: list[dict[str, Any]]) -> LayerCalls:
        out = cls()
        name_index: dict[str, int] = {}
        rows: list[tuple[int, int, int, int, int]] = []
        calls: dict[tuple[int, int], list[int]] = {}  # (pid, call id) -> [engine id, gpu ns, enqueue ns]
        for ev in events:
            ph = ev.get("ph")
            pid = int(ev.get("pid", 0))
            args = ev.get("args") or {}
            if ph == "M":
                if ev.get("name") == METADATA_EVENT and isinstance(args.get("layers"), dict):
                    out.reports[pid] = args["layers"]
                elif ev.get("name") == "process_name":
                    out.processes[pid] = str(args.get("name", ""))
                continue
            if ph != "X" or "call_id" not in args:
                continue
            cat = ev.get("cat")
            engine_id = int(args.get("engine_id", 0))
            if cat == LAYER_CATEGORY:
                layer = str(args.get("layer", ev.get("name", "")))
                index = name_index.setdefault(layer, len(name_index))
                rows.append((pid, engine_id, int(args["call_id"]), index, _ns(ev.get("dur", 0))))
                out.engines.setdefault((pid, engine_id), str(args.get("engine", "")))
                continue
            if cat != CATEGORY:
                continue
            name = ev.get("name")
            call = calls.setdefault((pid, int(args["call_id"])), [engine_id, -1, -1])
            if name == "execute_engine":
                call[0] = engine_id
                out.engines.setdefault((pid, engine_id), str(args.get("engine", "")))
            elif name == "gpu":
                call[1] = _ns(ev.get("dur", 0))
            elif name == "enqueue":
                call[2] = _ns(ev.get("dur", 0))
        out.names = list(name_index)
        if rows:
            a = np.array(rows, dtype=np.int64)
            out.pid, out.engine_id, out.call_id, out.layer, out.ns = (a[:, i].copy() for i in range(5))
        if calls:
            keys = np.array(list(calls), dtype=np.int64)
            values = np.array(list(calls.values()), dtype=np.int64)
            out.calls_pid, out.calls_id = keys[:, 0].copy(), keys[:, 1].copy()
            out.calls_engine, out.calls_gpu, out.calls_enqueue = (values[:, i].copy() for i in range(3))
        return out


@dataclass
class LayerRow:
    layer: str
    calls: int
    total_ns: int
    share: float  # of the engine's layer time, in %
    p50_ns: int


@dataclass
class EngineLayers:
    process: str
    engine: str
    engine_id: int
    profiled_calls: int  # whole profiled calls (every layer present)
    rows: list[LayerRow]
    sum_p50_ns: int = -1  # the layers' sum per call, p50
    gpu_p50_ns: int = -1  # the same calls' GPU span, p50 (-1: none had one)
    gpu_calls: int = 0
    unprofiled_gpu_p50_ns: int = -1  # the engine's other calls' GPU span, p50
    enqueue_p50_ns: int = -1  # the profiled calls' enqueue phase, p50
    partial_calls: int = 0  # profiled calls with layers missing (a cut file): left out
    note: str = ""  # why it has no (or fewer) profiled calls, from the trace's metadata

    @property
    def layers_vs_gpu(self) -> float | None:
        return self.sum_p50_ns / self.gpu_p50_ns if self.gpu_p50_ns > 0 and self.sum_p50_ns >= 0 else None


def _p50(values: np.ndarray) -> int:
    """The median as the table's percentiles take it: the lower middle value, exact (no interpolation)."""
    if len(values) == 0:
        return -1
    return int(np.sort(values)[(len(values) - 1) // 2])


def layer_tables(c: LayerCalls) -> list[EngineLayers]:
    """Per engine (per process), its layers by total time, from the arrays alone."""
    out: list[EngineLayers] = []
    keys = sorted({(int(p), int(e)) for p, e in zip(c.pid.tolist(), c.engine_id.tolist(), strict=True)},
                  key=lambda k: (list(c.processes).index(k[0]) if k[0] in c.processes else 0, k[1]))
    for pid, engine_id in keys:
        mine = (c.pid == pid) & (c.engine_id == engine_id)
        call_ids, layers, ns = c.call_id[mine], c.layer[mine], c.ns[mine]
        # Whole calls: every layer the engine reports. A file cut by a kill can hold part of a call's.
        per_call = np.unique(call_ids, return_counts=True)
        expected = int(per_call[1].max())
        whole_ids = per_call[0][per_call[1] == expected]
        whole = np.isin(call_ids, whole_ids)
        call_ids, layers, ns = call_ids[whole], layers[whole], ns[whole]
        engine = EngineLayers(process=c.processes.get(pid, f"pid {pid}"), engine=c.engines.get((pid, engine_id), ""),
                              engine_id=engine_id, profiled_calls=len(whole_ids), rows=[],
                              partial_calls=len(per_call[0]) - len(whole_ids))
        total = int(ns.sum())
        for index in np.unique(layers).tolist():
            sel = layers == index
            t = int(ns[sel].sum())
            engine.rows.append(LayerRow(c.names[index], int(np.unique(call_ids[sel]).size), t,
                                        100.0 * t / total if total else 0.0, _p50(ns[sel])))
        engine.rows.sort(key=lambda r: (-r.total_ns, r.layer))
        uniq, inverse = np.unique(call_ids, return_inverse=True)
        engine.sum_p50_ns = _p50(np.bincount(inverse, weights=ns).astype(np.int64)) if len(uniq) else -1
        calls = (c.calls_pid == pid) & (c.calls_engine == engine_id)
        profiled = calls & np.isin(c.calls_id, uniq)
        gpu = c.calls_gpu[profiled]
        engine.gpu_calls = int((gpu >= 0).sum())
        engine.gpu_p50_ns = _p50(gpu[gpu >= 0])
        other = c.calls_gpu[calls & ~np.isin(c.calls_id, c.call_id[mine])]
        engine.unprofiled_gpu_p50_ns = _p50(other[other >= 0])
        enqueue = c.calls_enqueue[profiled]
        engine.enqueue_p50_ns = _p50(enqueue[enqueue >= 0])
        out.append(engine)
    # Engines the switch reached without a profiled call, and why (the metadata's note).
    for pid, report in c.reports.items():
        for e in report.get("engines", []):
            key = (pid, int(e.get("engine_id", 0)))
            found = [x for x in out if (x.process, x.engine_id) == (c.processes.get(pid, f"pid {pid}"), key[1])]
            if found:
                found[0].note = str(e.get("note", ""))
            else:
                out.append(EngineLayers(process=c.processes.get(pid, f"pid {pid}"), engine=str(e.get("engine", "")),
                                        engine_id=key[1], profiled_calls=0, rows=[], note=str(e.get("note", ""))))
    return out


def _us(ns: int) -> str:
    return f"{ns / 1000:.1f} us" if ns >= 0 else "-"


def _short(name: str, width: int) -> str:
    """A layer name cut to `width` characters in its middle (TensorRT's are often long)."""
    if len(name) <= width:
        return name
    keep = width - 1
    return name[: keep - keep // 2] + "…" + name[len(name) - keep // 2:]


def format_tables(tables: list[EngineLayers], width: int = 72) -> str:
    lines: list[str] = []
    several = len({t.process for t in tables}) > 1
    for t in tables:
        who = (f"{t.process}: " if several else "") + (t.engine or f"engine {t.engine_id}")
        if not t.rows:
            lines.append(f"{who}: no per-layer timing" + (f" ({t.note})" if t.note else ""))
            lines.append("")
            continue
        lines.append(f"{who}: {t.profiled_calls} profiled call{'s' if t.profiled_calls != 1 else ''}, "
                     f"{len(t.rows)} layer{'s' if len(t.rows) != 1 else ''}")
        w = max(len("layer"), min(width, max(len(r.layer) for r in t.rows)))
        lines.append(f"  {'layer':<{w}}  {'calls':>6}  {'total ms':>9}  {'share %':>7}  {'p50 us':>9}")
        for r in t.rows:
            lines.append(f"  {_short(r.layer, w):<{w}}  {r.calls:>6}  {r.total_ns / 1e6:>9.3f}  {r.share:>7.1f}  "
                         f"{r.p50_ns / 1000:>9.1f}")
        if t.gpu_p50_ns >= 0:
            ratio = t.layers_vs_gpu
            shown = "-" if ratio is None else f"{ratio:.2f}"
            lines.append(f"  layers' sum per call p50 {_us(t.sum_p50_ns)}; GPU span of the same calls p50 "
                         f"{_us(t.gpu_p50_ns)} (layers / GPU {shown}); unprofiled calls' GPU span p50 "
                         f"{_us(t.unprofiled_gpu_p50_ns)}")
            if ratio is not None and abs(ratio - 1) > NOTABLE_DIFFERENCE:
                lines.append(f"  note: the layers {'cover only' if ratio < 1 else 'add up to'} {ratio * 100:.0f}% of "
                             "the GPU span: GPU work outside TensorRT's layers, or profiling that changes it")
        else:
            lines.append(f"  layers' sum per call p50 {_us(t.sum_p50_ns)}; no GPU span for these calls (a CPU engine, "
                         f"or GPU timing off); their enqueue phase p50 {_us(t.enqueue_p50_ns)}")
        if t.partial_calls:
            lines.append(f"  cut short: {t.partial_calls} profiled call{'s' if t.partial_calls != 1 else ''} with "
                         "layers missing left out")
        if t.note:
            lines.append(f"  note: {t.note}")
        lines.append("")
    return "\n".join(lines)


def tables_json(tables: list[EngineLayers]) -> dict[str, Any]:
    def engine(t: EngineLayers) -> dict[str, Any]:
        return {"process": t.process, "engine": t.engine, "engine_id": t.engine_id,
                "profiled_calls": t.profiled_calls, "partial_calls": t.partial_calls,
                "layers": [{"layer": r.layer, "calls": r.calls, "total_ns": r.total_ns, "share": r.share,
                            "p50_ns": r.p50_ns} for r in t.rows],
                "layers_sum_p50_ns": t.sum_p50_ns, "gpu_p50_ns": t.gpu_p50_ns, "gpu_calls": t.gpu_calls,
                "layers_vs_gpu": t.layers_vs_gpu, "unprofiled_gpu_p50_ns": t.unprofiled_gpu_p50_ns,
                "enqueue_p50_ns": t.enqueue_p50_ns, "note": t.note}
    return {"engines": [engine(t) for t in tables]}


def layers_text(path: str, json: bool = False) -> str:
    """The per-layer tables of a trace file (TraceFileError for a file that is not a trace)."""
    from .trace_summary import load_events

    tables = layer_tables(LayerCalls.from_events(load_events(path)))
    if json:
        return orjson.dumps(tables_json(tables)).decode() + "\n"
    return format_tables(tables)
