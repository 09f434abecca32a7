"""`trt-trace export TRACE calls.parquet`: one row per whole call, for DuckDB, Polars, Spark.

Streamed (trt_trace/io/readers): each chunk of calls becomes a Parquet row group as it is read. The
columns, in this order: time (UTC, from the trace's wall-clock anchors; null without them),
begin_ns (CLOCK_MONOTONIC), engine, process, pid, rank, host, thread, call_id, total_ns and the four
host phases' ns (0 where a phase was not written), gpu_ns and caller_wait_ns (null where the call
has none), device (null on the CPU), and the flags error, nested, captured. Plain Parquet types
(no unsigned integers: Spark has none)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

import numpy as np

from ..io.output_files import is_plain_or_new, output_problem, put_in_place
from ..io.readers import TraceFileError, TraceInfo, Window, read_calls
from ..io.readers.columns import CALL_CAPTURED, CALL_ERROR, CALL_NESTED, NO_SPAN
from ..io.readers.trace_info import bad_input_rc
from ..schema.trace_format import DURATIONS


class ExportError(ValueError):
    """One line; rc: the exit code it means (2: bad input, such as a file that is not a trace)."""

    def __init__(self, message: str, rc: int = 1) -> None:
        super().__init__(message)
        self.rc = rc


def call_schema() -> Any:
    import pyarrow as pa  # heavy and optional: only export pays for it

    return pa.schema([
        ("time", pa.timestamp("ns", tz="UTC")), ("begin_ns", pa.int64()), ("engine", pa.string()),
        ("process", pa.string()), ("pid", pa.int64()), ("rank", pa.int32()), ("host", pa.string()),
        ("thread", pa.int64()), ("call_id", pa.int64()),
        *((f"{d}_ns", pa.int64()) for d in DURATIONS[:-1]), ("gpu_ns", pa.int64()), ("caller_wait_ns", pa.int64()),
        ("device", pa.int32()), ("error", pa.bool_()), ("nested", pa.bool_()), ("captured", pa.bool_()),
    ])


def wall_offset(meta: dict[str, Any]) -> int | None:
    mono, wall = meta.get("monotonic_ns"), meta.get("wall_ns")
    if isinstance(mono, int) and isinstance(wall, int) and not isinstance(mono, bool):
        return wall - mono
    return None


class _Writer:
    def __init__(self, output: str) -> None:
        import pyarrow.parquet as pq  # heavy and optional: only export pays for it

        self.schema = call_schema()
        # Beside a plain target (renamed over it at the end); a device's or a pipe's in the temporary folder.
        if is_plain_or_new(output):
            self.tmp = output + ".part"
        else:
            fd, self.tmp = tempfile.mkstemp(prefix=".trt-trace-export-", suffix=".parquet")
            os.close(fd)
        self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")
        self.rows = 0
        self.procs: dict[int, tuple[str, int | None, str, int | None]] = {}

    def _proc(self, info: TraceInfo, pid: int) -> tuple[str, int | None, str, int | None]:
        p = info.process(pid)
        meta = p.meta
        rank = meta.get("rank") if isinstance(meta.get("rank"), int) else None
        return (p.label or f"pid {pid}", rank, str(meta.get("host") or ""), wall_offset(p.metas[0] if p.metas
                                                                                           else {}))

    def add(self, calls: np.ndarray, info: TraceInfo) -> None:
        import pyarrow as pa  # heavy and optional: only export pays for it

        self.writer.write_table(pa.table(call_columns(calls, info, self._proc), schema=self.schema))
        self.rows += len(calls)


def call_columns(calls: np.ndarray, info: TraceInfo, proc: Any) -> dict[str, Any]:
    """The columns of call_schema() of a chunk of calls, as pyarrow arrays; proc(info, pid): the process's
    (label, rank, host, wall - monotonic ns or None)."""
    import pyarrow as pa  # heavy and optional: only export pays for it

    pids = calls["pid"].astype(np.int64)
    eids = calls["engine_id"]
    procs = {pid: proc(info, pid) for pid in np.unique(pids).tolist()}
    labels = np.array([procs[p][0] for p in pids.tolist()], dtype=object)
    ranks = [procs[p][1] for p in pids.tolist()]
    hosts = np.array([procs[p][2] for p in pids.tolist()], dtype=object)
    offsets = np.array([procs[p][3] if procs[p][3] is not None else 0 for p in pids.tolist()], dtype=np.int64)
    has_wall = np.array([procs[p][3] is not None for p in pids.tolist()], dtype=bool)
    names = np.array([info.process(p).engines.get(e, f"engine_{e}") for p, e in
                      zip(pids.tolist(), eids.tolist(), strict=True)], dtype=object)
    ns = calls["ns"]
    gpu = ns[:, DURATIONS.index("gpu")]
    wait = calls["wait_ns"]
    flags = calls["flags"]
    device = calls["device"].astype(np.int32)
    cols = {
        "time": pa.array(calls["begin_ns"] + offsets, type=pa.timestamp("ns", tz="UTC"), mask=~has_wall),
        "begin_ns": pa.array(calls["begin_ns"], type=pa.int64()),
        "engine": pa.array(names, type=pa.string()),
        "process": pa.array(labels, type=pa.string()),
        "pid": pa.array(pids, type=pa.int64()),
        "rank": pa.array(ranks, type=pa.int32()),
        "host": pa.array(hosts, type=pa.string()),
        "thread": pa.array(calls["thread_id"].astype(np.int64), type=pa.int64()),
        "call_id": pa.array(calls["call_id"].astype(np.int64), type=pa.int64()),
    }
    for i, d in enumerate(DURATIONS[:-1]):
        cols[f"{d}_ns"] = pa.array(ns[:, i], type=pa.int64())
    cols["gpu_ns"] = pa.array(gpu, type=pa.int64(), mask=gpu == NO_SPAN)
    cols["caller_wait_ns"] = pa.array(wait, type=pa.int64(), mask=wait == NO_SPAN)
    cols["device"] = pa.array(device, type=pa.int32(), mask=device == 0xFFFF)
    cols["error"] = pa.array((flags & CALL_ERROR).astype(bool))
    cols["nested"] = pa.array((flags & CALL_NESTED).astype(bool))
    cols["captured"] = pa.array((flags & CALL_CAPTURED).astype(bool))
    return cols


def export_calls(path: str, output: str, window: Window | None = None) -> tuple[int, Any]:
    """Writes one Parquet row per whole call of `path` (in `window`) to `output`; returns (rows, the read)."""
    try:
        import pyarrow  # noqa: F401  (optional and heavy: found or not before any work, one line if not)
    except ImportError:
        raise ExportError("pyarrow is not installed; pip install pyarrow") from None
    directory = os.path.dirname(os.path.abspath(output))
    problem = output_problem(output, [path], (".parquet", ".pq"), "Parquet")
    if problem:
        raise ExportError(problem)
    if os.path.isdir(output):
        raise ExportError(f"{output} is a directory; give a file name such as {os.path.join(output, 'calls.parquet')}")
    if not os.path.isdir(directory):
        raise ExportError(f"cannot write {output}: directory {directory} does not exist")
    try:
        writer = _Writer(output)
    except OSError as exc:
        raise ExportError(f"cannot write {output}: {exc.strerror or exc}") from None
    try:
        read = read_calls(path, writer.add, window=window)
        writer.writer.close()
        put_in_place(writer.tmp, output)
    except (TraceFileError, OSError) as exc:
        writer.writer.close()
        try:
            os.unlink(writer.tmp)
        except OSError:
            pass
        if isinstance(exc, TraceFileError):
            raise ExportError(str(exc), rc=bad_input_rc(exc)) from None
        raise ExportError(f"cannot write {output}: {exc.strerror or exc}") from None
    except BaseException:
        writer.writer.close()
        try:
            os.unlink(writer.tmp)
        except OSError:
            pass
        raise
    return writer.rows, read
