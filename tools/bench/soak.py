"""Long run with a fixed buffer: RSS must stay flat and no event may be dropped while the drainer keeps up.

    python tools/bench/soak.py [--seconds 600] [--rate 10000] [--buffer 65536] [--off]

Calls a stand-in engine at `rate` calls/s (paced) for `seconds`, traced into a temporary file with
TRT_TRACE_BUFFER-sized rings; samples RSS and the C heap (glibc mallinfo2: bytes in use, bytes held
from the system) every 10 s; prints the samples, the growths between the 10 s sample and the last, the
achieved rate, the drops and the trace size. Heap in use flat while RSS grows = memory the allocator
keeps, not a leak. --trim-every S calls malloc_trim(0) every S seconds (a diagnostic: what RSS is
when the allocator gives free pages back). --off makes the same calls with tracing off: the workload's
own memory behaviour, to set beside a traced run.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import tempfile
import time

import torch

import trt_trace
from trt_trace import standin


def rss_mib() -> float:
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap_mib() -> tuple[float, float]:
    """The C heap (glibc >= 2.33, all arenas), MiB: (in use: handed out and not given back, held: taken
    from the system, in use or free); nans elsewhere."""
    try:
        f = ctypes.CDLL(None).mallinfo2
    except AttributeError:
        return float("nan"), float("nan")
    f.restype = _MallInfo2
    m = f()
    return (m.uordblks + m.hblkhd) / 2**20, (m.arena + m.hblkhd) / 2**20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--rate", type=float, default=10000)
    ap.add_argument("--buffer", type=int, default=65536)
    ap.add_argument("--trim-every", type=float, default=0, help="malloc_trim(0) every this many seconds (0: never)")
    ap.add_argument("--off", action="store_true", help="tracing off: the same calls, nothing recorded")
    args = ap.parse_args()
    standin.load()
    e = standin.make_engine("soak_engine")
    x = [torch.ones(4)]
    samples = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "soak.json")
        if args.off:
            trt_trace._library.load()  # installed, tracing off
            traced = contextlib.nullcontext()
        else:
            traced = trt_trace.tracing(path, buffer_events=args.buffer, max_bytes=0)
        with traced as session:
            t0 = time.perf_counter()
            next_sample = t0
            next_trim = t0 + args.trim_every if args.trim_every > 0 else float("inf")
            calls = 0
            while (now := time.perf_counter()) - t0 < args.seconds:
                due = int((now - t0) * args.rate)
                while calls < due:
                    torch.ops.tensorrt.execute_engine(x, e)
                    calls += 1
                if now >= next_trim:
                    ctypes.CDLL(None).malloc_trim(0)
                    next_trim += args.trim_every
                if now >= next_sample:
                    samples.append((round(now - t0), round(rss_mib(), 1), *(round(v, 1) for v in heap_mib())))
                    next_sample += 10
                time.sleep(0.0005)
            elapsed = time.perf_counter() - t0
        dropped = sum(t["dropped"] for t in session.drop_counts()) if session else 0
        size = os.path.getsize(path) if session else 0
    events = 0 if args.off else 5 * calls
    print("samples (s, RSS MiB, C heap in use MiB, C heap held MiB):", samples)
    grow = [samples[-1][k] - samples[1][k] if len(samples) > 2 else float("nan") for k in (1, 2, 3)]
    print(f"{calls} calls in {elapsed:.0f} s = {calls / elapsed:.0f} calls/s; {events} events; dropped {dropped}; "
          f"from 10 s to the end: RSS {grow[0]:+.1f} MiB, C heap in use {grow[1]:+.1f} MiB, held {grow[2]:+.1f} MiB; "
          f"trace {size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
