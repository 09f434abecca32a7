"""A fleet's table two ways: `export --dataset` + `summary DIR` (DuckDB) vs `merge` + `summary`, on
N ranks' traces of M calls each: wall time and peak RSS of each step, and whether the tables agree.

    python tools/bench/bench_fleet.py [--ranks 8 --calls 20000] [--dir /tmp/bench_fleet] [--keep]
    python tools/bench/bench_fleet.py --ranks 64 --calls 100000      # the issue's size

The traces are Perfetto files written by trt_trace's own writer from bench_readers.py's synthetic
batches (8 engines, 4 threads, GPU spans on half of the engines), one per rank with its rank, its own
pid and a host of its own per 8 ranks (so the clocks are aligned across hosts). Each command runs as
the installed CLI in a fresh process (bench_readers.measured: wait4's ru_maxrss)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_readers import BATCH_CALLS, NAMES, batch, measured  # noqa: E402  (a script beside this one)

from trt_trace.io.writers import PerfettoTraceWriter  # noqa: E402

WALL0 = 1_750_000_000 * 10**9


def generate(path: Path, rank: int, ranks: int, calls: int) -> None:
    w = PerfettoTraceWriter(str(path), lambda: NAMES)
    t0 = 3_600 * 10**9 + (rank // 8) * 7_000_000_000  # each host booted at another time
    wall = WALL0 - (rank // 8) * 7_000_000_000 + rank * 1_000
    w.begin("bench_fleet.py", {"tool": "trt_trace", "pid": 10_000 + rank, "host": f"node{rank // 8}",
                               "rank": rank, "world_size": ranks, "program": "serve.py", "monotonic_ns": t0,
                               "wall_ns": wall, "gpu_timing": True, "gpu_every": 1})
    rng = np.random.default_rng(rank)
    records = 0
    for first in range(0, calls, BATCH_CALLS):
        b = batch(first, min(BATCH_CALLS, calls - first), rng, t0)
        w.write(b)
        records += len(b)
    span = calls * 25_000 + 10**9
    w.finish({"monotonic_ns": t0 + span, "wall_ns": wall + span, "records_written": records, "dropped_events": 0,
              "threads": [], "ended": "closed"})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--calls", type=int, default=20_000, help="calls per rank")
    ap.add_argument("--dir", default="/tmp/bench_fleet")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces (and reuse them)")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    cli = str(Path(sys.executable).parent / "trt-trace")
    traces = [d / f"rank_{r}.pftrace" for r in range(args.ranks)]
    t = time.perf_counter()
    for r, path in enumerate(traces):
        if not (args.keep and path.exists()):
            generate(path, r, args.ranks, args.calls)
    size = sum(p.stat().st_size for p in traces) / 2**20
    print(f"{os.cpu_count()} CPUs; {args.ranks} ranks x {args.calls:,} calls = {args.ranks * args.calls:,} calls "
          f"({size:,.0f} MiB of .pftrace, made in {time.perf_counter() - t:.0f} s)")
    shutil.rmtree(d / "ds", ignore_errors=True)
    steps = [
        ("export --dataset", [cli, "export", *map(str, traces), "--dataset", str(d / "ds")]),
        ("summary DIR (DuckDB)", [cli, "summary", str(d / "ds"), "--json"]),
        ("summary DIR --by-rank", [cli, "summary", str(d / "ds"), "--by-rank", "--json"]),
        ("merge -o .json", [cli, "merge", *map(str, traces), "-o", str(d / "all.json")]),
        ("summary merged", [cli, "summary", str(d / "all.json"), "--json"]),
        ("summary merged --by-rank", [cli, "summary", str(d / "all.json"), "--by-rank", "--json"]),
    ]
    print(f"{'step':28} {'wall s':>8} {'peak RSS MiB':>13} {'CPU s':>8}")
    for name, cmd in steps:
        wall, rss, cpu, _ = measured(cmd)
        print(f"{name:28} {wall:8.2f} {rss:13.0f} {cpu:8.2f}")
    ds_mib = sum(p.stat().st_size for p in (d / "ds").rglob("*.parquet")) / 2**20
    print(f"dataset: {ds_mib:,.1f} MiB of Parquet in {sum(1 for _ in (d / 'ds').rglob('*.parquet'))} partitions")
    docs = []
    for table in (d / "ds", d / "all.json"):  # again, whole: measured() keeps only the output's tail
        doc = json.loads(subprocess.run([cli, "summary", str(table), "--json"], capture_output=True, text=True,
                                        check=True).stdout)
        for row in [*doc["engines"], doc["all"]]:
            row.pop("stddev_ms")  # double precision on DuckDB: the same to the ns, not always to the last bit
        docs.append(doc)
    print(f"tables agree (stddev aside): {docs[0] == docs[1]}")
    if not args.keep:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
