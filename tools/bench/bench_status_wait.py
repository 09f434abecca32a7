"""How long a Python call of the writer's status waits while the writer thread drains a large batch (issue 37).

    python tools/bench/bench_status_wait.py [--runs 5] [--calls 60000] [--seconds 0.5]

Each run: a session with a ring big enough for --calls calls of one stand-in engine, the writer held while the
calls are made (so that its next drain is one batch of 5 records per call), then let go; for --seconds the main
thread calls `ops.writer_status()` back to back while the writer thread drains that batch. No other Python
thread runs, so a long call is the op waiting for the writer (or the machine's scheduling), never the GIL. Prints
each run's number of calls and its longest, then one JSON line. Before the writer published its status (main
before c10efc1) the longest call was the batch's whole length.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time


def run_once(path: str, calls: int, seconds: float) -> tuple[int, float, float]:
    import torch

    import trt_trace
    from trt_trace import standin
    from trt_trace.native import ops

    engine = standin.make_engine("status_probe")
    x = [torch.ones(8)]
    session = trt_trace.start(path, buffer_events=max(1 << 16, 8 * calls))
    with session.drainer.held():
        for _ in range(calls):
            torch.ops.tensorrt.execute_engine(x, engine)
        released = time.perf_counter()
    waits: list[float] = []
    while time.perf_counter() - released < seconds:
        t0 = time.perf_counter()
        ops.writer_status()
        waits.append(time.perf_counter() - t0)
    trt_trace.stop()
    return len(waits), max(waits), statistics.median(waits)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=60000)
    ap.add_argument("--seconds", type=float, default=0.5)
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="bench_status_wait.")
    print(f"machine: nproc {os.cpu_count()}, load average {os.getloadavg()[0]:.2f} at the start")
    longest: list[float] = []
    for run in range(args.runs):
        path = os.path.join(d, f"run{run}.json")
        n, worst, median = run_once(path, args.calls, args.seconds)
        os.remove(path)
        longest.append(worst)
        print(f"run {run}: {n} status calls in {args.seconds} s while {5 * args.calls} records drained; "
              f"longest {worst * 1e3:.2f} ms, median {median * 1e6:.1f} µs")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    print(json.dumps({"longest_ms": [round(w * 1e3, 3) for w in longest], "calls": args.calls}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
