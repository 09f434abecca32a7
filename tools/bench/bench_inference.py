"""Host cost per inference of recording the whole inference (docs/inference.md), in one process.

    .venv/bin/python tools/bench/bench_inference.py [--calls 2000] [--rounds 9]

Two callables, each plain and wrapped as trt_trace wraps them (tracing off, and on in a real JSON session
drained by the native writer thread): an empty function (the wrapper's own cost: a Python frame and two
ctypes calls), and the demo AOTInductor package's runner (AOTICompiledModel.__call__, six stand-in engines),
the original method against the wrapped one on the same loaded package. Rounds interleave the modes; each
figure is the median over rounds of the mean per call, in ns; the cost is the difference to the plain mode
of the same tracing state (the package's engine calls are traced in both of its tracing-on modes).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import torch

import trt_trace
from trt_trace.runtime import inference
from trt_trace.standin import model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleaved import per_call_ns, rounds_args  # noqa: E402  (a script beside this one)


def main() -> None:
    args = rounds_args(__doc__, 2000)

    def empty() -> None:
        return None

    wrapped_empty = trt_trace.inference(empty)
    runner = model.load_package(model.package_model(model.demo_specs(6), torch.randn(8, 64)))
    cls = type(runner)
    wrapped_call = cls.__call__
    if not getattr(wrapped_call, inference.WRAPPED, False):
        raise SystemExit("the package runner's class is not wrapped: is trt_trace installed?")
    plain_call = wrapped_call.__wrapped__  # functools.wraps keeps the original
    x = torch.randn(8, 64)

    def package(call: Callable[..., object]) -> Callable[[], object]:
        def run() -> object:
            with torch.inference_mode():
                return call(runner, x)
        return run

    modes: dict[str, Callable[[], object]] = {
        "empty: plain": empty, "empty: wrapped": wrapped_empty,
        "package: plain": package(plain_call), "package: wrapped": package(wrapped_call),
    }
    for fn in modes.values():  # warm
        per_call_ns(fn, 50)
    results: dict[str, list[float]] = {f"{m}, tracing {s}": [] for s in ("off", "on") for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for state in ("off", "on"):
                if state == "on":
                    trt_trace.start(str(Path(tmp) / f"r{r}.json"))
                for name, fn in modes.items():
                    results[f"{name}, tracing {state}"].append(per_call_ns(fn, args.calls))
                if state == "on":
                    trt_trace.stop()
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"{'mode':40s} {'ns/call':>10s} {'cost':>8s}")
    for k, v in med.items():
        base = k.replace("wrapped", "plain")
        cost = "" if base == k else f"{v - med[base]:+8.0f}"
        print(f"{k:40s} {v:10.0f} {cost:>8s}")


if __name__ == "__main__":
    main()
