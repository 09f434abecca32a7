"""The per-engine table of a trace file, streamed: whole calls from trt_trace/io/readers are added up
per process and engine as they are read, with the exact values of the durations asked for kept as
value counts (readers/value_counts.py), so memory follows the engines, not the calls."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import orjson

from ..captures import kernel_columns
from ..io.readers import CallsRead, EventsReader, TraceFileError, TraceInfo, Window, load_events, native, read_calls
from ..io.readers.chrome_json import Visitor
from ..io.readers.columns import key_codes, keys_of
from ..io.readers.end_notes import end_notes, state_fields
from ..io.readers.events import Malformed, layer_slice
from ..io.readers.trace_info import CLOSED
from ..io.readers.value_counts import ValueCounts
from ..schema.records import STATS_COLUMNS
from ..schema.trace_format import DURATIONS
from . import inferences as inference_table
from . import summary_table
from .summary_table import TableOptions
from .table_text import escaped, left_out_line

__all__ = ["TraceFileError", "TraceSummary", "aggregate", "aggregate_by_process", "aggregate_file", "load_events",
           "read_summaries", "summary_text"]

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
_SAMPLED_OUT = _COL["gpu_sampled_out"]  # counted apart: the table shows it only where GPU timing was sampled


def cut_short_note(n_partial: int) -> str:
    """The one line that says what was left out."""
    return f"cut short: {n_partial} partial call{'s' if n_partial != 1 else ''} left out"


def profiled_note(n: int, included: bool) -> str:
    """The one line that says what became of the calls that ran under per-layer profiling."""
    calls = f"{n} call{'s' if n != 1 else ''} ran under per-layer profiling (TRT_TRACE_LAYERS)"
    if included:
        return f"{calls}: included (--include-profiled), with the profiling's cost in their times"
    return f"{calls}: left out of the statistics (--include-profiled keeps them)"


def malformed_note(n: int) -> str:
    return f"{n} malformed event{'s' if n != 1 else ''} left out (a field of the wrong type or out of range)"


@dataclass
class TraceSummary:
    names: list[str] = field(default_factory=list)
    stats: np.ndarray = field(default_factory=lambda: np.zeros((0, len(STATS_COLUMNS)), dtype=np.int64))
    dropped: int = 0
    threads_with_drops: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    label: str = ""  # the process's name (process_name event); "" for several processes together
    pid: int | None = None  # the process's pid in the file; None for several processes together
    partial_calls: int = 0  # calls left out: the file was cut inside them (readers/calls.py)
    gpu_every: int = 1  # GPU events on every Nth CUDA call (the session's setting; the largest of merged ranks)
    values: dict[str, list[ValueCounts]] = field(default_factory=dict)  # duration -> per row, exact
    ended: str = CLOSED  # why the trace (or this process's part of it) ended: readers/trace_info.py
    malformed: int = 0
    orphan_spans: int = 0
    notes: list[str] = field(default_factory=list)  # the end notes (one line each) for stderr
    # Calls that ran under per-layer profiling (those with layer slices): left out of the rows unless
    # included; counted either way.
    profiled_calls: int = 0
    profiled_included: bool = True
    # Another profiler's capture (captures/): its calls' kernel sums per row (kernel_columns.SUMS), the calls counted
    capture: Any = None
    kernel_sums: np.ndarray | None = None
    capture_kept: np.ndarray | None = None
    # A table computed elsewhere (a dataset's, in SQL: fleet.py): per row and over all rows, ([p50, p99],
    # value_stats' dict) of the table's duration, in place of `values`.
    fixed: list[tuple[list[int], dict[str, Any]]] | None = None
    fixed_all: tuple[list[int], dict[str, Any]] | None = None
    # The whole inferences (docs/inference.md): the table's `inferences` fields and its `(outside engines)`
    # row; None where the trace has no inference.
    inferences: dict[str, Any] | None = None
    outside_row: dict[str, Any] | None = None

    def percentiles(self, duration: str = "total") -> tuple[np.ndarray, np.ndarray]:
        """Exact p50 and p99 in ns of one of DURATIONS: int64 [rows, 2] and [2] over every call (-1
        where no call has it)."""
        if duration not in DURATIONS:
            raise ValueError(f"unknown phase {duration!r}; use one of {', '.join(DURATIONS)}")
        if self.fixed is not None and self.fixed_all is not None:
            return (np.array([f[0] for f in self.fixed], dtype=np.int64).reshape(len(self.fixed), 2),
                    np.array(self.fixed_all[0], dtype=np.int64))
        rows = self.values.get(duration)
        if rows is None and not self.names:
            rows = []
        if rows is None:
            raise ValueError(f"the summary kept no per-call values of {duration!r}")
        per_row = np.array([vc.quantiles() for vc in rows], dtype=np.int64).reshape(len(rows), 2)
        overall = np.array(ValueCounts.union(rows).quantiles(), dtype=np.int64)
        return per_row, overall


def gpu_every_of(meta: dict[str, Any]) -> int:
    """The GPU-timing sampling a process's trace was taken with (1: every CUDA call, older traces, and
    traces without GPU timing)."""
    if not meta.get("gpu_timing"):
        return 1
    try:
        return max(1, int(meta.get("gpu_every", 1)))
    except (TypeError, ValueError, OverflowError):
        return 1


def _int(meta: dict[str, Any], key: str) -> int:
    value = meta.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    try:
        return int(value)
    except (ValueError, OverflowError):
        return 0


class _Rows:
    """Per (pid, engine id): the table's sums and exact values, added chunk by chunk."""

    def __init__(self, durations: Iterable[str]) -> None:
        self.durations = tuple(durations)
        self.stats: dict[int, np.ndarray] = {}
        self.sampled_out: dict[int, int] = {}  # CUDA calls without a span, not failed or captured
        self.values: dict[int, dict[str, ValueCounts]] = {}
        self._columns = tuple(DURATIONS.index(d) for d in self.durations)
        self.kernels = kernel_columns.KernelSums()

    def add(self, calls: np.ndarray, info: TraceInfo) -> None:
        """One chunk of calls: grouped and summed by native code in one pass (native.call_groups)."""
        keys, sums, values = native.call_groups(calls, self._columns)
        if info.capture is not None:  # another profiler's capture: its calls' kernels, by the same groups
            self.kernels.add(keys, calls, info.capture)
        for g, key in enumerate(keys):
            st = self.stats.get(key)
            if st is None:
                st = self.stats[key] = np.zeros(len(STATS_COLUMNS), dtype=np.int64)
                self.values[key] = {d: ValueCounts() for d in self.durations}
                self.sampled_out[key] = 0
            st[:_SAMPLED_OUT] += sums[g, :_SAMPLED_OUT]
            self.sampled_out[key] += int(sums[g, _SAMPLED_OUT])
            for d, per_group in zip(self.durations, values, strict=True):
                self.values[key][d].add(per_group[g])

    def calls_by_pid(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for key, st in self.stats.items():
            out[key >> 32] = out.get(key >> 32, 0) + int(st[_COL["calls"]])
        return out

    def merged(self, other: _Rows) -> _Rows:
        """These rows and `other`'s together (the same durations; no capture: a capture has no layers)."""
        if not other.stats:
            return self
        out = _Rows(self.durations)
        for rows in (self, other):
            for key, st in rows.stats.items():
                if key not in out.stats:
                    out.stats[key] = np.zeros(len(STATS_COLUMNS), dtype=np.int64)
                    out.values[key] = {d: ValueCounts() for d in self.durations}
                    out.sampled_out[key] = 0
                out.stats[key] += st
                out.sampled_out[key] += rows.sampled_out[key]
                for d in self.durations:
                    out.values[key][d] = ValueCounts.union([out.values[key][d], rows.values[key][d]])
        out.kernels = self.kernels
        return out


class _LayerCallKeys(Visitor):
    """The (pid, call id) of every call with layer slices: the calls that ran under per-layer profiling
    (docs/layers.md). The trace marks them by those slices alone, each with its call's id, so traces
    written before this reading keep working."""

    def __init__(self) -> None:
        self.keys: set[tuple[int, int]] = set()
        self._codes: np.ndarray | None = None

    def event(self, ev: dict[str, Any]) -> None:
        try:
            found = layer_slice(ev)
        except Malformed:
            return  # `layers` counts malformed layer slices; here such a slice marks no call
        if found is None:
            return
        key = found[1:]
        if key not in self.keys:
            self.keys.add(key)
            self._codes = None

    def codes(self) -> np.ndarray:
        """The keys so far as sorted key codes (readers/columns.py)."""
        if self._codes is None:
            pairs = sorted(self.keys)
            self._codes = np.sort(key_codes(keys_of(np.array([p for p, _ in pairs], dtype=np.uint64),
                                                    np.array([c for _, c in pairs], dtype=np.uint64))))
        return self._codes


class _Visitors(Visitor):
    """Every event to each of several visitors."""

    def __init__(self, *visitors: Visitor) -> None:
        self.visitors = visitors

    def event(self, ev: dict[str, Any]) -> None:
        for v in self.visitors:
            v.event(ev)


class _SplitRows:
    """The calls read, split as they come: those with layer slices (profiled) and the others (usual).

    A call's layer slices come after it in the file (the writers put a batch's layer slices after its
    calls), so a whole call waits in a queue of up to HOLD calls before it is split: by then its layer
    slices have been read. Should they come later still (a writer batch of more calls than that), the
    count at the end tells (`all_caught`) and summary reads the file again, every profiled call known."""

    HOLD = 1 << 16  # calls held back (a CALL_DTYPE row each)

    def __init__(self, durations: Iterable[str], known: np.ndarray | None = None) -> None:
        self.usual = _Rows(durations)
        self.profiled = _Rows(durations)
        self.layer_keys = _LayerCallKeys()
        self.known = known
        self.caught = 0
        self._held: list[tuple[np.ndarray, TraceInfo]] = []
        self._n_held = 0

    def add(self, calls: np.ndarray, info: TraceInfo) -> None:
        self._held.append((calls, info))
        self._n_held += len(calls)
        while self._n_held > self.HOLD and len(self._held) > 1:
            self._split(*self._held.pop(0))

    def finish(self) -> None:
        """Splits the calls still held (the file is read)."""
        for calls, info in self._held:
            self._split(calls, info)
        self._held, self._n_held = [], 0

    def _split(self, calls: np.ndarray, info: TraceInfo) -> None:
        self._n_held -= len(calls)
        codes = self.known if self.known is not None else self.layer_keys.codes()
        mine = np.zeros(len(calls), dtype=bool)
        if len(codes):
            mine = np.isin(key_codes(keys_of(calls["pid"], calls["call_id"])), codes)
            self.caught += int(mine.sum())
        self.marked(calls, info, mine)

    def marked(self, calls: np.ndarray, info: TraceInfo, profiled: np.ndarray) -> None:
        """A chunk of calls with its mask of those that ran under per-layer profiling: added up here; a
        subclass may do otherwise with them (export --dataset writes the mask as a column)."""
        if profiled.any():
            self.profiled.add(calls[profiled], info)
            calls = calls[~profiled]
        if len(calls):
            self.usual.add(calls, info)

    def discard(self) -> None:
        """This reading is not the one kept (read_split reads the trace again)."""

    def all_caught(self, read: CallsRead) -> bool:
        """Whether every call with layer slices was caught as profiled (or left out as cut short). With
        a window, profiled calls outside it are never handed out: then this reads again too."""
        codes = self.layer_keys.codes() if self.known is None else self.known
        cut = int(np.isin(key_codes(read.partial), codes).sum()) if len(read.partial) and len(codes) else 0
        return self.known is not None or self.caught + cut >= len(codes)


_Split = TypeVar("_Split", bound=_SplitRows)


def _process_summaries(read: CallsRead, rows: _Rows, profiled: dict[int, int] | None = None,
                       included: bool = True) -> list[TraceSummary]:
    info = read.info
    partial = read.partial_by_pid()
    by_pid: dict[int, list[int]] = {}
    for key in rows.stats:
        by_pid.setdefault(key >> 32, []).append(key & 0xFFFFFFFF)
    out = []
    for p in sorted(info.processes.values(), key=lambda p: (p.sort_index is None, p.sort_index or 0, p.order)):
        engine_ids = sorted(by_pid.get(p.pid, []))
        meta = p.meta
        if not (engine_ids or p.metas or partial.get(p.pid) or (profiled or {}).get(p.pid)):
            continue  # another tool's process: no engine call, no metadata of ours
        every = gpu_every_of(meta)
        keys = [(p.pid << 32) | e for e in engine_ids]
        stats = np.array([rows.stats[k] for k in keys], dtype=np.int64).reshape(len(keys), len(STATS_COLUMNS))
        if every > 1:
            stats[:, _COL["gpu_sampled_out"]] = [rows.sampled_out[k] for k in keys]
        threads = meta.get("threads", [])
        out.append(TraceSummary(
            names=[p.engines.get(e, f"engine_{e}") for e in engine_ids],
            stats=stats,
            dropped=_int(meta, "dropped_events"),
            threads_with_drops=sum(1 for t in threads if isinstance(t, dict) and t.get("dropped"))
            if isinstance(threads, list) else 0,
            metadata=meta,
            label=p.label or f"pid {p.pid}",
            pid=p.pid,
            partial_calls=partial.get(p.pid, 0),
            gpu_every=every,
            values={d: [rows.values[k][d] for k in keys] for d in rows.durations},
            ended=p.ended if info.merged is not None else info.ended,
            malformed=0,
            profiled_calls=(profiled or {}).get(p.pid, 0),
            profiled_included=included,
            **_capture_fields(rows, keys),
        ))
    return out


def _capture_fields(rows: _Rows, keys: list[int]) -> dict[str, Any]:
    k = rows.kernels
    if k.capture is None:
        return {}
    return {"capture": k.capture, "kernel_sums": k.rows(keys), "capture_kept": k.kept_rows()}


def aggregate_parts(parts: list[TraceSummary], read: CallsRead) -> TraceSummary:
    """The table of all processes: engines added up by name, the k-th engine called `n` in each
    process in row (n, k) (two engines of one process may share a name)."""
    if len(parts) == 1:
        whole = parts[0]
    elif not parts:
        whole = TraceSummary()
    else:
        keys: dict[tuple[str, int], int] = {}
        meta: dict[str, Any] = {}
        row_ofs = []
        for part in parts:
            meta.update(part.metadata)
            seen: dict[str, int] = {}
            row_of = []
            for name in part.names:
                k = seen.get(name, 0)
                seen[name] = k + 1
                row_of.append(keys.setdefault((name, k), len(keys)))
            row_ofs.append(row_of)
        stats = np.zeros((len(keys), len(STATS_COLUMNS)), dtype=np.int64)
        durations = list(parts[0].values)
        values: dict[str, list[list[ValueCounts]]] = {d: [[] for _ in keys] for d in durations}
        for part, row_of in zip(parts, row_ofs, strict=True):
            for i, row in enumerate(row_of):
                stats[row] += part.stats[i]
                for d in durations:
                    values[d][row].append(part.values[d][i])
        capture = next((p.capture for p in parts if p.capture is not None), None)
        kernel_sums = None
        if capture is not None:
            kernel_sums = np.zeros((len(keys), len(kernel_columns.SUMS)), dtype=np.int64)
            for part, row_of in zip(parts, row_ofs, strict=True):
                for i, row in enumerate(row_of):
                    if part.kernel_sums is not None:
                        kernel_sums[row] += part.kernel_sums[i]
        whole = TraceSummary(
            capture=capture, kernel_sums=kernel_sums, capture_kept=parts[0].capture_kept,
            names=[name for name, _ in keys], stats=stats, dropped=sum(p.dropped for p in parts),
            threads_with_drops=sum(p.threads_with_drops for p in parts), metadata=meta,
            partial_calls=sum(p.partial_calls for p in parts), gpu_every=max(p.gpu_every for p in parts),
            profiled_calls=sum(p.profiled_calls for p in parts), profiled_included=parts[0].profiled_included,
            values={d: [ValueCounts.union(v) for v in values[d]] for d in durations})
    whole = _with_file_facts(whole, read)
    return whole


def _with_file_facts(s: TraceSummary, read: CallsRead) -> TraceSummary:
    s.ended = read.info.ended
    s.malformed = read.info.malformed
    s.orphan_spans = read.orphan_spans
    s.notes = end_notes(read)
    if read.info.capture is not None:
        s.notes += kernel_columns.notes(read.info.capture)
    return s


def read_split(path: str | Any, make: Callable[[np.ndarray | None], _Split], window: Window | None = None,
               reader_again: Any = None, spans: inference_table.InferenceSpans | None = None,
               on_all: Callable[[np.ndarray], None] | None = None) -> tuple[_Split, CallsRead]:
    """Reads `path` into make(None) (a _SplitRows), each call marked profiled or not; where a profiled call
    came before its layer slices, reads it again into make(every profiled call's key code) (the first one
    is then dropped: `discard`). Returns (the one that holds every call, what the reader found).
    spans and on_all, of the first reading only (it sees every slice): the inference slices, and every whole
    call before the window cuts (an inference's engine time is of all its calls: docs/inference.md)."""
    split = make(None)
    visitor = split.layer_keys if spans is None else _Visitors(split.layer_keys, spans)
    read = read_calls(path, split.add, visitor=visitor, window=window, on_all=on_all)
    split.finish()
    if not split.all_caught(read):  # a profiled call came before its layer slices: again, all of them known
        again = path if isinstance(path, str) else reader_again() if reader_again is not None else None
        if again is None:
            split.discard()
            raise TraceFileError("the calls with per-layer timing need a second reading of the trace")
        known = split.layer_keys.codes()
        split.discard()
        split = make(known)
        read = read_calls(again, split.add, window=window)
        split.finish()
    return split, read


def read_summaries(path: str | Any, durations: Iterable[str] = ("total",), window: Window | None = None,
                   include_profiled: bool = True, reader_again: Any = None,
                   ) -> tuple[list[TraceSummary], TraceSummary, CallsRead]:
    """(one summary per process, the summary of all of them, what the reader found), with exact
    values kept of `durations`. include_profiled=False leaves the calls that ran under per-layer
    profiling out of the rows (counted in profiled_calls); reader_again makes the reader anew where
    `path` is a reader and a second pass is needed (_SplitRows)."""
    durations = tuple(durations)
    spans = inference_table.InferenceSpans()
    call_spans = inference_table.CallSpans(spans)
    split, read = read_split(path, lambda known: _SplitRows(durations, known), window, reader_again, spans,
                             call_spans.add)
    rows = split.usual if not include_profiled else split.usual.merged(split.profiled)
    parts = _process_summaries(read, rows, split.profiled.calls_by_pid(), include_profiled)
    for part in parts:
        part.malformed = read.info.malformed + spans.malformed
    whole = aggregate_parts(parts, read)
    if spans.rows:
        calls = call_spans.array()
        for part in parts if any(whole is p for p in parts) else [*parts, whole]:
            joined = inference_table.join(spans, calls, part.pid, window, read.window_ns)
            part.inferences = inference_table.fields(joined)
            part.outside_row = inference_table.outside_row(joined) if joined is not None else None
    return parts, whole, read


def aggregate(events: list[dict[str, Any]]) -> TraceSummary:
    """The per-engine table of a trace's events (load_events: in memory, for tests and scripts)."""
    return read_summaries(EventsReader(events), DURATIONS, reader_again=lambda: EventsReader(events))[1]


def aggregate_by_process(events: list[dict[str, Any]]) -> list[TraceSummary]:
    """One summary per process (per rank in a merged trace) of a trace's events, in the trace's order."""
    return read_summaries(EventsReader(events), DURATIONS, reader_again=lambda: EventsReader(events))[0]


def aggregate_file(path: str, durations: Iterable[str] = DURATIONS, window: Window | None = None) -> TraceSummary:
    """The per-engine table of a trace file (JSON, Perfetto, merged)."""
    return read_summaries(path, durations, window)[1]


def _native_order(s: TraceSummary) -> tuple[list[int], list[int]]:
    """The rows as the native formatter orders them (timing_table.cpp: engines with calls, by time, most
    first, ties in their order here), as indexes into s.names, and each one's time in ns."""
    if not len(s.stats):
        return [], []
    calls = s.stats[:, _COL["calls"]]
    time = np.maximum(s.stats[:, _COL["total_ns"]], native.scaled_gpu_ns(s.stats)).tolist()
    order = sorted((i for i in range(len(s.names)) if calls[i] > 0), key=lambda i: -time[i])
    return order, [time[i] for i in order]


def table_doc(s: TraceSummary, phase: str = "total") -> tuple[dict[str, Any], list[int], bool]:
    """(the table as JSON fields, every row in the table's order, with min/mean/max/stddev of `phase`
    added; each row's time in ns; whether a capture's kernel columns are in it)."""
    per_row, overall = s.percentiles(phase)
    table = native.format_table(s.names, s.stats, per_row, tuple(overall.tolist()), phase, True, s.gpu_every,
                                s.dropped, s.threads_with_drops)
    capture = s.capture
    calls = s.stats[:, _COL["calls"]] if len(s.stats) else np.zeros(0, dtype=np.int64)
    doc = orjson.loads(table)
    if capture is not None:
        doc = kernel_columns.add_json_fields(table, s.names, calls, s.kernel_sums, capture)
    order, time_ns = _native_order(s)
    if s.fixed is not None and s.fixed_all is not None:
        fields = [summary_table.ns_fields(f[1]) for f in s.fixed]
        all_fields = summary_table.ns_fields(s.fixed_all[1])
    else:
        rows = s.values.get(phase, [])
        fields = [summary_table.stat_fields(vc) for vc in rows]
        all_fields = summary_table.stat_fields(ValueCounts.union(rows))
    for row, i in zip(doc["engines"], order, strict=True):
        if row["engine"] != s.names[i] or row["calls"] != int(calls[i]):
            raise RuntimeError(f"the table's row {row['engine']!r} is not the summary's {s.names[i]!r}")
        row.update(fields[i])
    doc["all"].update(all_fields)
    with_kernels = capture is not None and capture.has_device_activity and s.kernel_sums is not None
    return doc, time_ns, with_kernels


def _notes_text(s: TraceSummary, phase: str, rows: int) -> str:
    """The lines under the table: the native formatter's (GPU sampling, errors, drops; asked of a table
    with plain names, so that its lines are counted right), then the file's (cut short, malformed)."""
    per_row, overall = s.percentiles(phase)
    plain = native.format_table([f"e{i}" for i in range(len(s.names))], s.stats, per_row, tuple(overall.tolist()),
                                phase, False, s.gpu_every, s.dropped, s.threads_with_drops)
    notes = "".join(line + "\n" for line in plain.split("\n")[rows + 2:] if line)
    if s.partial_calls:
        notes += cut_short_note(s.partial_calls) + "\n"
    if s.malformed:
        notes += malformed_note(s.malformed) + "\n"
    if s.profiled_calls:
        notes += profiled_note(s.profiled_calls, s.profiled_included) + "\n"
    return notes


def _with_outside(doc: dict[str, Any], s: TraceSummary) -> dict[str, Any]:
    """The arranged table with the `(outside engines)` row after the engines (text and CSV), where there are
    inferences: apart from --sort and --top, which order and cut the engines."""
    if s.outside_row is None:
        return doc
    return dict(doc, engines=[*doc["engines"], s.outside_row])


def _json_doc(s: TraceSummary, phase: str, options: TableOptions) -> dict[str, Any]:
    doc, time_ns, _ = table_doc(s, phase)
    doc = summary_table.arrange(doc, time_ns, options.sort, options.top)
    # The whole inferences (docs/inference.md): null where the trace has none.
    doc["inferences"] = s.inferences
    doc["outside_engines"] = s.outside_row
    doc["partial_calls"] = s.partial_calls
    # Calls that ran under per-layer profiling: their number, and whether the rows hold them.
    doc["profiled_calls"] = s.profiled_calls
    doc["profiled_included"] = s.profiled_included
    if s.label:
        doc["process"] = s.label
    doc.update(state_fields(s))
    return doc


def _table(s: TraceSummary, phase: str = "total", json: bool = False, options: TableOptions | None = None) -> str:
    options = options or TableOptions(format="json" if json else "text")
    if json:
        return orjson.dumps(_json_doc(s, phase, options)).decode()
    doc, time_ns, with_kernels = table_doc(s, phase)
    n_rows = len(doc["engines"])
    doc = summary_table.arrange(doc, time_ns, options.sort, options.top)
    columns = options.columns or summary_table.default_columns(doc, with_kernels, "text")
    head = inference_table.line(s.inferences) + "\n" if s.inferences is not None else ""
    return head + summary_table.render_text(_with_outside(doc, s), columns, phase, options.name_width, options.top) + \
        _notes_text(s, phase, n_rows)


def _header(p: TraceSummary) -> str:
    """A process's header line in --by-rank: its label, and its pid where it has no rank (two processes
    of one program on one host have the same label)."""
    who = escaped(p.label)
    if p.pid is not None and p.metadata.get("rank") is None and f"pid {p.pid}" not in who:
        who += f" · pid {p.pid}"
    return f"== {who} =="


def summary_parts(path: str, by_process: bool = False, phase: str = "total", json: bool = False,
                  window: Window | None = None, options: TableOptions | None = None,
                  include_profiled: bool = False) -> tuple[str, TraceSummary]:
    """(the table text, the summary of all processes): see summary_text."""
    if phase not in DURATIONS:
        raise TraceFileError(f"unknown phase {phase!r}; use one of {', '.join(DURATIONS)}")
    options = options or TableOptions(format="json" if json else "text")
    parts, whole, _read = read_summaries(path, (phase,), window, include_profiled)
    return render_parts(parts, whole, by_process, phase, options), whole


def render_parts(parts: list[TraceSummary], whole: TraceSummary, by_process: bool, phase: str,
                 options: TableOptions) -> str:
    """The table text (JSON, CSV) of the summaries of a trace's processes and of all of them."""
    by_process = by_process and bool(parts)  # no process of ours: the one (empty) table
    shown = parts if by_process else []
    tables = [*shown, whole] if len(shown) != 1 else shown
    if options.format == "json":
        docs = [orjson.dumps(_json_doc(p, phase, options)).decode() for p in tables]
        return (docs[0] if not by_process else "[" + ",".join(docs) + "]") + "\n"
    if options.format == "csv":
        return _csv(tables, phase, options, by_process, whole)
    texts = [_table(p, phase, options=options) for p in tables]
    if not by_process:
        return texts[0]
    labels = [_header(p) for p in parts] + ([f"== all {len(parts)} processes =="] if len(parts) > 1 else [])
    return "\n".join(f"{label}\n{table}" for label, table in zip(labels, texts, strict=True))


def _csv(tables: list[TraceSummary], phase: str, options: TableOptions, by_process: bool, whole: TraceSummary) -> str:
    """One CSV of the tables (--by-rank: a process column first, the table of all processes last)."""
    docs = []
    columns: tuple[str, ...] | None = options.columns
    for k, t in enumerate(tables):
        doc, time_ns, with_kernels = table_doc(t, phase)
        if columns is None:
            columns = summary_table.default_columns(doc, with_kernels, "csv")
        label = f"all {len(tables) - 1} processes" if by_process and k == len(tables) - 1 and len(tables) > 1 \
            else _header(t)[3:-3]
        doc = summary_table.arrange(doc, time_ns, options.sort, options.top)
        if doc["engines_left_out"]:  # CSV rows are all data: the count goes to stderr with the notes
            whole.notes.append(f"{label}: {left_out_line(doc['engines_left_out'], 'engine', options.top)[1:-1]}")
        if t.profiled_calls:
            whole.notes.append(f"{label}: {profiled_note(t.profiled_calls, t.profiled_included)}")
        if t.inferences is not None:  # CSV rows are all data: the inferences' line goes with the notes
            whole.notes.append(f"{label}: {inference_table.line(t.inferences)}")
        docs.append((label, _with_outside(doc, t)))
    return summary_table.render_csv(docs, columns or ())


def summary_text(path: str, by_process: bool = False, phase: str = "total", json: bool = False,
                 window: Window | None = None, options: TableOptions | None = None,
                 include_profiled: bool = False) -> str:
    """The per-engine table of a trace file; by_process=True puts one table per process (rank)
    before the table of all of them. phase: the p50/p99 columns are of the call's total (default)
    or of one phase (DURATIONS), exact over the file's calls. json=True: the table as JSON (one
    object; with by_process, a list of them, the last for all processes). Text tables end with
    the trace's end notes (cut short, size limit, split) where there are any. options: columns, sort,
    top N, format (text, json, csv) and the name column's width (summary_table.TableOptions).
    Calls that ran under per-layer profiling (TRT_TRACE_LAYERS: those with layer slices) are left out
    of the rows, with one line (JSON: `profiled_calls`) saying how many; include_profiled=True keeps them."""
    text, whole = summary_parts(path, by_process, phase, json, window, options, include_profiled)
    if json or (options is not None and options.format != "text") or not whole.notes:
        return text
    return text + "".join(note + "\n" for note in whole.notes)
