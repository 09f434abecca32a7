"""Long run with a fixed buffer: RSS must stay flat and no event may be dropped while the drainer keeps up.

    python tools/soak.py [--seconds 600] [--rate 10000] [--buffer 65536]

Calls a stand-in engine at `rate` calls/s (paced) for `seconds`, traced into a temporary file with
TRT_TRACE_BUFFER-sized rings; samples RSS every 10 s; prints the samples, the RSS growth between the
first and last sample, the achieved rate, the drops and the trace size.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

import trt_trace
from trt_trace import standin


def rss_mib() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--rate", type=float, default=10000)
    ap.add_argument("--buffer", type=int, default=65536)
    args = ap.parse_args()
    standin.load()
    e = standin.make_engine("soak_engine")
    x = [torch.ones(4)]
    samples = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "soak.json")
        with trt_trace.tracing(path, buffer_events=args.buffer, max_bytes=0) as session:
            t0 = time.perf_counter()
            next_sample = t0
            calls = 0
            while (now := time.perf_counter()) - t0 < args.seconds:
                due = int((now - t0) * args.rate)
                while calls < due:
                    torch.ops.tensorrt.execute_engine(x, e)
                    calls += 1
                if now >= next_sample:
                    samples.append((round(now - t0), round(rss_mib(), 1)))
                    next_sample += 10
                time.sleep(0.0005)
            elapsed = time.perf_counter() - t0
        dropped = sum(t["dropped"] for t in session.drop_counts())
        size = os.path.getsize(path)
    print("RSS samples (s, MiB):", samples)
    growth = samples[-1][1] - samples[1][1] if len(samples) > 2 else float("nan")
    print(f"{calls} calls in {elapsed:.0f} s = {calls / elapsed:.0f} calls/s; {5 * calls} events; dropped {dropped}; "
          f"RSS growth from 10 s to the end {growth:+.1f} MiB; trace {size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
