"""Per engine call cost in instructions (valgrind --tool=callgrind): repeatable to the instruction where
wall-clock loops on these machines vary by microseconds.

    python tools/bench/bench_callgrind.py [--calls 2000] [--engines 1] [--threads 1] [--io 1] [--shapes ...]
                                          [--modes ...] [--keep DIR]

Each mode runs in its own process under callgrind, collecting only inside the calling threads' C++ loops
of boxed calls (tools/bench/bench_overhead.py's calls_on_this_thread, built on first use). Each mode runs twice,
N and 2N calls per thread: instructions per call are the difference over N x threads, which cancels
set-up and warm-up. Modes as in bench_overhead.py, and "tracing on, layers after the window" (TRT_TRACE_LAYERS
on, every engine's window over before the counted calls). --engines N calls N engines in turn (the registry's
per-thread cache); --io K gives each engine K inputs and K outputs (an aten op each, as the runtime
binds them); --shapes picks the calls measured, each in the same run:
  runtime   per input `view` and `contiguous`, per output `empty`, all through the dispatcher: the real
            runtime's input binding (`.view(shape).contiguous()`) and output allocation
  minimal   per input `view`, per output `empty` (`.contiguous()` of a contiguous tensor returns it without
            dispatching, as in the stand-in's default)
--threads T runs T calling threads and counts all of them (valgrind runs one thread at a
time, so this is each call's work with T threads about, not contention between cores; a thread that
waits for a lock sleeps in the kernel, which costs no instructions). --keep DIR keeps each run's
callgrind output (DIR/<mode>.<calls>.out) for `callgrind_annotate --inclusive=yes`: comparing two
modes function by function shows where the added instructions go. --runs R measures each mode in R pairs
of processes and takes the median: "tracing on" varies by ~100-200 instructions per call from process to
process (a drainer runs beside the calls: what the calling thread meets in the allocator differs; seen
as malloc_consolidate and memcmp of the stand-in's own strings), "not installed" by ~30.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_overhead import LOOP_SRC, MODES  # noqa: E402

# Beside bench_overhead's modes: per-layer timing on, the calls measured after every engine's window.
LAYERS_MODE = "tracing on, layers after the window"
ALL_MODES = (*MODES, LAYERS_MODE)

WORKER = r"""
import os, sys, tempfile, torch
from torch.utils import cpp_extension
mode, calls, src, build = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
engines, threads, io, contiguous = int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8] == "1"
warm = max(50, engines)  # every engine called (registered) before the counted calls
import trt_trace
from trt_trace import standin
standin.load()
trt_trace._library.load()
cpp_extension.load_inline("trt_trace_bench", [open(src).read()], build_directory=build, is_python_module=False,
                          extra_cflags=["-O2"], verbose=False)
es = [standin.make_engine(f"bench_engine_{i}", num_inputs=io, num_outputs=io, dispatch_contiguous=contiguous)
      for i in range(engines)]
x = [torch.ones(4) for _ in range(io)]
loop = torch.ops.trt_trace_bench.boxed_loop
d = tempfile.mkdtemp()
if mode == "not installed":
    torch.ops.trt_trace._install_hook(False)
with trt_trace.tracing(os.path.join(d, "warm.json")):
    pass
if mode == "tracing on":
    trt_trace.start(os.path.join(d, "t.json"))
    loop(x, es, warm, threads)  # rings exist and engines are registered before the counted calls
    loop(x, es, calls, threads)
    trt_trace.stop()
elif mode == "tracing on, layers after the window":
    # TRT_TRACE_LAYERS on: every engine's window (its first call, then 2 profiled) is over before the
    # counted calls, which pay what the switch costs the calls around a window (docs/layers.md).
    trt_trace.start(os.path.join(d, "t.json"), layers=2)
    loop(x, es, warm, threads)
    loop(x, es, calls, threads)
    trt_trace.stop()
elif mode == "flight recorder":
    trt_trace.flight(60, os.path.join(d, "f.json"))
    loop(x, es, warm, threads)
    loop(x, es, calls, threads)
    trt_trace.stop()
elif mode == "torch.profiler":
    # The profiler alone: with the hook installed it would also record trt_trace's own user scopes
    # (trt::<engine>/<phase>), whose cost is trt_trace's, not the profiler's baseline.
    torch.ops.trt_trace._install_hook(False)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        loop(x, es, warm, threads)
        loop(x, es, calls, threads)
else:
    loop(x, es, warm, threads)
    loop(x, es, calls, threads)
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--engines", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--io", type=int, default=1, help="inputs and outputs per engine (one aten op each)")
    ap.add_argument("--shapes", nargs="+", default=["runtime", "minimal"], choices=["runtime", "minimal"])
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=ALL_MODES)
    ap.add_argument("--runs", type=int, default=1,
                    help="pairs of processes per mode, the median taken: with tracing on, what the calling thread "
                         "meets (the drainer's frees, the allocator's state) varies by ~100 instructions per call "
                         "between processes")
    ap.add_argument("--keep", type=Path, help="keep the callgrind outputs in this folder")
    args = ap.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
    build = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trt_trace" / "bench_ext"
    build.mkdir(parents=True, exist_ok=True)
    src = Path(tempfile.mkdtemp()) / "loop.cpp"
    src.write_text(LOOP_SRC)
    # Build the loop extension outside valgrind first.
    subprocess.run([sys.executable, "-c", WORKER, "installed, off", "10", str(src), str(build), "1", "1", "1", "0"],
                   check=True, cwd=tempfile.gettempdir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_QUIET"] = "1"
    for shape in args.shapes:
        argv = [str(args.engines), str(args.threads), str(args.io), "1" if shape == "runtime" else "0"]
        ops = "view, contiguous, empty" if shape == "runtime" else "view, empty"
        print(f"  {shape}: {args.engines} engine(s) with {args.io} input(s)/output(s) ({ops}), {args.threads} "
              f"thread(s), {args.calls} calls per thread", flush=True)
        per_call = {}
        for mode in args.modes:
            runs = []
            for run in range(args.runs):
                counts = []
                for calls in (args.calls, 2 * args.calls):  # the difference cancels the warm-up calls
                    folder = args.keep or Path(tempfile.mkdtemp())
                    tag = f".{run}" if args.runs > 1 else ""
                    out = folder / f"{shape}.{mode.replace(' ', '_').replace(',', '')}.{calls}{tag}.out"
                    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                                    "--toggle-collect=*calls_on_this_thread*", sys.executable, "-c", WORKER, mode,
                                    str(calls), str(src), str(build), *argv],
                                   env=env, check=True, capture_output=True, cwd=tempfile.gettempdir())
                    text = out.read_text(errors="replace")
                    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
                    counts.append(int(m.group(1)))
                runs.append((counts[1] - counts[0]) / (args.calls * args.threads))
            per_call[mode] = statistics.median(runs)
            spread = f"  (runs {min(runs):.0f}-{max(runs):.0f})" if len(runs) > 1 else ""
            print(f"  {mode:15s} {per_call[mode]:9.0f} instructions/call{spread}", flush=True)
        base = per_call.get("not installed")
        if base is None:
            continue
        for mode in per_call:
            if mode != "not installed":
                print(f"  {mode:15s} adds {per_call[mode] - base:7.0f} instructions/call")
        if "tracing on" in per_call and "torch.profiler" in per_call:
            on = per_call["tracing on"] - base
            prof = per_call["torch.profiler"] - base
            print(f"  tracing on adds {on / prof:.2f} x torch.profiler's added instructions", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
