"""How fast trt_trace.captures reads a torch.profiler capture, and in how much memory, against loading the
whole file with orjson (what a reader that is not streamed does before it can look at one event).

    .venv/bin/python tools/bench/bench_captures.py --calls 40000          # profiles stand-in calls first
    .venv/bin/python tools/bench/bench_captures.py --capture prof.json.gz  # any capture (e.g. a GPU one)

Each measurement runs in a fresh process (peak RSS is per process): the reader, then the plain load.
Prints events/s and peak RSS of both. Results: BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# Peak RSS from /proc/self/status VmHWM: reset by exec, unlike getrusage's ru_maxrss, which a child
# started by this (large) process would inherit.
PEAK = "int([ln.split()[1] for ln in open('/proc/self/status') if ln.startswith('VmHWM')][0])"
READ = """
import sys, time
from trt_trace.captures import torch_profiler
t = time.perf_counter()
calls = torch_profiler.read(sys.argv[1])
dt = time.perf_counter() - t
print(len(calls), int(calls.kernels.sum()), dt, PEAK)
""".replace("PEAK", PEAK)
LOAD = """
import gzip, sys, time, orjson
t = time.perf_counter()
raw = open(sys.argv[1], "rb").read()
if raw[:2] == b"\\x1f\\x8b":
    raw = gzip.decompress(raw)
doc = orjson.loads(raw)
dt = time.perf_counter() - t
print(len(doc["traceEvents"]), dt, PEAK)
""".replace("PEAK", PEAK)
BASELINE = f"import trt_trace.captures; print({PEAK})"  # the reader's process before it reads


def make_capture(path: str, calls: int) -> None:
    import torch

    from trt_trace import standin

    standin.load()
    engines = [standin.make_engine(f"_run_on_acc_{i}_engine", num_outputs=1 + i % 2) for i in range(4)]
    x = torch.randn(4, 4)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for k in range(calls):
            torch.ops.tensorrt.execute_engine([x], engines[k % len(engines)])
    prof.export_chrome_trace(path)


def run(code: str, path: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code, path], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return out.stdout.split()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40000, help="stand-in calls to profile (without --capture)")
    ap.add_argument("--capture", help="an existing torch.profiler capture to read instead")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.capture
        if path is None:
            path = os.path.join(tmp, "prof.json")
            t = time.perf_counter()
            make_capture(path, args.calls)
            print(f"profiled {args.calls} stand-in calls in {time.perf_counter() - t:.1f} s")
        size = os.path.getsize(path)
        base_kb = int(run(BASELINE, path)[0])
        n_calls, n_kernels, dt, rss = run(READ, path)
        n_events, dt_load, rss_load = run(LOAD, path)
        ev = int(n_events)
        result = {
            "capture": os.path.basename(path), "bytes": size, "events": ev, "calls": int(n_calls),
            "kernels": int(n_kernels),
            "reader_s": round(float(dt), 3), "reader_Mevents_per_s": round(ev / float(dt) / 1e6, 3),
            "reader_peak_rss_MiB": round(int(rss) / 1024, 1),
            "reader_rss_over_import_MiB": round((int(rss) - base_kb) / 1024, 1),
            "orjson_load_s": round(float(dt_load), 3), "orjson_load_peak_rss_MiB": round(int(rss_load) / 1024, 1),
        }
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
