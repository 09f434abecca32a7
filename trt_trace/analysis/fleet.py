"""A fleet's calls as one table: `trt-trace export TRACE... --dataset DIR` writes a Hive-partitioned
Parquet dataset (DIR/host=H/rank=R/pid=P/part-N.parquet, one folder per process); `trt-trace summary DIR`
computes the per-engine table of it in SQL, on DuckDB or Spark (fleet_summary.py).

Rows: export's columns (export.py) less host, rank and pid, which are the partition's (Spark and DuckDB
refuse a column that is in both), plus engine_id (two engines of one process may share a name), on_cuda
(a CUDA call: sampled-out GPU timing is counted from it) and profiled (the call ran under per-layer
profiling: the trace holds its layer slices; `summary` leaves such calls out by default). What a process
is, beyond its calls, is in each file's Parquet key-value metadata under "trt_trace" (JSON): its label,
rank, host and OS pid, its clock anchors (pairs of CLOCK_MONOTONIC and wall-clock ns), its first slice,
GPU sampling, drops and how its trace ended."""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np
import orjson

from ..io.readers import TraceFileError, TraceInfo, Window
from ..io.readers.columns import CALL_ON_CUDA
from ..io.readers.end_notes import end_notes
from ..io.readers.trace_info import CUT_SHORT, bad_input_rc, ended_of, is_end_metadata
from ..schema.trace_format import HOST_PHASES
from .export import ExportError, call_columns, call_schema, wall_offset
from .trace_summary import _SplitRows, gpu_every_of, read_split

KEY = "trt_trace"  # the key-value metadata of every file of the dataset
FORMAT = 2  # 2: the column `profiled` (format 1 had no per-call mark of calls under per-layer profiling)
PARTITIONS = ("host", "rank", "pid")
HIVE_TYPES = "{'host': 'VARCHAR', 'rank': 'INTEGER', 'pid': 'BIGINT'}"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # Hive's (and Spark's, DuckDB's) name of a null value
# The columns the summary reads; a partition without one of them is not of this dataset.
NEEDED = ("begin_ns", "engine", "engine_id", "call_id", "total_ns", *(f"{p}_ns" for p in HOST_PHASES), "gpu_ns",
          "error", "captured", "on_cuda", "profiled")


def _time_type() -> Any:
    import pyarrow as pa  # heavy and optional: only export pays for it

    return pa.timestamp("us", tz="UTC")


def dataset_schema() -> Any:
    import pyarrow as pa  # heavy and optional: only export pays for it

    base = call_schema()
    # The wall-clock time in µs: Spark reads no Parquet timestamp in ns (begin_ns keeps the ns).
    fields = [pa.field("time", _time_type()) if f.name == "time" else f for f in base if f.name not in PARTITIONS]
    fields.insert([f.name for f in fields].index("engine") + 1, pa.field("engine_id", pa.int32()))
    fields.append(pa.field("on_cuda", pa.bool_()))
    fields.append(pa.field("profiled", pa.bool_()))
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

    def add(self, calls: np.ndarray, info: TraceInfo, profiled: np.ndarray) -> None:
        """A chunk of calls; profiled: the mask of those that ran under per-layer profiling."""
        import pyarrow as pa  # heavy and optional: only export pays for it

        pids = calls["pid"]
        for pid in np.unique(pids).tolist():
            of_pid = pids == pid
            mine = calls[of_pid]
            cols = call_columns(mine, info, self._proc)
            for name in PARTITIONS:
                del cols[name]
            cols["time"] = cols["time"].cast(_time_type(), safe=False)  # truncated to the µs
            cols["engine_id"] = pa.array(mine["engine_id"].astype(np.int32), type=pa.int32())
            cols["on_cuda"] = pa.array((mine["flags"] & CALL_ON_CUDA).astype(bool))
            cols["profiled"] = pa.array(profiled[of_pid])
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


class _Marked(_SplitRows):
    """The calls of one trace on their way into the dataset, each marked as run under per-layer profiling
    or not (the summary's reading: read_split in trace_summary.py, which reads the trace again where a
    profiled call came before its layer slices; the first writer's files are then dropped)."""

    def __init__(self, writer: _DatasetWriter, known: np.ndarray | None) -> None:
        super().__init__((), known)
        self.writer = writer

    def marked(self, calls: np.ndarray, info: TraceInfo, profiled: np.ndarray) -> None:
        self.writer.add(calls, info, profiled)

    def discard(self) -> None:
        self.writer.abandon()


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
        except OSError as exc:
            raise ExportError(f"cannot write {root}: {exc.strerror or exc}") from None
        writers: list[_DatasetWriter] = []

        def make(known: np.ndarray | None, path: str = path, writers: list[_DatasetWriter] = writers) -> _Marked:
            writers.append(_DatasetWriter(root, path))
            return _Marked(writers[-1], known)

        try:
            marked, read = read_split(path, make, window)
            writer = marked.writer
            writer.finish(read)
        except (TraceFileError, OSError) as exc:
            for w in writers:
                w.abandon()
            if isinstance(exc, TraceFileError):
                raise ExportError(str(exc), rc=bad_input_rc(exc)) from None
            raise ExportError(f"cannot write {root}: {exc.strerror or exc}") from None
        except BaseException:
            for w in writers:
                w.abandon()
            raise
        rows += sum(p.rows for p in writer.parts.values())
        processes += len(writer.parts)
        notes += [f"{path}: {n}" for n in end_notes(read)]
    return rows, processes, notes
