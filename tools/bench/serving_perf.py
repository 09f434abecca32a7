"""One busy package loop in one process, for a sampling profiler: where a traced server's CPU goes, by thread.

    perf record -D 35000 -e cpu-clock -F 1000 -g -o perf.data \\
        python tools/bench/serving_perf.py [--arm traced] [--threads 8] [--seconds 45]
    perf report -i perf.data --no-children --sort comm,dso --stdio -g none

The package and loop of tools/bench/bench_serving.py (its `--engines` stand-in engines with no host work,
`runner(x)` flat out on `--threads` threads), one arm for `--seconds`, then one line: runner calls/s and
CPU µs per runner call, serving threads / the rest of the process. perf's -D skips the start-up (loading
torch and the package: 20-35 s on a loaded 2-core VM), and follows every thread the loop starts (perf -p
would miss the threads made after it attached). The native writer thread is named `trt_trace-write`, so
`--sort comm` splits its CPU (its formatting and its write() calls) from the serving threads'. The trace
goes under TMPDIR (tmpfs or disk: what the write path costs on each).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serving import _specs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arm", choices=["untraced", "traced"], default="traced")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=45.0)
    ap.add_argument("--engines", type=int, default=14)
    args = ap.parse_args()

    import torch

    import trt_trace
    from trt_trace.standin import model

    runner = model.load_package(model.package_model(_specs(args.engines), torch.randn(8, 64)))
    x = torch.randn(8, 64)
    for _ in range(200):  # warm: first-call work, allocator pools
        runner(x)
    if args.arm == "traced":
        trt_trace.start(os.path.join(tempfile.mkdtemp(prefix="serving_perf."), "t.json"))
    stop = threading.Event()
    counts = [0] * args.threads
    cpu = [0.0] * args.threads

    def loop(i: int) -> None:
        c0 = time.thread_time()
        while not stop.is_set():
            runner(x)
            counts[i] += 1
        cpu[i] = time.thread_time() - c0

    workers = [threading.Thread(target=loop, args=(i,)) for i in range(args.threads)]
    process0, t0 = time.process_time(), time.perf_counter()
    for w in workers:
        w.start()
    time.sleep(args.seconds)
    stop.set()
    for w in workers:
        w.join()
    elapsed, process = time.perf_counter() - t0, time.process_time() - process0
    if args.arm == "traced":
        trt_trace.stop()
    calls = max(sum(counts), 1)
    print(f"{args.arm}, {args.threads} thread(s): {calls / elapsed:.0f} runner calls/s, CPU µs per runner call "
          f"{sum(cpu) / calls * 1e6:.1f} serving / {(process - sum(cpu)) / calls * 1e6:.1f} rest")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
