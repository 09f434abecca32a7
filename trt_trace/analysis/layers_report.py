"""`trt-trace layers`: per engine, its layers by time, from a trace recorded with TRT_TRACE_LAYERS.

In two halves, so that the arithmetic never needs the file:
* `collect(path)` reads the trace through trt_trace/io/readers (any format, streamed, bounded memory:
  it holds the layer slices, a few numbers per profiled call and per engine the distinct GPU span
  lengths of its other calls, never the trace's calls) into `LayerCalls`;
* `layer_tables(calls)` does the per-call arithmetic on those arrays alone.

Two passes over the file, as `summary --from` takes: the first reads the layer slices (the readers
hand them out as events, readers/layer_slices.py) and the trace's metadata; the second joins the
whole calls (readers.read_calls, with summary's window) and keeps the GPU span and enqueue phase of
the profiled ones, and the GPU spans of the engine's other calls as value counts (exact p50). A
profiled call counts when its call is whole, in the window, and has every layer its engine reports.

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

from ..io.readers import CallsRead, TraceFileError, Visitor, Window, open_reader, read_calls
from ..io.readers.columns import KEY_DTYPE, NS_COLUMNS, key_codes, keys_of
from ..io.readers.end_notes import end_notes
from ..io.readers.events import U32, Malformed, integer, layer_slice, ns_of_us
from ..io.readers.in_memory import EventsReader
from ..io.readers.trace_info import TraceInfo
from ..io.readers.value_counts import ValueCounts
from .table_text import Column, csv_text, cut_middle, escaped, left_out_line, text_table

# Beyond this relative difference between the layers' sum and the GPU span, the table says so.
NOTABLE_DIFFERENCE = 0.10
GPU, ENQUEUE = NS_COLUMNS.index("gpu"), NS_COLUMNS.index("enqueue")
NO_LAYERS = ("has no per-layer timing; record it with TRT_TRACE_LAYERS=N (or trt-trace run --layers N): "
             "each engine's next N calls after its first")


def _i64(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int64)


class _LayerEvents(Visitor):
    """The first pass: the layer slices (events of LAYER_CATEGORY), checked; everything else passes by."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int]] = []  # pid, engine id, call id, name index, ns
        self.names: dict[str, int] = {}
        self.engines: dict[tuple[int, int], str] = {}
        self.malformed = 0

    def event(self, ev: dict[str, Any]) -> None:
        try:
            found = layer_slice(ev)
            if found is None:
                return
            args, pid, call_id = found
            engine_id = integer(args.get("engine_id", 0), U32)
            ns = ns_of_us(ev.get("dur", 0))
            if ns < 0:
                raise Malformed
        except Malformed:
            self.malformed += 1
            return
        layer = str(args.get("layer", ev.get("name", "")))
        index = self.names.setdefault(layer, len(self.names))
        self.rows.append((pid, engine_id, call_id, index, ns))
        self.engines.setdefault((pid, engine_id), str(args.get("engine", "")))


@dataclass
class LayerCalls:
    """What a trace holds of per-layer timing, as arrays (one row per layer slice; one per profiled call)."""

    # Layer slices.
    pid: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    engine_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    call_id: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    layer: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # index into `names`
    ns: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    names: list[str] = field(default_factory=list)
    # The profiled calls found whole in the window: (pid, call id) key codes (sorted), GPU span and
    # enqueue phase in ns (-1: none).
    kept: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="V16"))
    kept_gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    kept_enqueue: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    partial: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype="V16"))  # calls cut short (sorted)
    windowed: bool = False  # a window was given: profiled calls neither kept nor cut lie outside it
    unprofiled_gpu: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, engine) -> GPU span p50
    engines: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, engine id) -> name
    reports: dict[int, dict[str, Any]] = field(default_factory=dict)  # pid -> the end metadata's "layers"
    processes: dict[int, str] = field(default_factory=dict)  # pid -> process name, in file order
    read: CallsRead | None = None  # the second pass (end notes)
    malformed: int = 0  # layer slices with a field of the wrong type

    @classmethod
    def from_events(cls, events: list[dict[str, Any]], window: Window | None = None) -> LayerCalls:
        """From event dicts as the JSON writer writes them (tests, small scripts)."""
        return collect(EventsReader(events), window, reader_again=lambda: EventsReader(events))

    def key_of_rows(self) -> np.ndarray:
        return key_codes(keys_of(self.pid, self.call_id))


def _info_facts(out: LayerCalls, info: TraceInfo) -> None:
    for p in sorted(info.processes.values(), key=lambda p: p.order):
        out.processes[p.pid] = p.label or f"pid {p.pid}"
        for m in p.metas:
            if isinstance(m.get("layers"), dict):
                out.reports[p.pid] = m["layers"]
        for engine_id, name in p.engines.items():
            out.engines.setdefault((p.pid, engine_id), name)


def collect(source: str | Any, window: Window | None = None, reader_again: Any = None) -> LayerCalls:
    """Reads a trace (a path, or a reader such as readers.EventsReader with `reader_again` making
    another) into LayerCalls; TraceFileError (one line) for a file that is not a trace."""
    reader = open_reader(source) if isinstance(source, str) else source
    first = _LayerEvents()
    info = reader.read(first)
    out = LayerCalls(names=list(first.names), malformed=first.malformed, windowed=bool(window and window.active))
    if first.rows:
        a = np.array(first.rows, dtype=np.uint64)
        out.pid, out.engine_id, out.layer, out.ns = (a[:, i].astype(np.int64) for i in (0, 1, 3, 4))
        out.call_id = a[:, 2].copy()
    profiled = np.unique(out.key_of_rows())
    engine_keys = {(int(p), int(e)) for p, e in zip(out.pid.tolist(), out.engine_id.tolist(), strict=True)}
    gpu_counts = {k: ValueCounts() for k in engine_keys}
    kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def on_calls(calls: np.ndarray, _info: TraceInfo) -> None:
        codes = key_codes(keys_of(calls["pid"], calls["call_id"]))
        mine = np.isin(codes, profiled) if len(profiled) else np.zeros(len(calls), dtype=bool)
        if mine.any():
            kept.append((codes[mine], calls["ns"][mine, GPU], calls["ns"][mine, ENQUEUE]))
        other = calls[~mine]
        gpu = other["ns"][:, GPU]
        other = other[gpu >= 0]
        if not len(other):
            return
        for p, e in {(int(p), int(e)) for p, e in zip(other["pid"].tolist(), other["engine_id"].tolist(),
                                                       strict=True)} & engine_keys:
            sel = (other["pid"] == p) & (other["engine_id"] == e)
            gpu_counts[(p, e)].add(other["ns"][sel, GPU])

    if len(profiled):  # the second pass only where there are layers to place
        again = open_reader(source) if isinstance(source, str) else reader_again() if reader_again else source
        out.read = read_calls(again, on_calls, window=window, origin_ns=info.origin_ns)
        info = out.read.info
        out.partial = np.sort(key_codes(out.read.partial)) if len(out.read.partial) else out.partial
    if kept:
        codes = np.concatenate([k[0] for k in kept])
        order = np.argsort(codes)
        out.kept = codes[order]
        out.kept_gpu = np.concatenate([k[1] for k in kept])[order]
        out.kept_enqueue = np.concatenate([k[2] for k in kept])[order]
    out.unprofiled_gpu = {k: v.quantiles((50,))[0] for k, v in gpu_counts.items()}
    _info_facts(out, info)
    for key, name in first.engines.items():
        out.engines.setdefault(key, name)
    if out.read is None:
        out.read = CallsRead(info, np.zeros(0, dtype=KEY_DTYPE))
    return out


@dataclass
class LayerRow:
    layer: str
    calls: int
    total_ns: int
    share: float  # of the engine's layer time, in %
    p50_ns: int
    mean_ns: float = -1.0  # over the layer's times (one per report: a layer reported twice in a call counts twice)
    max_ns: int = -1


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
    partial_calls: int = 0  # profiled calls with layers missing or their call cut (a cut file): left out
    outside_window: int = 0  # profiled calls the window (--skip-first, --from, --to) left out
    note: str = ""  # why it has no (or fewer) profiled calls, from the trace's metadata

    @property
    def layers_vs_gpu(self) -> float | None:
        return self.sum_p50_ns / self.gpu_p50_ns if self.gpu_p50_ns > 0 and self.sum_p50_ns >= 0 else None


def _p50(values: np.ndarray) -> int:
    """The median as the table's percentiles take it: the lower middle value, exact (no interpolation)."""
    if len(values) == 0:
        return -1
    return int(np.sort(values)[(len(values) - 1) // 2])


def _lookup(sorted_codes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The index of each code in sorted_codes, -1 where it is not there."""
    if not len(sorted_codes):
        return np.full(len(codes), -1, dtype=np.int64)
    at = np.searchsorted(sorted_codes, codes)
    found = at < len(sorted_codes)
    found[found] = sorted_codes[at[found]] == codes[found]
    return np.where(found, at, -1)


def layer_tables(c: LayerCalls) -> list[EngineLayers]:
    """Per engine (per process), its layers by total time, from the arrays alone."""
    out: list[EngineLayers] = []
    order = {pid: i for i, pid in enumerate(c.processes)}
    keys = sorted({(int(p), int(e)) for p, e in zip(c.pid.tolist(), c.engine_id.tolist(), strict=True)},
                  key=lambda k: (order.get(k[0], len(order)), k[1]))
    codes = c.key_of_rows()
    for pid, engine_id in keys:
        mine = (c.pid == pid) & (c.engine_id == engine_id)
        call_codes, layers, ns = codes[mine], c.layer[mine], c.ns[mine]
        # Whole calls: every layer the engine reports (a file cut by a kill can hold part of a call's),
        # and the call itself whole and in the window.
        uniq, inverse, per_call = np.unique(call_codes, return_inverse=True, return_counts=True)
        at = _lookup(c.kept, uniq)
        cut = np.isin(uniq, c.partial) if len(c.partial) else np.zeros(len(uniq), dtype=bool)
        outside = (at < 0) & ~cut & c.windowed  # the window left the call out
        whole_calls = (per_call == int(per_call.max())) & (at >= 0)
        whole = whole_calls[inverse]
        layers, ns, inverse_whole = layers[whole], ns[whole], inverse[whole]
        engine = EngineLayers(process=c.processes.get(pid, f"pid {pid}"), engine=c.engines.get((pid, engine_id), ""),
                              engine_id=engine_id, profiled_calls=int(whole_calls.sum()), rows=[],
                              partial_calls=int((~whole_calls & ~outside).sum()),
                              outside_window=int(outside.sum()))
        total = int(ns.sum())
        for index in np.unique(layers).tolist():
            sel = layers == index
            t = int(ns[sel].sum())
            times = ns[sel]
            engine.rows.append(LayerRow(c.names[index], int(np.unique(inverse_whole[sel]).size), t,
                                        100.0 * t / total if total else 0.0, _p50(times), t / len(times),
                                        int(times.max())))
        engine.rows.sort(key=lambda r: (-r.total_ns, r.layer))
        if len(ns):
            per_whole = np.bincount(inverse_whole, weights=ns, minlength=len(uniq))[whole_calls]
            engine.sum_p50_ns = _p50(np.rint(per_whole).astype(np.int64))
        gpu = c.kept_gpu[at[whole_calls]]
        engine.gpu_calls = int((gpu >= 0).sum())
        engine.gpu_p50_ns = _p50(gpu[gpu >= 0])
        engine.unprofiled_gpu_p50_ns = c.unprofiled_gpu.get((pid, engine_id), -1)
        enqueue = c.kept_enqueue[at[whole_calls]]
        engine.enqueue_p50_ns = _p50(enqueue[enqueue >= 0])
        out.append(engine)
    # Engines the switch reached without a profiled call, and why (the metadata's note).
    for pid, report in c.reports.items():
        engines = report.get("engines", [])
        for e in engines if isinstance(engines, list) else []:
            if not isinstance(e, dict):
                continue
            try:
                engine_id = integer(e.get("engine_id", 0), U32)
            except Malformed:
                continue
            process = c.processes.get(pid, f"pid {pid}")
            found = [x for x in out if (x.process, x.engine_id) == (process, engine_id)]
            if found:
                found[0].note = str(e.get("note", ""))
            else:
                out.append(EngineLayers(process=process, engine=str(e.get("engine", "")), engine_id=engine_id,
                                        profiled_calls=0, rows=[], note=str(e.get("note", ""))))
    return out


def _us(ns: int) -> str:
    return f"{ns / 1000:.1f} us" if ns >= 0 else "-"


LAYER_SORT_KEYS = ("total", "calls", "p50", "mean", "max", "name")
_LAYER_SORT = {"total": lambda r: -r.total_ns, "calls": lambda r: -r.calls, "p50": lambda r: -r.p50_ns,
               "mean": lambda r: -r.mean_ns, "max": lambda r: -r.max_ns, "name": lambda r: r.layer}


@dataclass(frozen=True)
class LayerOptions:
    """How `layers` shows its tables: each engine's layers in `sort` order (ties: most time first, then
    by name), the first `top` of them (0: all), as text, JSON or CSV; in text the layer name column is
    at most `name_width` wide (0: as wide as the widest name), longer names cut in the middle."""

    sort: str = "total"
    top: int = 0
    format: str = "text"
    name_width: int = 72

    def __post_init__(self) -> None:
        if self.sort not in LAYER_SORT_KEYS:
            raise ValueError(f"unknown sort key {self.sort!r}; use one of {', '.join(LAYER_SORT_KEYS)}")
        if self.format not in ("text", "json", "csv"):
            raise ValueError(f"unknown format {self.format!r}; use text, json or csv")


def arranged(rows: list[LayerRow], sort: str = "total", top: int = 0) -> tuple[list[LayerRow], int]:
    """(the rows in `sort` order, the first `top` of them; how many were left out)."""
    out = sorted(rows, key=lambda r: (_LAYER_SORT[sort](r), -r.total_ns, r.layer))
    shown = out[:top] if top else out
    return shown, len(out) - len(shown)


_LAYER_COLUMNS = [Column("calls", "calls", lambda r: str(r["calls"]), 8),
                  Column("total", "total ms", lambda r: f"{r['total_ns'] / 1e6:.3f}", 11),
                  Column("share", "share %", lambda r: f"{r['share']:.1f}", 9),
                  Column("p50", "p50 us", lambda r: f"{r['p50_ns'] / 1000:.1f}", 11),
                  Column("mean", "mean us", lambda r: f"{r['mean_ns'] / 1000:.1f}", 11),
                  Column("max", "max us", lambda r: f"{r['max_ns'] / 1000:.1f}", 11)]


def format_tables(tables: list[EngineLayers], width: int = 72, options: LayerOptions | None = None) -> str:
    options = options or LayerOptions(name_width=width)
    lines: list[str] = []
    several = len({t.process for t in tables}) > 1
    for t in tables:
        who = escaped((f"{t.process}: " if several else "") + (t.engine or f"engine {t.engine_id}"))
        if not t.rows:
            why = t.note or ("no whole profiled call in the window" if t.outside_window else "")
            lines.append(f"{who}: no per-layer timing" + (f" ({escaped(why)})" if why else ""))
            if t.partial_calls:
                lines.append(f"  cut short: {t.partial_calls} profiled call{'s' if t.partial_calls != 1 else ''} "
                             "with layers missing left out")
            lines.append("")
            continue
        lines.append(f"{who}: {t.profiled_calls} profiled call{'s' if t.profiled_calls != 1 else ''}, "
                     f"{len(t.rows)} layer{'s' if len(t.rows) != 1 else ''}")
        rows, left_out = arranged(t.rows, options.sort, options.top)
        names = [escaped(r.layer) for r in rows]
        if options.name_width:
            names = [cut_middle(n, max(options.name_width, len("layer"))) for n in names]
        lines += text_table("layer", names, [vars(r) for r in rows], _LAYER_COLUMNS, indent="  ")
        if left_out:
            lines.append("  " + left_out_line(left_out, "layer", options.top))
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
        if t.outside_window:
            lines.append(f"  window: {t.outside_window} profiled call{'s' if t.outside_window != 1 else ''} "
                         "outside it left out")
        if t.note:
            lines.append(f"  note: {escaped(t.note)}")
        lines.append("")
    return "\n".join(lines)


LAYER_CSV = ("process", "engine", "engine_id", "layer", "calls", "total_ns", "share", "p50_ns", "mean_ns", "max_ns")


def tables_csv(tables: list[EngineLayers], options: LayerOptions) -> tuple[str, list[str]]:
    """(one CSV of every engine's layers, a header row first; the lines for stderr: layers --top left out)."""
    rows, notes = [], []
    for t in tables:
        shown, left_out = arranged(t.rows, options.sort, options.top)
        rows += [[t.process, t.engine, t.engine_id, r.layer, r.calls, r.total_ns, round(r.share, 4), r.p50_ns,
                  round(r.mean_ns, 3), r.max_ns] for r in shown]
        if left_out:
            who = t.engine or f"engine {t.engine_id}"
            notes.append(f"{who}: {left_out_line(left_out, 'layer', options.top)[1:-1]}")
    return csv_text(LAYER_CSV, rows), notes


def tables_json(tables: list[EngineLayers], c: LayerCalls | None = None,
                options: LayerOptions | None = None) -> dict[str, Any]:
    options = options or LayerOptions()

    def engine(t: EngineLayers) -> dict[str, Any]:
        return {"process": t.process, "engine": t.engine, "engine_id": t.engine_id,
                "profiled_calls": t.profiled_calls, "partial_calls": t.partial_calls,
                "outside_window": t.outside_window,
                "layers": [{"layer": r.layer, "calls": r.calls, "total_ns": r.total_ns, "share": r.share,
                            "p50_ns": r.p50_ns, "mean_ns": round(r.mean_ns, 3), "max_ns": r.max_ns}
                           for r in arranged(t.rows, options.sort, options.top)[0]],
                "layers_left_out": arranged(t.rows, options.sort, options.top)[1],
                "layers_sum_p50_ns": t.sum_p50_ns, "gpu_p50_ns": t.gpu_p50_ns, "gpu_calls": t.gpu_calls,
                "layers_vs_gpu": t.layers_vs_gpu, "unprofiled_gpu_p50_ns": t.unprofiled_gpu_p50_ns,
                "enqueue_p50_ns": t.enqueue_p50_ns, "note": t.note}
    out: dict[str, Any] = {"engines": [engine(t) for t in tables]}
    if c is not None and c.read is not None:
        out["ended"] = c.read.info.ended
        malformed = c.read.info.malformed + c.malformed
        if malformed:
            out["malformed_events"] = malformed
    return out


def notes_of(c: LayerCalls) -> list[str]:
    """The trace's end and what could not be read, one line each (as summary says them)."""
    notes = end_notes(c.read) if c.read is not None else []
    if c.malformed:
        notes.append(f"{c.read.info.path if c.read else 'the trace'}: {c.malformed:,} malformed layer "
                     f"slice{'s' if c.malformed != 1 else ''} left out (a field of the wrong type or out of range)")
    return notes


def layers_report(path: str, json: bool = False, window: Window | None = None,
                  options: LayerOptions | None = None) -> tuple[str, list[str]]:
    """(the per-layer tables of a trace file, the lines for stderr). TraceFileError (one line) for a
    file that is not a trace, and for a trace without per-layer timing (NO_LAYERS)."""
    options = options or LayerOptions(format="json" if json else "text")
    c = collect(path, window)
    tables = layer_tables(c)
    if not tables:
        raise TraceFileError(f"{path} {NO_LAYERS}")
    if options.format == "json":
        return orjson.dumps(tables_json(tables, c, options)).decode() + "\n", notes_of(c)
    if options.format == "csv":
        text, left_out = tables_csv(tables, options)
        return text, notes_of(c) + left_out
    return format_tables(tables, options=options), notes_of(c)


def layers_text(path: str, json: bool = False, window: Window | None = None) -> str:
    """The per-layer tables of a trace file, its end notes after them (TraceFileError: see layers_report)."""
    text, notes = layers_report(path, json, window)
    return text if json or not notes else text + "".join(note + "\n" for note in notes)
