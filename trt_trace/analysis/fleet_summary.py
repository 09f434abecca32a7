"""`trt-trace summary DIR`: the per-engine table of a dataset (export --dataset, fleet.py), by one query plan
that either SQL engine runs (fleet_engines.py): DuckDB, embedded, the default, or Spark (`--engine spark`).

The plan: the dataset's files are found and their trt_trace metadata read here (pyarrow, the footers only),
which gives the processes, their clock offsets (hosts aligned as `merge` aligns them) and the window's
bounds; the engine then exposes the rows as a relation `calls` (every column, plus the process's number
`proc` and its `offset_ns`), and runs the same SQL on it: a view `kept` (the window: engines, skip-first by
row_number, from/to on the merged clock), one pass for the rows (process, engine), one GROUPING SETS pass
for each process and all calls, and one for the table of all processes (engines added up by name). The SQL is
the same text on both engines: standard aggregates and percentile_disc(q) WITHIN GROUP (ORDER BY x).

The figures are those of `merge` + `summary` of the same traces: sums and counts exactly; p50/p99 exactly
(percentile_disc is the smallest value whose cumulative share reaches q, the ceil(q n)-th smallest, the
definition of readers/value_counts.py; Spark gives it as a double, exact for durations under 2^53 ns);
min/max/mean exactly (the mean as the exact sum over the count); the standard deviation is stddev_samp in
double precision, which can differ from the summary's in the last digit. Calls that ran under per-layer
profiling (the column `profiled`) are left out unless include_profiled, and counted, as `summary` does."""

from __future__ import annotations

import os
import re
from statistics import fmean
from typing import Any

import numpy as np
import orjson

from ..io.readers import Window
from ..io.readers.trace_info import CUT_SHORT
from ..schema.records import STATS_COLUMNS
from ..schema.trace_format import DURATIONS, HOST_PHASES
from .fleet import FORMAT, KEY, NEEDED, NULL_PARTITION, PARTITIONS
from .fleet_engines import DatasetError, DuckDBEngine, ProcessKey, SqlEngine
from .summary_table import TableOptions
from .trace_summary import TraceSummary, render_parts

__all__ = ["DatasetError", "dataset_summaries", "dataset_summary_parts", "is_dataset"]


def is_dataset(path: str) -> bool:
    return os.path.isdir(path)


def _sql_list(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def _hive_unescape(value: str) -> str:
    """A partition folder's value as Hive (and Spark) read it: each %XX is the character XX; None for null."""
    return re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), value)


class _Process:
    def __init__(self, folder: str, facts: list[dict[str, Any]], key: ProcessKey) -> None:
        first = facts[0]
        self.folder = folder
        self.facts = facts
        self.key = key
        self.host = str(first.get("host") or "?")
        self.rank = first.get("rank")
        self.os_pid = first.get("os_pid")
        self.merged = any(f.get("merged") for f in facts)
        self.anchors = [a for f in facts for a in f.get("anchors", [])]
        origins = [f["origin_ns"] for f in facts if isinstance(f.get("origin_ns"), int)]
        self.origin_ns = min(origins) if origins else None
        self.offset_ns = 0

    def label(self) -> str:
        """A merged trace's label as it was; else the one `merge` gives (rank · program · host)."""
        first = self.facts[0]
        if self.merged:
            return str(first.get("label"))
        parts = [] if self.rank is None else [f"rank {self.rank}"]
        if first.get("program"):
            parts.append(str(first["program"]))
        parts.append(self.host)
        return " · ".join(parts)

    def order(self) -> tuple[Any, ...]:
        if self.merged:
            return (0, *self.facts[0].get("sort", [0, 0, 0]))
        return (1, self.rank is None, self.rank if self.rank is not None else 0, self.host, self.os_pid or 0)


def dataset_files(root: str) -> list[str]:
    """The dataset's Parquet files, sorted; hidden ones (a part being written) and Spark's `_` files left out,
    as Spark and Hive leave them out."""
    out = []
    for folder, dirs, files in os.walk(os.path.abspath(root)):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "_")))
        out += [os.path.join(folder, f) for f in files if f.endswith(".parquet") and not f.startswith((".", "_"))]
    return sorted(out)


def _key_of(root: str, folder: str) -> ProcessKey:
    """(host, rank, pid) of a process's folder, as the partition's values read (None for a null value)."""
    rel = os.path.relpath(folder, os.path.abspath(root)).split(os.sep)
    names = [part.split("=", 1)[0] for part in rel]
    if names != list(PARTITIONS):
        raise DatasetError(f"{folder}: not a folder of a trt_trace dataset ({'/'.join(f'{p}=...' for p in PARTITIONS)} "
                           f"under {root}, as `trt-trace export --dataset` writes it)")
    values = [part.split("=", 1)[1] for part in rel]
    host, rank, pid = (None if v == NULL_PARTITION else _hive_unescape(v) for v in values)
    return ProcessKey(folder, host, rank, pid)


def _processes(files: list[str], root: str) -> list[_Process]:
    """The processes of the dataset, in the merged trace's order, from the files' footers (pyarrow)."""
    import pyarrow as pa  # heavy: only a dataset's summary pays for it
    import pyarrow.parquet as pq  # (the same)

    facts: dict[str, dict[str, Any]] = {}
    for f in files:
        try:
            meta = pq.read_metadata(f)
        except (pa.ArrowException, OSError) as exc:
            raise DatasetError(f"{root}: not a trt_trace dataset ({f}: {str(exc).splitlines()[0]})") from None
        value = (meta.metadata or {}).get(KEY.encode())
        if value is None:
            raise DatasetError(f"{f}: not a part of a trt_trace dataset (no trt_trace metadata; written by "
                               f"`trt-trace export --dataset`)")
        try:
            facts[f] = orjson.loads(value)
        except orjson.JSONDecodeError:
            raise DatasetError(f"{f}: its trt_trace metadata is not JSON") from None
        if not isinstance(facts[f], dict) or facts[f].get("format") != FORMAT:
            got = facts[f].get("format") if isinstance(facts[f], dict) else None
            raise DatasetError(f"{f}: a trt_trace dataset of format {got!r}; this trt-trace reads format {FORMAT} "
                               f"(export the traces again)")
        lacking = [c for c in NEEDED if c not in meta.schema.names]
        if lacking:
            raise DatasetError(f"{f}: a partition without the column {lacking[0]!r}; export it again with "
                               f"`trt-trace export --dataset`")
    by_folder: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        by_folder.setdefault(os.path.dirname(f), []).append(facts[f])
    return sorted((_Process(folder, fs, _key_of(root, folder)) for folder, fs in by_folder.items()),
                  key=_Process.order)


def _align(processes: list[_Process]) -> None:
    """Each process's clock offset, as merge.host_offsets gives it: the first process's host is the
    reference; another host moves by the difference of the hosts' mean (wall - monotonic)."""
    plain = [p for p in processes if not p.merged]
    if not plain:
        return
    diffs: dict[str, list[int]] = {}
    for p in plain:
        diffs.setdefault(p.host, []).extend(wall - mono for mono, wall in p.anchors)
    reference = plain[0].host
    if not diffs[reference]:
        return
    ref = fmean(diffs[reference])
    for p in plain:
        values = diffs[p.host]
        p.offset_ns = 0 if p.host == reference or not values else round(fmean(values) - ref)


# -- the plan: the same SQL on every engine ---------------------------------------------------------------

# Where a call counts: `counted` is false for a profiled call left out; `val` is the asked duration of a
# counted call (NULL otherwise, which every aggregate below skips).
_SUMS = ("sum(CASE WHEN counted THEN 1 ELSE 0 END), sum(CASE WHEN counted AND error THEN 1 ELSE 0 END), " +
         ", ".join(f"coalesce(sum(CASE WHEN counted THEN {d}_ns END), 0)" for d in ("total", *HOST_PHASES, "gpu")) +
         ", count(CASE WHEN counted THEN gpu_ns END), "
         "sum(CASE WHEN counted AND gpu_ns IS NULL AND on_cuda AND NOT error AND NOT captured THEN 1 ELSE 0 END)")
_STATS = ("percentile_disc(0.5) WITHIN GROUP (ORDER BY val), percentile_disc(0.99) WITHIN GROUP (ORDER BY val), "
          "min(val), max(val), sum(val), count(val), stddev_samp(val)")
_N_SUMS = len(STATS_COLUMNS)
_NO_STATS = (None, None, None, None, None, 0, None)


def _kept_sql(phase: str, window: Window, processes: list[_Process], include_profiled: bool) -> str:
    """The view of the calls in the window, each with `counted`, `val` and its process's number."""
    columns = ", ".join(["proc", "engine", "engine_id", "error", "captured", "on_cuda", "profiled",
                         *(f"{d}_ns" for d in ("total", *HOST_PHASES, "gpu")), "begin_ns + offset_ns AS at_ns"])
    where = []
    if window.engines is not None:
        where.append(f"engine IN ({_sql_list(sorted(window.engines))})")
    nth = ""
    outer = []
    if window.skip_first > 0:
        nth = ", row_number() OVER (PARTITION BY proc, engine_id ORDER BY begin_ns, call_id) AS nth"
        outer.append(f"nth > {int(window.skip_first)}")
    if window.timed:
        lows = [p.origin_ns + p.offset_ns for p in processes if p.origin_ns is not None]
        origin = min(lows) if lows else 0
        if window.from_s is not None:
            outer.append(f"at_ns >= {origin + round(window.from_s * 1e9)}")
        if window.to_s is not None:
            outer.append(f"at_ns < {origin + round(window.to_s * 1e9)}")
    counted = "TRUE" if include_profiled else "NOT profiled"
    inner = f"SELECT {columns}{nth} FROM calls" + (f" WHERE {' AND '.join(where)}" if where else "")
    return (f"SELECT w.*, {counted} AS counted, CASE WHEN {counted} THEN {phase}_ns END AS val FROM ({inner}) w" +
            (f" WHERE {' AND '.join(outer)}" if outer else ""))


def _fixed(stat_row: tuple[Any, ...]) -> tuple[list[int], dict[str, Any]]:
    """(p50, p99 or -1, -1), value_stats' dict of one row's SQL figures."""
    p50, p99, lo, hi, total, n, sd = stat_row
    if not n:
        return [-1, -1], {"min": None, "mean": None, "max": None, "stddev": None}
    total, n = int(total), int(n)
    base = total // n
    mean = base + (total - base * n) / n
    return [int(p50), int(p99)], {"min": int(lo), "mean": mean, "max": int(hi),
                                  "stddev": 0.0 if n == 1 or sd is None else float(sd)}


def _summary(names: list[str], rows: list[tuple[Any, ...]], **kw: Any) -> TraceSummary:
    stats = np.array([[int(x) for x in r[:_N_SUMS]] for r in rows], dtype=np.int64).reshape(len(rows), _N_SUMS)
    fixed = [_fixed(tuple(r[_N_SUMS:])) for r in rows]
    return TraceSummary(names=names, stats=stats, fixed=fixed, **kw)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def dataset_summaries(root: str, phase: str = "total", window: Window | None = None, include_profiled: bool = False,
                      engine: SqlEngine | None = None) -> tuple[list[TraceSummary], TraceSummary]:
    """(one summary per process, the summary of all of them) of the dataset at `root`, computed by `engine`
    (default: DuckDB, embedded). include_profiled keeps the calls that ran under per-layer profiling."""
    if phase not in DURATIONS:
        raise DatasetError(f"unknown phase {phase!r}; use one of {', '.join(DURATIONS)}")
    if not os.path.isdir(root):
        raise DatasetError(f"{root}: no such directory")
    files = dataset_files(root)
    if not files:
        raise DatasetError(f"{root}: no Parquet files; not a trt_trace dataset (write one with "
                           f"`trt-trace export TRACE... --dataset {root}`)")
    processes = _processes(files, root)
    _align(processes)
    window = window or Window()
    if window.timed and any(p.merged for p in processes) and any(not p.merged for p in processes):
        raise DatasetError(f"{root}: --from/--to need one clock; the dataset mixes a merged trace's processes with "
                           f"per-process traces")
    engine = engine or DuckDBEngine()
    engine.load(root, files, [(p.key, i, p.offset_ns) for i, p in enumerate(processes)])
    engine.run(f"CREATE OR REPLACE TEMP VIEW kept AS {_kept_sql(phase, window, processes, include_profiled)}")
    # The rows (process, engine); then each process's figures over its engines and those over every call, in
    # one GROUPING SETS pass. Two passes, not one of three sets: an exact percentile holds every value of its
    # group, and one pass of the three would hold each call's value six times at once (p50, p99; three sets).
    per = sorted((r for r in engine.rows(f"SELECT proc, engine_id, min(engine), {_SUMS}, {_STATS} FROM kept "
                                         f"GROUP BY proc, engine_id") if r[3]), key=lambda r: (r[0], r[1]))
    grouped = engine.rows(f"SELECT proc, GROUPING(proc), sum(CASE WHEN profiled THEN 1 ELSE 0 END), {_STATS} "
                          f"FROM kept GROUP BY GROUPING SETS ((proc), ())")
    per_proc = {r[0]: (int(r[2]), tuple(r[3:])) for r in grouped if r[1] == 0}  # proc -> (profiled calls, figures)
    overall = next((r[3:] for r in grouped if r[1] == 1), _NO_STATS)
    # The table of all processes: engines by name, the k-th engine of a name in each process in row (name, k).
    rows: dict[tuple[str, int], int] = {}
    mapping = []
    seen: dict[tuple[int, str], int] = {}
    for proc, engine_id, name, *_ in per:
        k = seen.get((proc, name), 0)
        seen[(proc, name)] = k + 1
        mapping.append((proc, engine_id, rows.setdefault((name, k), len(rows))))
    parts = []
    for i, p in enumerate(processes):
        mine = [r for r in per if r[0] == i]
        facts = p.facts
        every = max(int(f.get("gpu_every") or 1) for f in facts)
        s = _summary([r[2] for r in mine], [r[3:] for r in mine], label=p.label(), pid=p.os_pid,
                     metadata={"rank": p.rank, "host": p.host}, gpu_every=every,
                     dropped=max(_int(f.get("dropped")) for f in facts),
                     threads_with_drops=max(_int(f.get("threads_with_drops")) for f in facts),
                     partial_calls=sum(_int(f.get("partial_calls")) for f in facts),
                     ended=str(facts[-1].get("ended") or CUT_SHORT),
                     malformed=max(_int(f.get("malformed")) for f in facts),
                     profiled_calls=per_proc[i][0] if i in per_proc else 0,
                     profiled_included=include_profiled)
        if every == 1:
            s.stats[:, STATS_COLUMNS.index("gpu_sampled_out")] = 0
        s.fixed_all = _fixed(per_proc[i][1] if i in per_proc else _NO_STATS)
        parts.append(s)
    if len(parts) == 1:
        whole = parts[0]
    else:
        engine.table("rows_of", "proc INT, engine_id INT, row_no INT", mapping)
        by_row = {r[0]: tuple(r[1:]) for r in engine.rows(
            f"SELECT row_no, {_STATS} FROM kept JOIN rows_of ON kept.proc = rows_of.proc AND "
            f"kept.engine_id = rows_of.engine_id WHERE counted GROUP BY row_no")}
        whole = TraceSummary(names=[name for name, _ in rows],
                             stats=np.zeros((len(rows), _N_SUMS), dtype=np.int64),
                             fixed=[_fixed(by_row.get(r, _NO_STATS)) for r in range(len(rows))],
                             gpu_every=max((p.gpu_every for p in parts), default=1),
                             dropped=sum(p.dropped for p in parts),
                             threads_with_drops=sum(p.threads_with_drops for p in parts),
                             partial_calls=sum(p.partial_calls for p in parts),
                             malformed=max((p.malformed for p in parts), default=0),
                             ended=parts[0].ended if parts else CUT_SHORT,
                             profiled_calls=sum(p.profiled_calls for p in parts), profiled_included=include_profiled)
        # The sums as aggregate_parts adds them: the parts' rows (sampled-out calls where a part sampled).
        for part, rows_of_part in zip(parts, _rows_of(mapping, len(parts)), strict=True):
            for i, row in enumerate(rows_of_part):
                whole.stats[row] += part.stats[i]
        whole.fixed_all = _fixed(tuple(overall))
    notes = dict.fromkeys(n for p in processes for f in p.facts for n in f.get("notes", []))
    whole.notes = list(notes)
    return parts, whole


def _rows_of(mapping: list[tuple[int, int, int]], n: int) -> list[list[int]]:
    """Per process, the whole table's row of each of its rows (in its rows' order)."""
    out: list[list[int]] = [[] for _ in range(n)]
    for (proc, _engine_id, row) in mapping:
        out[proc].append(row)
    return out


def dataset_summary_parts(root: str, by_process: bool = False, phase: str = "total", window: Window | None = None,
                          options: TableOptions | None = None, include_profiled: bool = False,
                          engine: SqlEngine | None = None) -> tuple[str, TraceSummary]:
    """summary_parts (trace_summary.py) of a dataset: the same tables, computed by `engine` (DuckDB by default)."""
    parts, whole = dataset_summaries(root, phase, window, include_profiled, engine)
    return render_parts(parts, whole, by_process, phase, options or TableOptions()), whole
