"""Reading big traces: speed and peak memory of `trt-trace summary`, `diff`, `merge` (and `slice`,
`export`) on generated traces of N calls in both formats.

    python tools/bench/bench_readers.py --calls 1000000 6000000 [--dir /tmp/bench_readers] [--keep]

The traces are written by trt_trace's own writers (writers/chrome_json.py, writers/perfetto_trace.py:
the C++ encoders) from synthetic drained batches, as a session writes them: 8 engines called from
4 threads, each call its 4 host phases, the CUDA engines' calls (half of them) a GPU span and a
launch flow; durations drawn around each engine's own mean with a long tail; the metadata a
session writes (start, end with "ended": "closed"). Each command runs as the installed CLI in a
fresh process; its wall time and peak RSS (wait4's ru_maxrss) are printed, with events/s =
slices read / wall time (the same events the writers count: one per record, flows not counted).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.schema.records import RECORD_DTYPE

ENGINES = 8
THREADS = 4
BATCH_CALLS = 13_000  # calls per drained batch (BATCH_RECORDS-sized batches of about 65k records)
NAMES = ["", *[f"_run_on_acc_{i}_engine" for i in range(ENGINES)]]


def batch(first: int, n: int, rng: np.random.Generator, t0: int) -> np.ndarray:
    """n calls from first on: engine k's calls last about (k + 1) * 40 µs, GPU spans on engines 1, 3, 5, 7."""
    calls = np.arange(first, first + n, dtype=np.int64)
    engine = 1 + calls % ENGINES
    thread = 1000 + calls % THREADS
    mean = engine * 40_000
    total = np.maximum((mean * rng.lognormal(0.0, 0.15, n)).astype(np.int64), 4_000)
    ws = (total * rng.uniform(0.01, 0.03, n)).astype(np.int64) + 1
    inp = (total * rng.uniform(0.05, 0.15, n)).astype(np.int64) + 1
    out = (total * rng.uniform(0.02, 0.06, n)).astype(np.int64) + 1
    begin = t0 + calls * 25_000 // THREADS * THREADS + (calls % THREADS) * 3_000
    cuda = engine % 2 == 0
    n_gpu = int(cuda.sum())
    rec = np.zeros(5 * n + n_gpu, dtype=RECORD_DTYPE)
    bounds = [begin, begin + ws, begin + ws + inp, begin + ws + inp + out, begin + total]
    for p in range(5):
        r = rec[p: 5 * n: 5]
        r["phase"] = p
        r["call_id"] = calls + 1
        r["engine_id"] = engine
        r["thread_id"] = thread
        r["device"] = np.where(cuda, 0, 0xFFFF)
        r["begin_ns"] = begin if p == 0 else bounds[p - 1]
        r["end_ns"] = begin + total if p == 0 else bounds[p]
    g = rec[5 * n:]
    g["phase"] = 5
    g["call_id"] = calls[cuda] + 1
    g["engine_id"] = engine[cuda]
    g["thread_id"] = thread[cuda]
    g["device"] = 0
    g["stream"] = 7
    gb = bounds[3][cuda] + 2_000
    g["begin_ns"] = gb
    g["end_ns"] = gb + (mean[cuda] * 3 * rng.lognormal(0.0, 0.1, n_gpu)).astype(np.int64)
    return rec


def generate(path: Path, calls: int, seed: int) -> float:
    cls = PerfettoTraceWriter if path.suffix == ".pftrace" else ChromeJsonWriter
    w = cls(str(path), lambda: NAMES)
    t0 = 3_600 * 10**9
    w.begin("bench_readers.py", {"tool": "trt_trace", "pid": 4242, "host": "bench", "monotonic_ns": t0,
                                 "wall_ns": 1_750_000_000 * 10**9, "gpu_timing": True, "gpu_every": 1})
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    records = 0
    for first in range(0, calls, BATCH_CALLS):
        b = batch(first, min(BATCH_CALLS, calls - first), rng, t0)
        w.write(b)
        records += len(b)
    w.finish({"monotonic_ns": t0 + calls * 25_000 + 10**9, "wall_ns": 1_750_000_000 * 10**9 + calls * 25_000 + 10**9,
              "records_written": records, "dropped_events": 0, "threads": [], "ended": "closed"})
    return time.perf_counter() - start


def measured(cmd: list[str]) -> tuple[float, float, float, str]:
    """(wall s, peak RSS MiB, CPU s (user + system, all threads), output) of cmd, run by a child
    process of its own so that ru_maxrss is this command's alone."""
    code = ("import os, resource, subprocess, sys, time; t = time.perf_counter(); "
            "p = subprocess.run(sys.argv[1:], capture_output=True); w = time.perf_counter() - t; "
            "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            "sys.stdout.write(f'{w} {u.ru_maxrss} {u.ru_utime + u.ru_stime} {p.returncode}\\n'); "
            "sys.stderr.buffer.write(p.stdout[-400:] + p.stderr[-800:])")
    proc = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True)
    wall, rss_kib, cpu, rc = proc.stdout.split()
    if int(rc) not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({rc}): {proc.stderr}")
    return float(wall), int(rss_kib) / 1024, float(cpu), proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--dir", default="/tmp/bench_readers")
    ap.add_argument("--keep", action="store_true", help="keep the generated traces (and reuse them)")
    ap.add_argument("--formats", nargs="+", default=["json", "pftrace"])
    ap.add_argument("--commands", nargs="+", help="only these (summary, diff, merge (both outputs), export, slice)")
    args = ap.parse_args()
    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    cli = str(Path(sys.executable).parent / "trt-trace")
    print(f"{os.cpu_count()} CPUs; {ENGINES} engines, {THREADS} threads, GPU spans on half the engines")
    for calls in args.calls:
        for fmt in args.formats:
            path = d / f"t{calls}.{fmt}"
            if not (args.keep and path.exists()):
                secs = generate(path, calls, seed=calls)
                mib = path.stat().st_size / 2**20
                print(f"generated {path.name}: {calls:,} calls, {mib:,.0f} MiB in {secs:.1f} s")
            other = d / f"u{calls}.{fmt}"
            if not (args.keep and other.exists()):
                generate(other, calls, seed=calls + 1)
            slices = calls * 5 + calls // 2
            size = path.stat().st_size
            for name, cmd in (
                ("summary", [cli, "summary", str(path)]),
                ("summary --phase gpu", [cli, "summary", str(path), "--phase", "gpu"]),
                ("diff", [cli, "diff", str(path), str(other)]),
                ("merge", [cli, "merge", str(path), "-o", str(d / "merged.json")]),
                ("merge -o .pftrace", [cli, "merge", str(path), "-o", str(d / "merged.pftrace")]),
                ("export", [cli, "export", str(path), str(d / "calls.parquet")]),
                ("slice --from 1 --to 2", [cli, "slice", str(path), "-o", str(d / "window.json"), "--from", "1",
                                           "--to", "2"]),
            ):
                if args.commands and name.split()[0] not in args.commands:
                    continue
                wall, rss, cpu, _ = measured(cmd)
                reads = 2 if name == "diff" else 1
                rate = (f"{slices * reads / wall / 1e6:5.2f} M events/s, {slices * reads / cpu / 1e6:5.2f} M per "
                        f"CPU-s, {size * reads / wall / 2**20:5.0f} MiB/s") if name.startswith(("summary", "diff")) \
                    else ""
                print(f"  {fmt:8s} {calls:>10,} calls  {name:22s} {wall:7.2f} s  CPU {cpu:7.2f} s  "
                      f"peak RSS {rss:5.0f} MiB  {rate}", flush=True)
            for extra in (d / "merged.json", d / "merged.pftrace", d / "calls.parquet", d / "window.json"):
                extra.unlink(missing_ok=True)
            if not args.keep:
                path.unlink()
                other.unlink()
    if not args.keep:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
