"""Host cost per call of tracing Torch-TensorRT's Python runtime, beside the C++ runtime's, in one process.

    .venv/bin/python tools/bench/bench_python_runtime.py [--calls 4000] [--rounds 9]

Python runtime: the stand-in's PythonTorchTensorRTModule (trt_trace/standin/python_runtime.py, no host
time of its own) as it comes ("plain") and a subclass instrumented as trt_trace instruments the real class
("installed", tracing off and on). C++ runtime: the stand-in's engine through torch.ops.tensorrt.
execute_engine with the hook uninstalled, installed and off, and tracing on. Tracing on is a real session
(a JSON file written by the native writer thread). With per-layer timing on (TRT_TRACE_LAYERS, a session
with `layers`): both runtimes after their window (the switch on, the engine's window over), and the Python
runtime's calls inside its window (each profiled: trt_trace's profiler set and taken off, one layer of no
time reported by the stand-in's context, its record written). Rounds interleave the modes; each figure is
the median over rounds of the mean per call, in ns; the cost is the difference to the mode without trt_trace.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import torch

import trt_trace
from trt_trace import standin
from trt_trace.runtime import python_runtime
from trt_trace.standin.python_runtime import PythonTorchTensorRTModule

sys.path.insert(0, str(Path(__file__).resolve().parent))
from interleaved import per_call_ns, rounds_args  # noqa: E402  (a script beside this one)


class Instrumented(PythonTorchTensorRTModule):
    """The stand-in's class with trt_trace's instrumentation, beside the plain one."""


def main() -> None:
    args = rounds_args(__doc__, 4000)
    standin.load()
    assert python_runtime.instrument(Instrumented, "forward")
    x = torch.ones(16)
    plain, traced = PythonTorchTensorRTModule("bench_plain"), Instrumented("bench_py")
    layered = Instrumented("bench_py_layered", layers=(("layer", 0.0),))
    engine = standin.make_engine("bench_cpp")
    cpp = torch.ops.tensorrt.execute_engine
    install = torch.ops.trt_trace._install_hook

    def cpp_call() -> object:
        return cpp([x], engine)

    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for fn in (lambda: plain(x), lambda: traced(x), cpp_call):  # warm-up
                per_call_ns(fn, 200)
            install(False)
            results.setdefault("C++: hook not installed", []).append(per_call_ns(cpp_call, args.calls))
            install(True)
            results.setdefault("C++: installed, tracing off", []).append(per_call_ns(cpp_call, args.calls))
            results.setdefault("Python: plain class", []).append(per_call_ns(lambda: plain(x), args.calls))
            results.setdefault("Python: instrumented, tracing off", []).append(
                per_call_ns(lambda: traced(x), args.calls))
            with trt_trace.tracing(str(Path(tmp) / f"r{r}.json")):
                results.setdefault("C++: tracing on", []).append(per_call_ns(cpp_call, args.calls))
                results.setdefault("Python: instrumented, tracing on", []).append(
                    per_call_ns(lambda: traced(x), args.calls))
            with trt_trace.tracing(str(Path(tmp) / f"l{r}.json"), layers=1):
                for fn in (lambda: traced(x), cpp_call):  # the first call, then the one profiled: the window over
                    fn()
                    fn()
                results.setdefault("C++: layers on, after the window", []).append(per_call_ns(cpp_call, args.calls))
                results.setdefault("Python: layers on, after the window", []).append(
                    per_call_ns(lambda: traced(x), args.calls))
            with trt_trace.tracing(str(Path(tmp) / f"p{r}.json"), layers=args.calls + 1):
                layered(x)  # the first call runs as usual
                results.setdefault("Python: layers on, each call profiled", []).append(
                    per_call_ns(lambda: layered(x), args.calls))
    med = {k: statistics.median(v) for k, v in results.items()}
    base = {"C++": med["C++: hook not installed"], "Python": med["Python: plain class"]}
    print(f"torch {torch.__version__}; {args.calls} calls x {args.rounds} rounds; ns per call "
          "(median of rounds; min-max of rounds; cost against the mode without trt_trace)")
    for k, v in med.items():
        side = k.split(":")[0]
        spread = f"{min(results[k]):.0f}-{max(results[k]):.0f}"
        print(f"  {k:36s} {v:9.0f}   [{spread}]   {v - base[side]:+8.0f}")


if __name__ == "__main__":
    main()
