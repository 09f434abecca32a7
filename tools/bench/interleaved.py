"""What the benchmarks of interleaved rounds share (bench_inference.py, bench_python_runtime.py): their
--calls/--rounds arguments and the timed loop, so that both time a call the same way."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable


def rounds_args(doc: str, calls: int) -> argparse.Namespace:
    """The script's --calls (per mode per round; default `calls`) and --rounds (default 9), parsed; `doc`:
    its module docstring, whose first line describes it."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--calls", type=int, default=calls, help="calls per mode per round")
    ap.add_argument("--rounds", type=int, default=9, help="interleaved rounds (the median is reported)")
    return ap.parse_args()


def per_call_ns(fn: Callable[[], object], calls: int) -> float:
    """The mean wall-clock ns per call of `calls` calls of fn, back to back."""
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - t0) / calls
