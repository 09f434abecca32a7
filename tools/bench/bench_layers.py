"""What per-layer timing (TRT_TRACE_LAYERS, docs/layers.md) costs: a profiled call against a normal one,
the end of a window, and what the switch costs the calls after the window.

    python tools/bench/bench_layers.py [--repeats 5] [--calls 2000] [--layers 5]          # CPU, the stand-in
    python tools/bench/bench_layers.py --real --fake DIR --runtime libtorchtrt_runtime.so  # GPU machine: the
                                                        # real Torch-TensorRT 2.11 runtime over tests/faketrt

Each repeat, in one process: a session without layers, then one with TRT_TRACE_LAYERS=N (`--layers`),
on the same engines:
* normal call, profiled call: N calls each timed one by one from Python (what the caller waits), and
  the same calls' execute_engine slice in the trace (what the runtime's call took inside trt_trace's
  hook); the difference of the two differences is trt_trace's own work per profiled call (a fresh
  profiler, reading the runtime's layer file, the layer records); the window's last call also ends it
  (disable_profiling, the context made again).
* calls after the window: --calls calls of a cheap engine with no layers from a C++ loop of boxed calls
  (tools/bench/bench_overhead.py's; on a GPU in batches with the device synchronised between them, the
  clock stopped) after every window closed, against the same loop in the session without layers: the
  switch's cost on the calls around it.
Prints medians over repeats (and their spread) and one JSON line.

The stand-in's engine: host work of --layer-us per layer (four layers); the real runtime's: the fake's
engine of four layers of known GPU time (1570 us in all) and one of two (50 us).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests" / "faketrt"))
from bench_overhead import LOOP_SRC  # noqa: E402

STANDIN_LAYERS = ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv1/convolution] + [RELU]-[/relu1/relu]",
                  "Reformatting CopyNode for Input Tensor 0 to [MATRIX_MULTIPLY]-[/fc/mm]",
                  "[MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc/mm]", "{ForeignNode[/attn/MatMul.../attn/Softmax]}")


def engines_and_input(args: argparse.Namespace):  # noqa: ANN201
    import torch

    if not args.real:
        from trt_trace import standin

        standin.load()
        layers = tuple((name, args.layer_us) for name in STANDIN_LAYERS)
        return ([standin.make_engine("bench_layers_engine", layers=layers)],
                standin.make_engine("bench_layers_loop_engine"), torch.ones(4), "stand-in (CPU)")
    import faketrt

    sys.path.insert(0, str(HERE.parents[1] / "tools" / "device"))
    from real_runtime_check import LAYER_PLANS, load_runtime

    load_runtime(args.fake, args.runtime)
    return ([faketrt.make_engine(p) for p in LAYER_PLANS],
            faketrt.make_engine(faketrt.Plan("_run_on_acc_loop_engine", gpu_us=10)), torch.randn(16, 16, device="cuda"),
            f"Torch-TensorRT 2.11 over the fake TensorRT, {torch.cuda.get_device_name(0)}")


def call_slices(path: str) -> dict[int, float]:
    """call id -> the execute_engine slice's duration in ns."""
    from trt_trace.analysis.trace_summary import load_events
    from trt_trace.schema.trace_format import CATEGORY

    return {e["args"]["call_id"]: e["dur"] * 1000 for e in load_events(path)
            if e.get("ph") == "X" and e.get("cat") == CATEGORY and e["name"] == "execute_engine"}


def timed_calls(engine, x, n: int) -> list[float]:  # noqa: ANN001
    """n calls of engine, each timed from here (ns): the host time the caller waits (on a GPU the device
    is synchronised after each call, untimed, so that no call waits for the one before)."""
    import torch

    out = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        torch.ops.tensorrt.execute_engine([x], engine)
        out.append(time.perf_counter_ns() - t0)
        if x.is_cuda:
            torch.cuda.synchronize()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000, help="calls of the loop after the window, per repeat")
    ap.add_argument("--layers", type=int, default=5, help="TRT_TRACE_LAYERS: profiled calls per engine and window")
    ap.add_argument("--layer-us", type=int, default=25, help="the stand-in's host work per layer")
    ap.add_argument("--batch", type=int, default=32, help="GPU: calls per synchronised batch of the loop")
    ap.add_argument("--real", action="store_true", help="the real Torch-TensorRT runtime over tests/faketrt (GPU)")
    ap.add_argument("--fake", help="with --real: the folder of the fake's libraries (tests/faketrt/build.sh)")
    ap.add_argument("--runtime", help="with --real: libtorchtrt_runtime.so of torch-tensorrt 2.11.0")
    args = ap.parse_args()
    if args.real and not (args.fake and args.runtime):
        ap.error("--real needs --fake DIR and --runtime libtorchtrt_runtime.so")
    import torch
    from torch.utils import cpp_extension

    import trt_trace

    engines, loop_engine, x, what = engines_and_input(args)
    build = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trt_trace" / "bench_ext"
    build.mkdir(parents=True, exist_ok=True)
    src = Path(tempfile.mkdtemp()) / "loop.cpp"
    src.write_text(LOOP_SRC)
    cpp_extension.load_inline("trt_trace_bench", [src.read_text()], build_directory=str(build),
                              is_python_module=False, extra_cflags=["-O2"], verbose=False)

    def loop(n: int) -> float:  # a cheap engine of no layers: what the switch adds shows
        if x.is_cuda:
            return torch.ops.trt_trace_bench.synced_loop([x], [loop_engine], n, args.batch, 0)
        return torch.ops.trt_trace_bench.boxed_loop([x], [loop_engine], n, 1)

    d = tempfile.mkdtemp()
    n = args.layers
    rows: dict[str, list[float]] = {k: [] for k in ("normal", "profiled", "normal_slice", "profiled_slice", "own",
                                                     "close", "off_loop", "after_loop")}
    for _ in range(args.repeats):
        loop(200)  # warm
        off = os.path.join(d, "off.json")
        with trt_trace.tracing(off):
            first = engines[0]
            timed_calls(first, x, 1)
            normal = timed_calls(first, x, n)
            rows["off_loop"].append(loop(args.calls))
        normal_slices = sorted(call_slices(off).items())[1:n + 1]
        on = os.path.join(d, "on.json")
        with trt_trace.tracing(on, layers=n):
            for e in [*engines[1:], loop_engine]:  # their windows first: the loop below runs after every window
                timed_calls(e, x, n + 1)
            timed_calls(first, x, 1)
            profiled = timed_calls(first, x, n)
            rows["after_loop"].append(loop(args.calls))
        engine_calls = sorted(call_slices(on).items())[len(engines) * (n + 1):]
        profiled_slices = engine_calls[1:n + 1]
        own = [t - s for t, (_, s) in zip(profiled[:-1], profiled_slices[:-1], strict=True)]
        base = [t - s for t, (_, s) in zip(normal, normal_slices, strict=True)]
        rows["normal"].append(statistics.median(normal))
        rows["profiled"].append(statistics.median(profiled[:-1]))
        rows["normal_slice"].append(statistics.median(s for _, s in normal_slices))
        rows["profiled_slice"].append(statistics.median(s for _, s in profiled_slices[:-1]))
        rows["own"].append(statistics.median(own) - statistics.median(base))
        rows["close"].append(profiled[-1] - statistics.median(profiled[:-1]))
    med = {k: statistics.median(v) for k, v in rows.items()}
    spread = {k: (min(v), max(v)) for k, v in rows.items()}

    def line(label: str, key: str, unit: float = 1e3, suffix: str = "us") -> None:
        lo, hi = spread[key]
        print(f"  {label:58s} {med[key] / unit:10.2f} {suffix}  ({lo / unit:.2f}-{hi / unit:.2f})")

    print(f"{what}; {args.repeats} repeats, TRT_TRACE_LAYERS={n}, loop of {args.calls} calls")
    line("normal call, as the caller waits", "normal")
    line("profiled call, as the caller waits", "profiled")
    line("  normal call's execute_engine slice", "normal_slice")
    line("  profiled call's execute_engine slice (the runtime's profiled call)", "profiled_slice")
    line("  trt_trace's own work per profiled call", "own")
    line("the window's end (its last call, beyond a profiled one)", "close")
    line("calls without the switch, C++ loop", "off_loop", 1, "ns")
    line("calls after the window, the switch on, C++ loop", "after_loop", 1, "ns")
    print(f"  profiled / normal call: {med['profiled'] / med['normal']:.1f}x; after the window / without the switch: "
          f"{med['after_loop'] / med['off_loop']:.4f} ({med['after_loop'] - med['off_loop']:+.1f} ns per call)")
    print(json.dumps({"what": what, "layers": n, "repeats": args.repeats, "median_ns": med}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
