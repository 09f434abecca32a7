"""Drain + write throughput: trt_trace's writers (Chrome JSON, native Perfetto; Chrome JSON also through the
native writer thread's C++ path, csrc/session) vs torch.profiler's export.

    python tools/bench/bench_export.py [--calls 200000]

trt_trace: `calls` synthetic engine calls (5 records each: the call and its 4 phases) on 6 engines,
built as the drain hands them over (BATCH_RECORDS-record batches) and written as the drainer does,
by each writer in turn on the same batches (interleaved repeats).
torch.profiler: a CPU profile of stand-in engine calls, then export_chrome_trace; events counted in the
exported file. Reports events/s, bytes/event, and the writer's peak RSS growth.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time

import numpy as np
import torch

from trt_trace import standin
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.native import ops
from trt_trace.schema.records import RECORD_DTYPE

# The writers' clock: wall time (default), or the process's CPU time (--cpu-time) on a machine shared with other
# work, where wall time measures the neighbours as much as the writer.
CLOCK = time.perf_counter

BATCH_RECORDS = 1 << 14  # records per drain (csrc/session/native_writer.cpp kBatchRecords)

WRITERS = {"Chrome JSON": (ChromeJsonWriter, "t.json"), "Perfetto protobuf": (PerfettoTraceWriter, "t.pftrace"),
           "Chrome JSON, native writer": (None, "n.json")}


def synthetic_batch(n_calls: int, first_call: int) -> np.ndarray:
    rec = np.zeros(n_calls * 5, dtype=RECORD_DTYPE)
    calls = np.arange(first_call, first_call + n_calls, dtype=np.int64)
    begin = 1_000_000_000 + calls * 120_000
    for p in range(5):
        sl = rec[p::5]
        sl["phase"] = p
        sl["call_id"] = calls
        sl["engine_id"] = 1 + calls % 6
        sl["thread_id"] = 4242
        sl["device"] = 0xFFFF
        sl["begin_ns"] = begin if p == 0 else begin + (p - 1) * 25_000
        sl["end_ns"] = begin + 100_000 if p == 0 else begin + p * 25_000
    return rec


def rss_kib() -> int:
    return int(open("/proc/self/statm").read().split()[1]) * 4


def bench_trt_trace(calls: int, d: str, fmt: str) -> tuple[float, float, int]:
    names = ["", *[f"_run_on_acc_{i}_engine" for i in range(6)]]
    step = BATCH_RECORDS // 5  # calls per drained batch, as the drainer hands them over
    batches = [synthetic_batch(min(step, calls - c), c) for c in range(0, calls, step)]
    n_events = sum(len(b) for b in batches)
    cls, name = WRITERS[fmt]
    if cls is None:  # the session's writer thread's path (csrc/session): track book, formatter, file, in C++
        records = torch.from_numpy(np.concatenate(batches).view(np.uint8).copy())
        before = rss_kib()
        t0 = CLOCK()
        ops.json_trace_from_records(os.path.join(d, name), records, step * 5, 4242, True, b'{"ph":"M"}', names, [],
                                    0, True, b"{}")
        dt = CLOCK() - t0
        return n_events / dt, os.path.getsize(os.path.join(d, name)) / n_events, rss_kib() - before
    writer = cls(os.path.join(d, name), lambda: names)
    writer.begin("bench", {})
    before = rss_kib()
    peak = before
    dt = 0.0
    for b in batches:
        t0 = CLOCK()
        writer.write(b)
        dt += CLOCK() - t0  # the writer's time only, not the RSS sampling below
        peak = max(peak, rss_kib())
    writer.finish({})
    return n_events / dt, writer.bytes_written / n_events, peak - before


def bench_profiler(calls: int, d: str) -> tuple[float, float]:
    standin.load()
    e = standin.make_engine("bench_engine")
    x = [torch.ones(4)]
    # The profiler alone: with trt_trace's hook installed its trace would also hold trt_trace's
    # user scopes (trt::<engine>/<phase>, profiler_scopes.h), events of another shape and cost.
    torch.ops.trt_trace._install_hook(False)
    try:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            for _ in range(calls):
                torch.ops.tensorrt.execute_engine(x, e)
    finally:
        torch.ops.trt_trace._install_hook(True)
    path = os.path.join(d, "prof.json")
    t0 = time.perf_counter()
    prof.export_chrome_trace(path)
    dt = time.perf_counter() - t0
    n = sum(1 for ev in json.load(open(path))["traceEvents"] if ev.get("ph") == "X")
    return n / dt, os.path.getsize(path) / n


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--profiler-calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cpu-time", action="store_true", help="time the writers by CPU time, not wall time")
    args = ap.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.cpu_time else time.perf_counter
    ops.timing_table()  # load the library
    ours: dict[str, list[tuple[float, float, int]]] = {fmt: [] for fmt in WRITERS}
    theirs = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.repeats):  # interleaved
            for fmt in WRITERS:
                ours[fmt].append(bench_trt_trace(args.calls, d, fmt))
            theirs.append(bench_profiler(args.profiler_calls, d))
    rates = {fmt: statistics.median(r[0] for r in runs) for fmt, runs in ours.items()}
    for fmt, runs in ours.items():
        print(f"trt_trace {fmt}: {rates[fmt] / 1e6:.2f} M events/s (spread {min(r[0] for r in runs) / 1e6:.2f}-"
              f"{max(r[0] for r in runs) / 1e6:.2f}), {runs[0][1]:.1f} bytes/event, "
              f"peak RSS growth {max(r[2] for r in runs) / 1024:.1f} MiB for {5 * args.calls} events")
    print(f"native vs Python Chrome JSON writer: {rates['Chrome JSON, native writer'] / rates['Chrome JSON']:.2f}x "
          "the events/s")
    js, pf = ours["Chrome JSON"], ours["Perfetto protobuf"]
    print(f"Perfetto vs JSON: {rates['Perfetto protobuf'] / rates['Chrome JSON']:.1f}x the events/s, "
          f"{js[0][1] / pf[0][1]:.1f}x smaller")
    rate = rates["Chrome JSON"]
    prof_rate = statistics.median(r[0] for r in theirs)
    print(f"torch.profiler export_chrome_trace: {prof_rate / 1e6:.3f} M events/s (spread "
          f"{min(r[0] for r in theirs) / 1e6:.3f}-{max(r[0] for r in theirs) / 1e6:.3f}), "
          f"{theirs[0][1]:.0f} bytes/event")
    print(f"ratio: trt_trace exports {rate / prof_rate:.1f}x more events per second")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
