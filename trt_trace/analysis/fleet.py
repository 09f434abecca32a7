"""A fleet's calls as one table: `trt-trace export TRACE... --dataset DIR` writes a Hive-partitioned
Parquet dataset (DIR/host=H/rank=R/pid=P/part-N.parquet, one folder per process), and `trt-trace
summary DIR` computes the per-engine table of it in SQL on DuckDB (embedded).

Rows: export's columns (export.py) less host, rank and pid, which are the partition's (Spark and DuckDB
refuse a column that is in both), plus engine_id (two engines of one process may share a name) and
on_cuda (a CUDA call: sampled-out GPU timing is counted from it). What a process is, beyond its calls,
is in each file's Parquet key-value metadata under "trt_trace" (JSON): its label, rank, host and OS pid,
its clock anchors (pairs of CLOCK_MONOTONIC and wall-clock ns), its first slice, GPU sampling, drops and
how its trace ended. Each host can export its own traces into a shared folder: the summary aligns the
hosts' clocks when it reads (as `trt-trace merge` does, from the same anchors), so `--from/--to` mean the
same calls as in the merged trace.

The summary's figures are those of `merge` + `summary` of the same traces: the sums and counts exactly,
p50/p99 exactly (DuckDB's quantile_disc is the ceil(p n / 100)-th smallest value, the definition of
value_counts.py), min/max/mean exactly (the mean as the exact sum over the count); the standard deviation
is DuckDB's stddev_samp in double precision, which can differ from the summary's in the last digit."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from statistics import fmean
from typing import Any

import numpy as np
import orjson

from ..io.readers import TraceFileError, TraceInfo, Window, read_calls
from ..io.readers.columns import CALL_ON_CUDA
from ..io.readers.end_notes import end_notes
from ..io.readers.trace_info import CUT_SHORT, bad_input_rc, ended_of, is_end_metadata
from ..schema.records import STATS_COLUMNS
from ..schema.trace_format import DURATIONS, HOST_PHASES
from .export import ExportError, call_columns, call_schema, wall_offset
from .summary_table import TableOptions
from .trace_summary import TraceSummary, gpu_every_of, render_parts

KEY = "trt_trace"  # the key-value metadata of every file of the dataset
FORMAT = 1
PARTITIONS = ("host", "rank", "pid")
HIVE_TYPES = "{'host': 'VARCHAR', 'rank': 'INTEGER', 'pid': 'BIGINT'}"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Hive's (and Spark's, DuckDB's) name of a null value
# The columns the summary reads; a partition without one of them is not of this dataset.
NEEDED = ("begin_ns", "engine", "engine_id", "call_id", "total_ns", *(f"{p}_ns" for p in HOST_PHASES), "gpu_ns",
          "error", "captured", "on_cuda")


def dataset_schema() -> Any:
    import pyarrow as pa  # heavy and optional: only export pays for it

    base = call_schema()
    fields = [f for f in base if f.name not in PARTITIONS]
    fields.insert([f.name for f in fields].index("engine") + 1, pa.field("engine_id", pa.int32()))
    fields.append(pa.field("on_cuda", pa.bool_()))
    return pa.schema(fields)


def _part_value(value: Any) -> str:
    """A partition folder's value: Hive's null name for none; characters a path cannot hold, %-escaped."""
    if value is None or value == "":
        return NULL_PARTITION
    return re.sub(r"[^A-Za-z0-9._-]", lambda m: "".join(f"%{b:02X}" for b in m.group().encode()), str(value))


def _anchors(metas: list[dict[str, Any]]) -> list[list[int]]:
    out = []
    start = next((m for m in metas if m.get("tool") == "trt_trace"), None)
    ends = [m for m in metas if is_end_metadata(m) and "merged" not in m]
    for meta in ([start] if start else []) + ends[-1:]:
        mono, wall = meta.get("monotonic_ns"), meta.get("wall_ns")
        if isinstance(mono, int) and isinstance(wall, int) and not isinstance(mono, bool):
            out.append([mono, wall])
    return out


class _Part:
    """One process's file of the dataset, written to a hidden name and renamed when whole."""

    def __init__(self, root: str, host: str, rank: int | None, os_pid: int) -> None:
        import pyarrow.parquet as pq  # heavy and optional: only export pays for it

        self.folder = os.path.join(root, f"host={_part_value(host)}", f"rank={_part_value(rank)}",
                                   f"pid={os_pid}")
        os.makedirs(self.folder, exist_ok=True)
        n = 0
        while os.path.exists(os.path.join(self.folder, f"part-{n}.parquet")) or \
                os.path.exists(os.path.join(self.folder, f".part-{n}.parquet.tmp")):
            n += 1
        self.path = os.path.join(self.folder, f"part-{n}.parquet")
        self.tmp = os.path.join(self.folder, f".part-{n}.parquet.tmp")
        self.writer = pq.ParquetWriter(self.tmp, dataset_schema(), compression="zstd")
        self.rows = 0


class _DatasetWriter:
    def __init__(self, root: str, source: str) -> None:
        self.root = root
        self.source = source
        self.parts: dict[int, _Part] = {}  # the file's pid -> its part
        self.schema = dataset_schema()

    def _who(self, info: TraceInfo, pid: int) -> tuple[str, int | None, int]:
        meta = info.process(pid).meta
        rank = meta.get("rank") if isinstance(meta.get("rank"), int) and not isinstance(meta.get("rank"), bool) \
            else None
        os_pid = meta.get("pid") if isinstance(meta.get("pid"), int) and not isinstance(meta.get("pid"), bool) else pid
        return str(meta.get("host") or ""), rank, int(os_pid) & 0xFFFFFFFF

    def part(self, info: TraceInfo, pid: int) -> _Part:
        part = self.parts.get(pid)
        if part is None:
            part = self.parts[pid] = _Part(self.root, *self._who(info, pid))
        return part

    def _proc(self, info: TraceInfo, pid: int) -> tuple[str, int | None, str, int | None]:
        p = info.process(pid)
        return (p.label or f"pid {pid}", None, "", wall_offset(p.metas[0] if p.metas else {}))

    def add(self, calls: np.ndarray, info: TraceInfo) -> None:
        import pyarrow as pa  # heavy and optional: only export pays for it

        pids = calls["pid"]
        for pid in np.unique(pids).tolist():
            mine = calls[pids == pid]
            cols = call_columns(mine, info, self._proc)
            for name in PARTITIONS:
                del cols[name]
            cols["engine_id"] = pa.array(mine["engine_id"].astype(np.int32), type=pa.int32())
            cols["on_cuda"] = pa.array((mine["flags"] & CALL_ON_CUDA).astype(bool))
            part = self.part(info, pid)
            part.writer.write_table(pa.table(cols, schema=self.schema))
            part.rows += len(mine)

    def finish(self, read: Any) -> None:
        """Every process of ours gets its part (one with no call too), with its facts, and is put in place."""
        info = read.info
        merged = info.merged is not None
        partial = read.partial_by_pid()
        notes = end_notes(read)
        for p in info.processes.values():
            if p.pid not in self.parts and not (p.metas or partial.get(p.pid)):
                continue  # another tool's process
            part = self.part(info, p.pid)
            meta = p.meta
            host, rank, os_pid = self._who(info, p.pid)
            threads = meta.get("threads", [])
            end = p.end_metadata
            facts = {
                "format": FORMAT, "source": os.path.abspath(self.source), "merged": merged,
                "label": p.label or f"pid {p.pid}", "host": host, "rank": rank, "os_pid": os_pid,
                "program": meta.get("program"), "world_size": meta.get("world_size"),
                "sort": [p.sort_index is None, p.sort_index or 0, p.order],
                "anchors": [] if merged else _anchors(p.metas),
                "origin_ns": info.origin_ns,
                "gpu_every": gpu_every_of(meta),
                "dropped": _int(meta.get("dropped_events")),
                "threads_with_drops": sum(1 for t in threads if isinstance(t, dict) and t.get("dropped"))
                if isinstance(threads, list) else 0,
                "partial_calls": partial.get(p.pid, 0),
                "ended": (ended_of(end) if end is not None else CUT_SHORT) if merged else info.ended,
                "malformed": info.malformed,
                "notes": notes,
            }
            part.writer.add_key_value_metadata({KEY: orjson.dumps(facts).decode()})
        for part in self.parts.values():
            part.writer.close()
            os.replace(part.tmp, part.path)

    def abandon(self) -> None:
        for part in self.parts.values():
            try:
                part.writer.close()
                os.unlink(part.tmp)
            except OSError:
                pass


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else 0


def export_dataset(paths: list[str], root: str, window: Window | None = None) -> tuple[int, int, list[str]]:
    """Writes the calls of every trace of `paths` (in `window`, each relative to its own trace's start)
    into the dataset at `root` (made where missing; other exports' parts are kept); returns (rows,
    processes, the traces' end notes)."""
    try:
        import pyarrow  # noqa: F401  (optional and heavy: found or not before any work, one line if not)
    except ImportError:
        raise ExportError("pyarrow is not installed; pip install pyarrow") from None
    if os.path.exists(root) and not os.path.isdir(root):
        raise ExportError(f"{root} is not a directory; give the dataset's folder")
    for path in paths:
        if not os.path.isfile(path):
            raise ExportError(f"{path}: no such file")
    parent = os.path.dirname(os.path.abspath(root))
    if not os.path.isdir(parent):
        raise ExportError(f"cannot write {root}: directory {parent} does not exist")
    rows = processes = 0
    notes: list[str] = []
    for path in paths:
        try:
            os.makedirs(root, exist_ok=True)
            writer = _DatasetWriter(root, path)
        except OSError as exc:
            raise ExportError(f"cannot write {root}: {exc.strerror or exc}") from None
        try:
            read = read_calls(path, writer.add, window=window)
            writer.finish(read)
        except (TraceFileError, OSError) as exc:
            writer.abandon()
            if isinstance(exc, TraceFileError):
                raise ExportError(str(exc), rc=bad_input_rc(exc)) from None
            raise ExportError(f"cannot write {root}: {exc.strerror or exc}") from None
        except BaseException:
            writer.abandon()
            raise
        rows += sum(p.rows for p in writer.parts.values())
        processes += len(writer.parts)
        notes += [f"{path}: {n}" for n in end_notes(read)]
    return rows, processes, notes


# -- the summary of a dataset, on DuckDB -----------------------------------------------------------------


class DatasetError(ValueError):
    """A folder that is not a dataset of this kind, or one the summary cannot read: one line."""


def is_dataset(path: str) -> bool:
    return os.path.isdir(path)


def _sql_list(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


class _Process:
    def __init__(self, folder: str, facts: list[dict[str, Any]]) -> None:
        first = facts[0]
        self.folder = folder
        self.facts = facts
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


def _processes(con: Any, glob: str, root: str) -> list[_Process]:
    try:
        kv = con.execute(f"SELECT file_name, key, value FROM parquet_kv_metadata('{glob}')").fetchall()
    except Exception as exc:  # noqa: BLE001  (duckdb's errors have no common base that says "not Parquet")
        raise DatasetError(f"{root}: not a trt_trace dataset ({str(exc).splitlines()[0]})") from None
    facts: dict[str, dict[str, Any]] = {}
    for file_name, key, value in kv:
        if bytes(key) == KEY.encode():
            try:
                facts[file_name] = orjson.loads(bytes(value))
            except orjson.JSONDecodeError:
                raise DatasetError(f"{file_name}: its trt_trace metadata is not JSON") from None
    files = sorted(r[0] for r in con.execute(f"SELECT file FROM glob('{glob}')").fetchall())
    missing = [f for f in files if f not in facts]
    if missing:
        raise DatasetError(f"{missing[0]}: not a part of a trt_trace dataset (no trt_trace metadata; written by "
                           f"`trt-trace export --dataset`)")
    by_folder: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        if facts[f].get("format") != FORMAT:
            raise DatasetError(f"{f}: a trt_trace dataset of format {facts[f].get('format')!r}; this trt-trace "
                               f"reads format {FORMAT}")
        by_folder.setdefault(os.path.dirname(f), []).append(facts[f])
    return sorted((_Process(folder, fs) for folder, fs in by_folder.items()), key=_Process.order)


def _check_columns(con: Any, glob: str) -> None:
    rows = con.execute(f"SELECT file_name, list(name) FROM parquet_schema('{glob}') GROUP BY file_name").fetchall()
    for file_name, names in sorted(rows):
        lacking = [c for c in NEEDED if c not in names]
        if lacking:
            raise DatasetError(f"{file_name}: a partition without the column {lacking[0]!r}; export it again with "
                               f"`trt-trace export --dataset`")


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


def _stat_sql(v: str) -> str:
    return (f"quantile_disc({v}, 0.5), quantile_disc({v}, 0.99), min({v}), max({v}), sum({v})::HUGEINT, "
            f"count({v}), stddev_samp({v})")


_SUMS = ("count(*), sum(error::INTEGER), sum(total_ns)::HUGEINT, " +
         ", ".join(f"sum({p}_ns)::HUGEINT" for p in HOST_PHASES) +
         ", coalesce(sum(gpu_ns), 0)::HUGEINT, count(gpu_ns), "
         "count(*) FILTER (WHERE gpu_ns IS NULL AND on_cuda AND NOT error AND NOT captured)")
_N_SUMS = len(STATS_COLUMNS)


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
    fixed = [_fixed(r[_N_SUMS:]) for r in rows]
    return TraceSummary(names=names, stats=stats, fixed=fixed, **kw)


def dataset_summaries(root: str, phase: str = "total", window: Window | None = None,
                      connect: Callable[[], Any] | None = None) -> tuple[list[TraceSummary], TraceSummary]:
    """(one summary per process, the summary of all of them) of the dataset at `root`, in SQL on DuckDB."""
    try:
        import duckdb  # heavy and optional: only a dataset's summary pays for it
    except ImportError:
        raise DatasetError("duckdb is not installed; pip install duckdb") from None
    if phase not in DURATIONS:
        raise DatasetError(f"unknown phase {phase!r}; use one of {', '.join(DURATIONS)}")
    if not os.path.isdir(root):
        raise DatasetError(f"{root}: no such directory")
    glob = os.path.join(os.path.abspath(root), "**", "*.parquet").replace("'", "''")
    con = connect() if connect else duckdb.connect()
    if not con.execute(f"SELECT count(*) FROM glob('{glob}')").fetchone()[0]:
        raise DatasetError(f"{root}: no Parquet files; not a trt_trace dataset (write one with "
                           f"`trt-trace export TRACE... --dataset {root}`)")
    processes = _processes(con, glob, root)
    _check_columns(con, glob)
    _align(processes)
    window = window or Window()
    if window.timed and any(p.merged for p in processes) and any(not p.merged for p in processes):
        raise DatasetError(f"{root}: --from/--to need one clock; the dataset mixes a merged trace's processes with "
                           f"per-process traces")
    con.execute("CREATE TEMP TABLE procs (folder VARCHAR, proc INTEGER, offset_ns BIGINT)")
    con.executemany("INSERT INTO procs VALUES (?, ?, ?)",
                    [[p.folder, i, p.offset_ns] for i, p in enumerate(processes)])
    where = []
    if window.engines is not None:
        where.append(f"engine IN ({_sql_list(sorted(window.engines))})")
    skip = ""
    if window.skip_first > 0:
        skip = (f"QUALIFY row_number() OVER (PARTITION BY proc, engine_id ORDER BY begin_ns, call_id) > "
                f"{int(window.skip_first)}")
    timed = ""
    if window.timed:
        lows = [p.origin_ns + p.offset_ns for p in processes if p.origin_ns is not None]
        origin = min(lows) if lows else 0
        conds = []
        if window.from_s is not None:
            conds.append(f"begin_ns + offset_ns >= {origin + round(window.from_s * 1e9)}")
        if window.to_s is not None:
            conds.append(f"begin_ns + offset_ns < {origin + round(window.to_s * 1e9)}")
        timed = "WHERE " + " AND ".join(conds)
    v = f"{phase}_ns"
    columns = ", ".join(dict.fromkeys(["engine", "engine_id", "begin_ns", "call_id", "error", "captured", "on_cuda",
                                       "total_ns", *(f"{p}_ns" for p in HOST_PHASES), "gpu_ns"]))
    source = (f"SELECT proc, offset_ns, {columns} FROM read_parquet('{glob}', hive_partitioning = true, "
              f"hive_types = {HIVE_TYPES}, filename = true) c JOIN procs ON procs.folder = "
              f"parse_dirpath(c.filename)" + (f" WHERE {' AND '.join(where)}" if where else "") + f" {skip}")
    try:
        con.execute(f"CREATE TEMP VIEW kept AS SELECT * FROM ({source}) {timed}")
        per = con.execute(f"SELECT proc, engine_id, any_value(engine), {_SUMS}, {_stat_sql(v)} FROM kept "
                          f"GROUP BY proc, engine_id ORDER BY proc, engine_id").fetchall()
    except duckdb.Error as exc:
        raise DatasetError(f"{root}: {str(exc).splitlines()[0]}") from None
    # The table of all processes: engines by name, the k-th engine of a name in each process in row (name, k).
    rows: dict[tuple[str, int], int] = {}
    mapping = []
    seen: dict[tuple[int, str], int] = {}
    for proc, engine_id, name, *_ in per:
        k = seen.get((proc, name), 0)
        seen[(proc, name)] = k + 1
        mapping.append([proc, engine_id, rows.setdefault((name, k), len(rows))])
    con.execute("CREATE TEMP TABLE rows_of (proc INTEGER, engine_id INTEGER, row_no INTEGER)")
    if mapping:
        con.executemany("INSERT INTO rows_of VALUES (?, ?, ?)", mapping)
    whole_rows = con.execute(f"SELECT row_no, {_SUMS}, {_stat_sql(v)} FROM kept JOIN rows_of USING (proc, engine_id) "
                             f"GROUP BY row_no ORDER BY row_no").fetchall()
    # Each process's figures over its engines and those over every call, in one pass.
    per_proc = {r[0]: r[1:] for r in con.execute(f"SELECT proc, {_stat_sql(v)} FROM kept "
                                                 f"GROUP BY GROUPING SETS ((proc), ())").fetchall()}
    overall = per_proc.pop(None, (None, None, None, None, None, 0, None))
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
                     malformed=max(_int(f.get("malformed")) for f in facts))
        if every == 1:
            s.stats[:, STATS_COLUMNS.index("gpu_sampled_out")] = 0
        s.fixed_all = _fixed(per_proc.get(i, (None, None, None, None, None, 0, None)))
        parts.append(s)
    if len(parts) == 1:
        whole = parts[0]
    else:
        whole = _summary([name for name, _ in rows], [r[1:] for r in whole_rows],
                         gpu_every=max((p.gpu_every for p in parts), default=1),
                         dropped=sum(p.dropped for p in parts),
                         threads_with_drops=sum(p.threads_with_drops for p in parts),
                         partial_calls=sum(p.partial_calls for p in parts),
                         malformed=max((p.malformed for p in parts), default=0),
                         ended=parts[0].ended if parts else CUT_SHORT)
        # The sums as aggregate_parts adds them: the parts' rows (sampled-out calls where a part sampled).
        whole.stats[:] = 0
        for part, rows_of_part in zip(parts, _rows_of(per, mapping, len(parts)), strict=True):
            for i, row in enumerate(rows_of_part):
                whole.stats[row] += part.stats[i]
        whole.fixed_all = _fixed(overall)
    notes = dict.fromkeys(n for p in processes for f in p.facts for n in f.get("notes", []))
    whole.notes = list(notes)
    return parts, whole


def _rows_of(per: list[tuple[Any, ...]], mapping: list[list[int]], n: int) -> list[list[int]]:
    """Per process, the whole table's row of each of its rows (in its rows' order)."""
    out: list[list[int]] = [[] for _ in range(n)]
    for (proc, _engine_id, row) in mapping:
        out[proc].append(row)
    return out


def dataset_summary_parts(root: str, by_process: bool = False, phase: str = "total", window: Window | None = None,
                          options: TableOptions | None = None) -> tuple[str, TraceSummary]:
    """summary_parts (trace_summary.py) of a dataset: the same tables, computed on DuckDB."""
    parts, whole = dataset_summaries(root, phase, window)
    return render_parts(parts, whole, by_process, phase, options or TableOptions()), whole
