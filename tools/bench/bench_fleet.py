"""A fleet's table three ways: `export --dataset` + `summary DIR` on DuckDB, the same on Spark (local mode,
`--engine spark`), and `merge` + `summary`, on N ranks' traces of M calls each: wall time and peak memory of
each step, and whether the tables agree.

    python tools/bench/bench_fleet.py [--ranks 8 --calls 20000] [--dir /tmp/bench_fleet] [--keep] [--no-spark]
    python tools/bench/bench_fleet.py --ranks 64 --calls 100000      # the issue's size

The traces are Perfetto files written by trt_trace's own writer from bench_readers.py's synthetic
batches (8 engines, 4 threads, GPU spans on half of the engines), one per rank with its rank, its own
pid and a host of its own per 8 ranks (so the clocks are aligned across hosts). Each command runs as
the installed CLI in a fresh process. Memory is the peak of the sum of the RSS of the command's process tree,
sampled every 20 ms (Spark's JVM is a child of the CLI's Python, and it may outlive its parent's wait4, so
ru_maxrss alone would miss it); "largest" is the largest single process's peak (wait4's ru_maxrss where the
process was reaped, else the samples'). CPU: user + system of the tree (wait4's, or the samples' where larger)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_readers import BATCH_CALLS, NAMES, batch  # noqa: E402  (a script beside this one)

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


def _tree_sample(root: int) -> dict[int, tuple[int, int]]:
    """{pid: (RSS bytes, CPU ticks)} of `root` and its descendants, from /proc."""
    parents: dict[int, int] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        stats[int(entry)] = fields
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    page = os.sysconf("SC_PAGE_SIZE")
    # stat fields after the name: state ppid ... utime (index 11) stime (12) ... rss (21), in pages
    return {pid: (int(stats[pid][21]) * page, int(stats[pid][11]) + int(stats[pid][12]))
            for pid in tree if pid in stats}


# The command's own child process: its RUSAGE_CHILDREN is the command's tree alone (what its processes reaped).
_WRAPPER = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "print(u.ru_maxrss, u.ru_utime + u.ru_stime, p.returncode, file=sys.stderr)")


def measured_tree(cmd: list[str]) -> tuple[float, float, float, float]:
    """(wall s, peak RSS MiB of the process tree, largest process's peak MiB, CPU s) of cmd."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, *cmd], stdout=out, stderr=err)
        peak = largest = 0
        ticks: dict[int, int] = {}
        while proc.poll() is None:
            sample = _tree_sample(proc.pid)
            sample.pop(proc.pid, None)  # the wrapper's own
            peak = max(peak, sum(rss for rss, _ in sample.values()))
            largest = max([largest, *(rss for rss, _ in sample.values())])
            ticks.update({pid: cpu for pid, (_, cpu) in sample.items()})
            time.sleep(0.02)
        wall = time.perf_counter() - t
        err.seek(0)
        lines = err.read().decode(errors="replace").splitlines()
        maxrss_kib, cpu, rc = lines[-1].split()
        if proc.returncode != 0 or rc != "0":
            sys.exit(f"{' '.join(cmd)} failed ({rc}): {chr(10).join(lines[-20:])}")
    cpu_s = max(float(cpu), sum(ticks.values()) / os.sysconf("SC_CLK_TCK"))
    largest = max(largest, int(maxrss_kib) * 1024)
    return wall, peak / 2**20, largest / 2**20, cpu_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=8)
    ap.add_argument("--calls", type=int, default=20_000, help="calls per rank")
    ap.add_argument("--dir", default="/tmp/bench_fleet")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces (and reuse them)")
    ap.add_argument("--no-spark", action="store_true", help="leave out the Spark steps (pyspark and Java needed)")
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
        *([] if args.no_spark else [
            ("summary DIR --engine spark", [cli, "summary", str(d / "ds"), "--json", "--engine", "spark"]),
            ("  --by-rank", [cli, "summary", str(d / "ds"), "--by-rank", "--json", "--engine", "spark"])]),
        ("merge -o .json", [cli, "merge", *map(str, traces), "-o", str(d / "all.json")]),
        ("summary merged", [cli, "summary", str(d / "all.json"), "--json"]),
        ("summary merged --by-rank", [cli, "summary", str(d / "all.json"), "--by-rank", "--json"]),
    ]
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the start")
    print(f"{'step':28} {'wall s':>8} {'peak RSS MiB':>13} {'largest MiB':>12} {'CPU s':>8}")
    for name, cmd in steps:
        wall, rss, largest, cpu = measured_tree(cmd)
        print(f"{name:28} {wall:8.2f} {rss:13.0f} {largest:12.0f} {cpu:8.2f}", flush=True)
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end")
    ds_mib = sum(p.stat().st_size for p in (d / "ds").rglob("*.parquet")) / 2**20
    print(f"dataset: {ds_mib:,.1f} MiB of Parquet in {sum(1 for _ in (d / 'ds').rglob('*.parquet'))} partitions")
    docs = []
    tables = [[str(d / "all.json")], [str(d / "ds")]]
    if not args.no_spark:
        tables.append([str(d / "ds"), "--engine", "spark"])
    for table in tables:  # again, for the whole output
        doc = json.loads(subprocess.run([cli, "summary", *table, "--json"], capture_output=True, text=True,
                                        check=True).stdout)
        for row in [*doc["engines"], doc["all"]]:
            row.pop("stddev_ms")  # double precision in SQL: the same to the ns, not always to the last bit
        docs.append(doc)
    print(f"tables agree with merge + summary (stddev aside): DuckDB {docs[1] == docs[0]}"
          + ("" if args.no_spark else f", Spark {docs[2] == docs[0]}"))
    if not args.keep:
        shutil.rmtree(d)


if __name__ == "__main__":
    main()
