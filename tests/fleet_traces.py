"""Shared by tests/test_fleet.py (DuckDB) and tests/test_fleet_spark.py (Spark): real traced runs of the
stand-in (three ranks at once, rank 2 writing Perfetto; ranks 0 and 2 with per-layer profiling of 3 calls
per engine, so each table has calls to leave out or keep), their merge, their dataset, and the check that
two JSON tables are the same."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import trt_trace_cli

from trt_trace.analysis.merge import merge

CLI = trt_trace_cli()
RANKS = 3
PROFILED_RANKS = (0, 2)

JOB = """
import os, torch
from trt_trace.standin import model
rank = int(os.environ["RANK"])
net = model.StandInModel(model.demo_specs(3 + rank % 2))
x = torch.randn(8, 64)
for i in range(30 + 7 * rank):
    net(x)
"""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def traced_fleet(work: Path) -> tuple[Path, list[Path], Path]:
    """Runs the ranks in `work`, merges their traces and exports them into work/ds: (work, traces, merged)."""
    (work / "job.py").write_text(JOB)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    procs = []
    traces = []
    for rank in range(RANKS):
        out = work / (f"trace_{rank}.pftrace" if rank == 2 else f"trace_{rank}.json")
        traces.append(out)
        env = {**base, "TRT_TRACE_OUT": str(out), "RANK": str(rank), "WORLD_SIZE": str(RANKS), "OMP_NUM_THREADS": "1"}
        if rank in PROFILED_RANKS:
            env["TRT_TRACE_LAYERS"] = "3"
        procs.append(subprocess.Popen([sys.executable, "job.py"], cwd=work, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
    merge([str(t) for t in traces], str(work / "all.json"))
    proc = cli("export", *map(str, traces), "--dataset", str(work / "ds"))
    assert proc.returncode == 0, proc.stderr
    return work, traces, work / "all.json"


def docs(text: str) -> list[dict]:
    out = orjson.loads(text)
    return out if isinstance(out, list) else [out]


def assert_same_tables(dataset_text: str, trace_text: str) -> None:
    """Equal JSON tables; the standard deviation (double precision in SQL) to the ns."""
    got, want = docs(dataset_text), docs(trace_text)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for rows in ((g["engines"], w["engines"]), ([g["all"]], [w["all"]])):
            for a, b in zip(*rows, strict=True):
                sa, sb = a.pop("stddev_ms"), b.pop("stddev_ms")
                assert (sa is None) == (sb is None) and (sa is None or abs(sa - sb) <= 1e-6), (sa, sb)
        assert g == w
