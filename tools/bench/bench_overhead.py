"""Per engine call host overhead of trt_trace, from C++ loops of boxed calls (as the AOTInductor proxy
executor and TorchScript make them), side by side in one run.

    python tools/bench/bench_overhead.py [--calls 20000] [--repeats 15] [--engines 1 10 1000] [--threads 1 2 4] [--cuda]

Modes, interleaved in one process (so allocator and CPU state are shared), repeated:
  not installed   the hook's kernel deregistered (torch.ops.trt_trace._install_hook(False))
  installed, off  trt_trace loaded, tracing off (the hook: one relaxed load and the hand-off)
  tracing on      host phases, drained to a trace file by the background drainer
  flight recorder the same calls kept in the flight recorder's window (trt_trace.flight), no file
  torch.profiler  the hook deregistered, torch.profiler recording CPU activities (the profiler alone)
Prints ns per call (median over repeats, and spread) and the differences to "not installed".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

LOOP_SRC = r"""
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>
#include <chrono>
#include <thread>

// One calling thread's calls, round-robin over the engines, boxed through the dispatcher. A named
// function that every calling thread runs: tools/bench/bench_callgrind.py collects instructions only
// inside it (--toggle-collect), in all threads. Returns ns per call.
__attribute__((noinline)) double calls_on_this_thread(const c10::OperatorHandle& op, const c10::IValue& inputs,
                                                      const c10::List<c10::IValue>& engines, int64_t calls,
                                                      int64_t t) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < calls; ++i) {
    torch::jit::Stack s{inputs, engines.get((i + t) % engines.size())};
    op.callBoxed(&s);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / calls;
}

// boxed_loop(inputs, engines, calls, threads) -> ns per call, averaged over threads.
static void boxed_loop(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const int64_t threads = stack->back().toInt(); stack->pop_back();
  const int64_t calls = stack->back().toInt(); stack->pop_back();
  const c10::IValue engines = stack->back(); stack->pop_back();
  const c10::IValue inputs = stack->back(); stack->pop_back();
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tensorrt::execute_engine", "");
  const auto list = engines.toList();
  std::vector<double> ns(threads);
  std::vector<std::thread> pool;
  for (int64_t t = 1; t < threads; ++t) {
    pool.emplace_back([&, t] { ns[t] = calls_on_this_thread(op, inputs, list, calls, t); });
  }
  ns[0] = calls_on_this_thread(op, inputs, list, calls, 0);
  for (auto& th : pool) th.join();
  double sum = 0;
  for (double v : ns) sum += v;
  stack->push_back(c10::IValue(sum / threads));
}

TORCH_LIBRARY(trt_trace_bench, m) {
  m.def("boxed_loop(Tensor[] inputs, Any engines, int calls, int threads) -> float",
        torch::CppFunction::makeFromBoxedFunction<&boxed_loop>());
}
"""

WORKER = r"""
import json, os, sys, tempfile, torch
from torch.utils import cpp_extension
calls, engines, threads, repeats, src, build, cuda = sys.argv[1:8]
calls, engines, threads, repeats, cuda = int(calls), int(engines), int(threads), int(repeats), cuda == "1"
import trt_trace
from trt_trace import standin
standin.load()
trt_trace._library.load()
cpp_extension.load_inline("trt_trace_bench", [open(src).read()], build_directory=build, is_python_module=False,
                          extra_cflags=["-O2"], verbose=False)
es = [standin.make_engine(f"bench_engine_{i}", device=0 if cuda else -1) for i in range(engines)]
x = [torch.ones(4, device="cuda" if cuda else "cpu")]
loop = torch.ops.trt_trace_bench.boxed_loop
modes = ["not installed", "installed, off", "tracing on", "flight recorder", "torch.profiler"]
if cuda:
    modes.insert(3, "tracing on + GPU events")
results = {m: [] for m in modes}
with tempfile.TemporaryDirectory() as d:
    with trt_trace.tracing(os.path.join(d, "warm.json")):
        loop(x, es, 2000, threads)  # first-call costs, engine registration, observer set-up
    for _ in range(repeats):
        torch.ops.trt_trace._install_hook(False)
        loop(x, es, 200, threads)
        results["not installed"].append(loop(x, es, calls, threads))
        torch.ops.trt_trace._install_hook(True)
        loop(x, es, 200, threads)
        results["installed, off"].append(loop(x, es, calls, threads))
        # A buffer that holds every record of a loop: calls whose records were dropped would cost less.
        with trt_trace.tracing(os.path.join(d, "t.json"), gpu=False, buffer_events=8 * (calls + 200)):
            loop(x, es, 200, threads)
            results["tracing on"].append(loop(x, es, calls, threads))
        trt_trace.flight(60, os.path.join(d, "f.json"), gpu=False, buffer_events=8 * (calls + 200))
        loop(x, es, 200, threads)
        results["flight recorder"].append(loop(x, es, calls, threads))
        trt_trace.stop()
        if cuda:
            with trt_trace.tracing(os.path.join(d, "g.json"), gpu=True, buffer_events=8 * (calls + 200)):
                loop(x, es, 200, threads)
                results["tracing on + GPU events"].append(loop(x, es, calls, threads))
        if cuda:
            torch.cuda.synchronize()
        torch.ops.trt_trace._install_hook(False)  # the profiler alone, without trt_trace's scopes in it
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            loop(x, es, 200, threads)
            results["torch.profiler"].append(loop(x, es, calls, threads))
        torch.ops.trt_trace._install_hook(True)
print(json.dumps(results))
"""

# (+ "tracing on + GPU events" with --cuda)
MODES = ("not installed", "installed, off", "tracing on", "flight recorder", "torch.profiler")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--engines", type=int, nargs="+", default=[1])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--cuda", action="store_true", help="CUDA stand-in engine and inputs; adds tracing on + GPU events")
    args = ap.parse_args()
    build = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trt_trace" / "bench_ext"
    build.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(LOOP_SRC)
        src = f.name
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_QUIET"] = "1"
    for engines in args.engines:
        for threads in args.threads:
            argv = [str(args.calls), str(engines), str(threads), str(args.repeats), src, str(build),
                    "1" if args.cuda else "0"]
            out = subprocess.run([sys.executable, "-c", WORKER, *argv], env=env, capture_output=True, text=True,
                                 cwd=tempfile.gettempdir())
            if out.returncode != 0:
                print(out.stderr[-3000:], file=sys.stderr)
                return 1
            results = json.loads(out.stdout.strip().splitlines()[-1])
            base = statistics.median(results["not installed"])
            print(f"engines={engines} threads={threads} calls/thread={args.calls} repeats={args.repeats}")
            for mode, v in results.items():
                med = statistics.median(v)
                print(f"  {mode:15s} {med:9.0f} ns/call  (+{med - base:6.0f} ns)  spread {min(v):.0f}-{max(v):.0f}")
            on = statistics.median(results["tracing on"]) - base
            prof = statistics.median(results["torch.profiler"]) - base
            print(f"  tracing on adds {on:.0f} ns = {on / prof:.2f} x torch.profiler's {prof:.0f} ns", flush=True)
            flight = statistics.median(results["flight recorder"]) - base
            print(f"  flight recorder adds {flight:.0f} ns = {flight / on:.2f} x tracing on", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
