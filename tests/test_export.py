"""`trt-trace export TRACE calls.parquet`: one row per whole call, read back by DuckDB (the README's
query over several ranks' files, checked against `trt-trace summary` of the merged ranks) and by
pyarrow, with every column as the trace has it."""

from __future__ import annotations

import json
import subprocess

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import trt_trace_cli
from synthetic_traces import call_rows, engines_trace, write_trace

from trt_trace.analysis.merge import merge

CLI = trt_trace_cli()


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_duckdb_over_the_ranks_agrees_with_summary(tmp_path):
    """Per engine 101 calls over two ranks (50 + 51): DuckDB's quantile_cont at 0.5 and 0.99 then falls
    on a call (positions 50 and 99 of 0..100), the order statistic the summary's percentiles are."""
    rng = np.random.default_rng(3)
    ranks = []
    for rank, n in ((0, 50), (1, 51)):
        engines = {"e_small": rng.integers(20_000, 90_000, n), "e_big": rng.integers(400_000, 2_000_000, n)}
        ranks.append(engines_trace(tmp_path / f"trace_{rank}.pftrace" if rank else tmp_path / f"trace_{rank}.json",
                                   engines, pid=100 + rank, rank=rank, world_size=2))
    for rank, path in enumerate(ranks):
        proc = cli("export", path.name, f"calls_{rank}.parquet", cwd=tmp_path)
        assert proc.returncode == 0 and proc.stdout == f"{100 if rank == 0 else 102} calls into calls_{rank}.parquet\n"
    merge([str(p) for p in ranks], str(tmp_path / "all.json"))
    summary = json.loads(cli("summary", str(tmp_path / "all.json"), "--json").stdout)
    rows = duckdb.sql(f"SELECT engine, quantile_cont(total_ns, 0.99) AS p99, quantile_cont(total_ns, 0.5) AS p50, "
                      f"count(*) AS calls, sum(total_ns) AS total FROM '{tmp_path}/calls_*.parquet' "
                      "GROUP BY engine ORDER BY engine").fetchall()
    expected = sorted((e["engine"], round(e["p99_ms"] * 1e6), round(e["p50_ms"] * 1e6), e["calls"],
                       round(e["total_ms"] * 1e6)) for e in summary["engines"])
    assert [(name, round(p99), round(p50), calls, int(total)) for name, p99, p50, calls, total in rows] == expected
    assert [r[3] for r in rows] == [101, 101]


def test_every_column_is_the_calls(tmp_path):
    rows = call_rows(1, 1, 10**9, [1_000, 2_000, 3_000, 40_000], device=0, gpu_ns=25_000)
    rows += call_rows(2, 1, 10**9 + 10**6, [1_000, 2_000, 0, 40_000], flags=1)  # failed, no outputs phase
    rows += call_rows(3, 2, 10**9 + 2 * 10**6, [500, 500, 500, 500])
    path = write_trace(tmp_path / "t.json", rows, ["", "conv", "fc"], end={}, rank=3)
    assert cli("export", str(path), str(tmp_path / "c.parquet")).returncode == 0
    read = pq.read_table(tmp_path / "c.parquet")
    times = read.column("time").cast(pa.int64()).to_pylist()
    table = read.drop(["time"]).to_pylist()
    assert [r["call_id"] for r in table] == [1, 2, 3]
    first, second, third = table
    assert first["engine"] == "conv" and first["rank"] == 3 and first["host"] == "h" and first["thread"] == 42
    assert (first["total_ns"], first["workspace_ns"], first["inputs_ns"], first["outputs_ns"], first["enqueue_ns"],
            first["gpu_ns"], first["caller_wait_ns"], first["device"]) == (46_000, 1_000, 2_000, 3_000, 40_000,
                                                                            25_000, None, 0)
    assert first["begin_ns"] == 10**9 and times[0] == 1_750_000_000 * 10**9 - 1 + 10**9  # wall = begin + anchor
    assert second["error"] and second["outputs_ns"] == 0 and second["gpu_ns"] is None and second["device"] is None
    assert third["engine"] == "fc" and not third["error"] and third["total_ns"] == 2_000


def test_each_flag_column_is_its_own_flag(tmp_path):
    """A plain call, a failed one, a nested one, a graph-captured one and a CUDA call: `error`, `nested`,
    `captured` (export) and `on_cuda` (a dataset) are each true on its own call only."""
    rows = []
    for call, kw in enumerate(({}, {"flags": 1}, {"flags": 2}, {"flags": 4}, {"device": 0}), start=1):
        rows += call_rows(call, 1, 10**9 + call * 10**6, [1_000, 2_000, 3_000, 40_000], **kw)
    path = write_trace(tmp_path / "t.json", rows, ["", "conv"], end={})
    assert cli("export", str(path), str(tmp_path / "c.parquet")).returncode == 0
    table = pq.read_table(tmp_path / "c.parquet").drop(["time"]).to_pylist()
    assert [r["call_id"] for r in table] == [1, 2, 3, 4, 5]
    assert [[r[k] for r in table] for k in ("error", "nested", "captured")] == [
        [False, True, False, False, False], [False, False, True, False, False], [False, False, False, True, False]]
    assert cli("export", str(path), "--dataset", str(tmp_path / "ds")).returncode == 0
    dataset = pq.read_table(next((tmp_path / "ds").rglob("*.parquet")), columns=["call_id", "on_cuda"]).to_pylist()
    assert [(r["call_id"], r["on_cuda"]) for r in dataset] == [(1, False), (2, False), (3, False), (4, False),
                                                                (5, True)]


@pytest.mark.parametrize("case", ["missing", "directory", "no dir", "not a trace"])
def test_bad_export_is_one_line(tmp_path, case):
    good = write_trace(tmp_path / "t.json", call_rows(1, 1, 10**9, [1, 1, 1, 1]), ["", "e"], end={})
    (tmp_path / "x.json").write_text("hello")
    args = {"missing": [str(tmp_path / "nope.json"), str(tmp_path / "c.parquet")],
            "directory": [str(good), str(tmp_path)],
            "no dir": [str(good), str(tmp_path / "no" / "c.parquet")],
            "not a trace": [str(tmp_path / "x.json"), str(tmp_path / "c.parquet")]}[case]
    proc = cli("export", *args)
    assert proc.returncode == 1 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("trt-trace export: ") and not (tmp_path / "c.parquet").exists()
