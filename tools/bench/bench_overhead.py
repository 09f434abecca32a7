"""Per engine call host overhead of trt_trace, from C++ loops of boxed calls (as the AOTInductor proxy
executor and TorchScript make them), side by side in one run.

    python tools/bench/bench_overhead.py [--calls 20000] [--repeats 15] [--engines 1 10 1000] [--threads 1 2 4]
    python tools/bench/bench_overhead.py --cuda [--gpu-every 1 8] [--batch 32]      # on a GPU machine

Modes, interleaved in one process (so allocator and CPU state are shared), repeated:
  not installed   the hook's kernel deregistered (torch.ops.trt_trace._install_hook(False))
  installed, off  trt_trace loaded, tracing off (the hook: one relaxed load and the hand-off)
  tracing on      host phases, drained to a trace file by the background drainer
  flight recorder the same calls kept in the flight recorder's window (trt_trace.flight), no file
  torch.profiler  the hook deregistered, torch.profiler recording CPU activities (the profiler alone)
Each repeat runs every mode once, starting one mode later than the repeat before (so that no mode
always follows the same one). Prints ns per call (median over repeats, and spread) and the differences
to "not installed".

--cuda: a CUDA stand-in engine and CUDA inputs, one calling thread, and GPU timing beside the modes
above (tracing on is then "GPU timing off"): "tracing on + GPU events" (every CUDA call gets them) and
"tracing on + GPU events 1 in N" for each N > 1 of --gpu-every (TRT_TRACE_GPU_EVERY=N). The calls run
in batches of --batch with the device synchronised between batches, the clock stopped: the GPU never
falls far behind, so the CUDA launch queue never fills and blocks the host, and the figures are host
time. Each GPU mode's session is checked (spans measured and calls sampled out, from the live
counters) and the run fails loudly where they are not what the mode promises. Prints the GPU modes
side by side with their differences to GPU timing off (paired within a repeat) and their ratios,
and a diagnostic mode, "GPU events, drainer held": every call gets events while the session's drainer
is kept from running (no span resolves during the timed calls), which tells the calling thread's own
cost from what resolving spans beside it costs. And, for each N, "toggled per batch": one session whose
C++ loop switches GPU timing on and off between batches (on, off, off, on, ...), which pairs the two
batch by batch, far closer than modes a second apart can be: the calls' own added host time; for each N
up to 64, "steps timed" also times GPU timing's own steps inside the calls (ops.gpu_self_time) and
prints what each costs per measured call beside what the mode adds; and "caller wait every call", with
TRT_TRACE_CALLER_WAIT_EVERY=1 (an engine on its own stream: four events on every measured call, against
the default's two on 7 of 8).
--no-engine-stream sets TRT_TRACE_ENGINE_STREAM=0. With --cuda, torch.profiler runs in a second process
beside a "not installed" of its own: a process that has profiled pays more for its CUDA calls
afterwards, which would inflate every mode measured after it.
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
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/library.h>
#include <algorithm>
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

// One batch of CUDA calls, engines round-robin from call `first` on, timed: host ns.
double timed_batch(const c10::OperatorHandle& op, const c10::IValue& inputs, const c10::List<c10::IValue>& engines,
                   int64_t first, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) {
    torch::jit::Stack s{inputs, engines.get((first + i) % engines.size())};
    op.callBoxed(&s);
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
}

// CUDA calls in batches of `batch`, the device synchronised before and after each batch with the clock
// stopped: what is timed is host time only, never a wait for a full CUDA launch queue (the GPU is at
// most one batch behind). Returns host ns per call.
__attribute__((noinline)) double calls_in_synced_batches(const c10::OperatorHandle& op, const c10::IValue& inputs,
                                                         const c10::List<c10::IValue>& engines, int64_t calls,
                                                         int64_t batch, c10::DeviceIndex device) {
  const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  cuda->synchronizeDevice(device);
  double ns = 0;
  for (int64_t done = 0; done < calls;) {
    const int64_t n = std::min(batch, calls - done);
    ns += timed_batch(op, inputs, engines, done, n);
    cuda->synchronizeDevice(device);
    done += n;
  }
  return ns / calls;
}

// As calls_in_synced_batches, with trt_trace's GPU timing switched on and off between batches
// (torch.ops.trt_trace.set_gpu_timing, untimed), in the order on, off, off, on, ...: the two halves
// share every drift of the machine slower than a few batches, and work that runs beside the calls
// (the drainer resolving spans) falls on both alike. ns_per_call[0]: off, [1]: on.
__attribute__((noinline)) void calls_toggling_gpu_timing(const c10::OperatorHandle& op, const c10::IValue& inputs,
                                                         const c10::List<c10::IValue>& engines, int64_t calls,
                                                         int64_t batch, c10::DeviceIndex device,
                                                         double ns_per_call[2]) {
  const auto set_gpu_timing = c10::Dispatcher::singleton().findSchemaOrThrow("trt_trace::set_gpu_timing", "");
  const c10::impl::DeviceGuardImplInterface* cuda = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
  cuda->synchronizeDevice(device);
  double ns[2] = {0, 0};
  int64_t made[2] = {0, 0};
  for (int64_t done = 0, k = 0; done < 2 * calls; ++k) {
    const int on = (k % 4 == 0 || k % 4 == 3) ? 1 : 0;
    torch::jit::Stack toggle{c10::IValue(on == 1)};
    set_gpu_timing.callBoxed(&toggle);
    const int64_t n = std::min(batch, 2 * calls - done);
    ns[on] += timed_batch(op, inputs, engines, done, n);
    made[on] += n;
    cuda->synchronizeDevice(device);
    done += n;
  }
  torch::jit::Stack restore{c10::IValue(true)};
  set_gpu_timing.callBoxed(&restore);
  for (int on = 0; on < 2; ++on) ns_per_call[on] = made[on] > 0 ? ns[on] / made[on] : 0;
}

// The arguments of synced_loop and toggled_loop, popped off the stack: (inputs, engines, calls,
// batch, device).
struct BatchedArgs {
  c10::IValue inputs;
  c10::List<c10::IValue> engines;
  int64_t calls, batch;
  c10::DeviceIndex device;
};

BatchedArgs pop_batched_args(torch::jit::Stack* stack, const char* name) {
  const int64_t device = stack->back().toInt(); stack->pop_back();
  const int64_t batch = stack->back().toInt(); stack->pop_back();
  const int64_t calls = stack->back().toInt(); stack->pop_back();
  const c10::IValue engines = stack->back(); stack->pop_back();
  const c10::IValue inputs = stack->back(); stack->pop_back();
  TORCH_CHECK(calls > 0 && batch > 0, name, ": calls and batch must be positive");
  return {inputs, engines.toList(), calls, batch, static_cast<c10::DeviceIndex>(device)};
}

// synced_loop(inputs, engines, calls, batch, device) -> host ns per call (one calling thread).
static void synced_loop(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const BatchedArgs a = pop_batched_args(stack, "synced_loop");
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tensorrt::execute_engine", "");
  stack->push_back(c10::IValue(calls_in_synced_batches(op, a.inputs, a.engines, a.calls, a.batch, a.device)));
}

// toggled_loop(inputs, engines, calls, batch, device) -> [host ns per call GPU timing off, on]
static void toggled_loop(const c10::OperatorHandle&, torch::jit::Stack* stack) {
  const BatchedArgs a = pop_batched_args(stack, "toggled_loop");
  const auto op = c10::Dispatcher::singleton().findSchemaOrThrow("tensorrt::execute_engine", "");
  double ns[2];
  calls_toggling_gpu_timing(op, a.inputs, a.engines, a.calls, a.batch, a.device, ns);
  stack->push_back(c10::IValue(std::vector<double>{ns[0], ns[1]}));
}

TORCH_LIBRARY(trt_trace_bench, m) {
  m.def("toggled_loop(Tensor[] inputs, Any engines, int calls, int batch, int device) -> float[]",
        torch::CppFunction::makeFromBoxedFunction<&toggled_loop>());
  m.def("boxed_loop(Tensor[] inputs, Any engines, int calls, int threads) -> float",
        torch::CppFunction::makeFromBoxedFunction<&boxed_loop>());
  m.def("synced_loop(Tensor[] inputs, Any engines, int calls, int batch, int device) -> float",
        torch::CppFunction::makeFromBoxedFunction<&synced_loop>());
}
"""

WORKER = r"""
import contextlib, json, os, sys, tempfile, torch
from torch.utils import cpp_extension
calls, engines, threads, repeats, src, build, cuda, gpu_every, batch, which = sys.argv[1:11]
calls, engines, threads, repeats, cuda = int(calls), int(engines), int(threads), int(repeats), cuda == "1"
gpu_every, batch = [int(n) for n in gpu_every.split(",")], int(batch)
import trt_trace
from trt_trace import standin
try:  # the package's layers; a BASELINE from before them has these modules at the package's top
    from trt_trace.native import ops
    from trt_trace.schema.records import STATS_COLUMNS
except ImportError:
    from trt_trace import ops
    from trt_trace.records import STATS_COLUMNS
standin.load()
trt_trace._library.load()
cpp_extension.load_inline("trt_trace_bench", [open(src).read()], build_directory=build, is_python_module=False,
                          extra_cflags=["-O2"], verbose=False)
if cuda and not torch.cuda.is_available():
    sys.exit("--cuda: torch sees no CUDA device here")
if cuda and not ops.set_gpu_timing(True):
    sys.exit("--cuda: this trt_trace build has no GPU timing (build it with torch with CUDA and a CUDA toolkit)")
es = [standin.make_engine(f"bench_engine_{i}", device=0 if cuda else -1) for i in range(engines)]
x = [torch.ones(4, device="cuda" if cuda else "cpu")]
if cuda:
    def loop(x, es, n, threads):
        return torch.ops.trt_trace_bench.synced_loop(x, es, n, batch, 0)
else:
    loop = torch.ops.trt_trace_bench.boxed_loop
gpu_modes = {("tracing on + GPU events" if n == 1 else f"tracing on + GPU events 1 in {n}"): n for n in gpu_every}
HELD = "GPU events, drainer held"
toggled_modes = {f"toggled per batch, 1 in {n}": n for n in gpu_every}
TOGGLED_HELD = f"toggled per batch, 1 in {gpu_every[0]}, drainer held"
toggled_modes[TOGGLED_HELD] = gpu_every[0]
# For each N of a few calls or more: the same with GPU timing's own steps timed inside the calls, and
# with a caller-stream wait on every measured call (TRT_TRACE_CALLER_WAIT_EVERY=1: four events on each
# measured call of an engine on its own stream, not only on 1 in 8).
sampled = [n for n in gpu_every if n <= 64]
STEPS = {f"toggled per batch, 1 in {n}, steps timed": n for n in sampled}
ALL_WAITS = {f"toggled per batch, 1 in {n}, caller wait every call": n for n in sampled}
toggled_modes.update(STEPS)
toggled_modes.update(ALL_WAITS)
cuda_modes = [*gpu_modes, HELD, *toggled_modes] if cuda else []
modes = ["not installed", "installed, off", "tracing on", *cuda_modes, "flight recorder", "torch.profiler"]
if which == "profiler":  # torch.profiler beside its own baseline
    modes = ["not installed", "torch.profiler"]
elif which == "all but profiler":
    modes.remove("torch.profiler")
results = {m: [] for m in modes if m not in toggled_modes}
toggled = {m: {"off": [], "on": []} for m in toggled_modes} if cuda else {}
# STEPS modes: their N, and per step ns in all and times run (ops.gpu_self_time).
steps = {m: {"every": n, "by_step": {}} for m, n in STEPS.items()} if cuda else {}
col = {name: i for i, name in enumerate(STATS_COLUMNS)}
checks = {m: [] for m in gpu_modes} if cuda else {}

def timed(mode):
    # The calls warmed up, then timed into the mode's results.
    loop(x, es, 200, threads)
    results[mode].append(loop(x, es, calls, threads))

def gpu_session(d, mode, n):
    # The session's own counts (live counters since reset): spans measured and calls sampled out.
    ops.reset()
    with trt_trace.tracing(os.path.join(d, "g.json"), gpu=True, gpu_every=n, buffer_events=8 * (calls + 200)):
        timed(mode)
    stats = ops.engine_stats()
    made = (200 + calls) * threads
    spans, out = int(stats[:, col["gpu_calls"]].sum()), int(stats[:, col["gpu_sampled_out"]].sum())
    checks[mode].append((made, spans, out))
    # Per thread and engine, any n calls in a row hold exactly one that is measured.
    if spans + out != made or (spans != made if n == 1 else abs(spans - made / n) > engines * threads):
        sys.exit(f"{mode}: {spans} GPU spans and {out} calls sampled out of {made} CUDA calls; expected "
                 f"{made / n:.0f} spans (1 in {n}): GPU timing did not do what this mode measures")

def held_drainer_session(d, mode):
    # GPU events on every call, the session's drainer kept from running while the calls are timed
    # (Drainer.held): no span is resolved meanwhile, so whatever this mode costs beyond "tracing on"
    # is the calling thread's own; the difference to "GPU events" is what resolution running beside
    # the calls costs them.
    ops.reset()
    with trt_trace.tracing(os.path.join(d, "h.json"), gpu=True, buffer_events=8 * (calls + 200)) as session:
        with session.drainer.held():
            timed(mode)

def toggled_session(d, mode, n):
    # One session, GPU timing (1 in n) switched on and off between batches by the C++ loop: the
    # calls' own added host time, paired batch by batch (the drainer's work falls on both halves).
    # TOGGLED_HELD keeps the drainer from running meanwhile: its CUDA calls can't contend with the
    # calls' own, which the halves would otherwise share unequally (the on half makes more).
    # STEPS times GPU timing's own steps inside the calls (two clock reads per step more): how much
    # of the added time they are, and which of them costs what inside a whole call. ALL_WAITS gives
    # every measured call its caller-stream wait (the session reads the variable when it starts).
    if mode in ALL_WAITS:
        os.environ["TRT_TRACE_CALLER_WAIT_EVERY"] = "1"
    try:
        with trt_trace.tracing(os.path.join(d, "s.json"), gpu=True, gpu_every=n,
                               buffer_events=8 * (2 * calls + 200)) as session:
            loop(x, es, 200, threads)
            ops.gpu_self_time(mode in STEPS)  # (what it returns is the warm-up's)
            with session.drainer.held() if mode == TOGGLED_HELD else contextlib.nullcontext():
                off, on = torch.ops.trt_trace_bench.toggled_loop(x, es, calls, batch, 0)
            own = ops.gpu_self_time(False)
    finally:
        os.environ.pop("TRT_TRACE_CALLER_WAIT_EVERY", None)
    if mode in STEPS:
        for step, (ns, times) in own.items():
            total = steps[mode]["by_step"].setdefault(step, [0, 0])
            total[0] += ns
            total[1] += times
    toggled[mode]["off"].append(off)
    toggled[mode]["on"].append(on)

def run_mode(d, mode):
    if mode == "not installed":
        torch.ops.trt_trace._install_hook(False)
        timed(mode)
        torch.ops.trt_trace._install_hook(True)
    elif mode == "installed, off":
        timed(mode)
    elif mode == "tracing on":
        # A buffer that holds every record of a loop: calls whose records were dropped would cost less.
        with trt_trace.tracing(os.path.join(d, "t.json"), gpu=False, buffer_events=8 * (calls + 200)):
            timed(mode)
    elif mode in gpu_modes:
        gpu_session(d, mode, gpu_modes[mode])
    elif mode == HELD:
        held_drainer_session(d, mode)
    elif mode in toggled_modes:
        toggled_session(d, mode, toggled_modes[mode])
    elif mode == "flight recorder":
        trt_trace.flight(60, os.path.join(d, "f.json"), gpu=False, buffer_events=8 * (calls + 200))
        timed(mode)
        trt_trace.stop()
    elif mode == "torch.profiler":
        torch.ops.trt_trace._install_hook(False)  # the profiler alone, without trt_trace's scopes in it
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            timed(mode)
        torch.ops.trt_trace._install_hook(True)
    if cuda:
        torch.cuda.synchronize()

with tempfile.TemporaryDirectory() as d:
    with trt_trace.tracing(os.path.join(d, "warm.json")):
        loop(x, es, 2000, threads)  # first-call costs, engine registration, observer set-up
    for r in range(repeats):
        # Each repeat starts one mode later: no mode always follows the same one (a session's end,
        # say), and slow drift of the machine falls on every mode alike.
        for mode in modes[r % len(modes):] + modes[:r % len(modes)]:
            run_mode(d, mode)
print(json.dumps({"results": results, "checks": checks, "toggled": toggled, "steps": steps, "held": HELD}))
"""

# (+ "tracing on + GPU events", "... 1 in N" and the held-drainer mode with --cuda: the worker names them)
MODES = ("not installed", "installed, off", "tracing on", "flight recorder", "torch.profiler")


def paired_added(results: dict[str, list[float]], mode: str, base: str) -> tuple[float, float, float]:
    """`mode`'s added ns per call over `base`, from the two's runs in the same repeat: the median of
    those differences and its quartiles (the repeats drift together; their differences drift less)."""
    diffs = [m - b for m, b in zip(results[mode], results[base], strict=True)]
    if len(diffs) < 2:
        return diffs[0], diffs[0], diffs[0]
    q1, med, q3 = statistics.quantiles(diffs, n=4)
    return statistics.median(diffs), q1, q3


def print_gpu_timing(results: dict[str, list[float]], checks: dict[str, list[list[int]]], held: str) -> None:
    """The GPU modes beside GPU timing off (tracing on), as paired differences and ratios; `held`: the
    worker's name of the held-drainer mode."""
    off = statistics.median(results["tracing on"])
    first = "tracing on + GPU events"  # every call gets GPU events (--gpu-every 1)
    every_call = paired_added(results, first, "tracing on")[0] if first in results else 0.0
    print("  GPU timing, host ns per traced CUDA call (medians; added: median and quartiles of the")
    print("  differences to GPU timing off in the same repeat; modes interleaved in one process):")
    print(f"    {'GPU timing off (tracing on)':34s} {off:9.0f} ns")
    for mode in [*checks, held]:
        if mode not in results:
            continue
        med = statistics.median(results[mode])
        added, q1, q3 = paired_added(results, mode, "tracing on")
        line = f"    {mode:34s} {med:9.0f} ns  added {added:+7.0f} ns ({q1:+.0f} to {q3:+.0f}), {med / off:5.3f} x off"
        if mode != first and every_call > 0:
            line += f", {added / every_call:5.2f} x every call's"
        if mode in checks:
            made, spans, out = (sum(r[k] for r in checks[mode]) for k in range(3))
            line += f"  [{spans} spans, {out} sampled out of {made} calls]"
        print(line, flush=True)


def print_toggled(toggled: dict[str, dict[str, list[float]]]) -> None:
    """GPU timing switched on and off between batches of one session: the calls' own added cost."""
    print("  GPU timing toggled per batch in one session (on, off, off, on, ...), host ns per call; added:")
    print("  median and quartiles over repeats of on - off (resolution beside the calls falls on both):")
    for mode, runs in toggled.items():
        added, q1, q3 = paired_added(runs, "on", "off")
        print(f"    {mode:34s} off {statistics.median(runs['off']):9.0f}  on {statistics.median(runs['on']):9.0f}  "
              f"added {added:+7.0f} ns ({q1:+.0f} to {q3:+.0f})", flush=True)


def print_steps(steps: dict[str, dict], toggled: dict[str, dict[str, list[float]]]) -> None:
    """GPU timing's own steps, timed inside the calls of the "steps timed" toggled modes (the worker's
    {mode: {"every": N, "by_step": {step: [ns, times]}}}): ns per measured call (a call is measured when
    its begin step ran), beside the mode's added time per measured call."""
    for mode, timed in steps.items():
        by_step, every = timed["by_step"], timed["every"]
        measured = by_step.get("begin", [0, 0])[1]
        if measured == 0:
            continue
        added = paired_added(toggled[mode], "on", "off")[0]
        own = sum(ns for ns, _ in by_step.values()) / measured
        parts = ", ".join(f"{step} {ns / measured:.0f} ns ({times / measured:.2f} per call)"
                          for step, (ns, times) in by_step.items())
        print(f"  GPU timing's own steps inside the calls ({mode}; {measured} measured calls): {parts};")
        print(f"    in all {own:.0f} ns per measured call, of the {added * every:+.0f} ns the mode adds per "
              "measured call", flush=True)


def run_worker(argv: list[str], env: dict[str, str], which: str) -> dict | None:
    """One worker process over the modes `which` says ("all", "all but profiler", "profiler": torch.profiler
    and "not installed"); its JSON, or None after printing why it failed."""
    out = subprocess.run([sys.executable, "-c", WORKER, *argv, which], env=env, capture_output=True, text=True,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        print(out.stderr[-3000:], file=sys.stderr)
        print(f"FAILED: the benchmark's worker exited with {out.returncode} (above)", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--engines", type=int, nargs="+", default=[1])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--cuda", action="store_true", help="CUDA stand-in engine and inputs; adds tracing on + GPU events")
    ap.add_argument("--gpu-every", type=int, nargs="+", default=[1, 8],
                    help="with --cuda: the GPU-timing sampling settings to measure (1: every call)")
    ap.add_argument("--no-engine-stream", action="store_true",
                    help="with --cuda: TRT_TRACE_ENGINE_STREAM=0 (two events per call, on the caller's stream)")
    ap.add_argument("--batch", type=int, default=32,
                    help="with --cuda: calls between two device synchronisations (not timed)")
    args = ap.parse_args()
    if args.cuda and (args.threads != [1] or min(args.gpu_every) < 1 or args.batch < 1):
        ap.error("--cuda runs one calling thread (--threads 1), --gpu-every values >= 1 and --batch >= 1")
    build = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "trt_trace" / "bench_ext"
    build.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(LOOP_SRC)
        src = f.name
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_QUIET"] = "1"
    if args.no_engine_stream:
        env["TRT_TRACE_ENGINE_STREAM"] = "0"
    for engines in args.engines:
        for threads in args.threads:
            argv = [str(args.calls), str(engines), str(threads), str(args.repeats), src, str(build),
                    "1" if args.cuda else "0", ",".join(str(n) for n in dict.fromkeys(args.gpu_every)), str(args.batch)]
            if args.cuda:
                # A process that has run torch.profiler pays more for its CUDA calls afterwards (the
                # GPU-event probe read 2.3 us in a fresh process and 6.7 us in one that had profiled,
                # same machine, same hour; CUPTI staying loaded is the suspect): it runs in a process
                # of its own, beside a "not installed" of that process.
                doc = run_worker(argv, env, "all but profiler")
                prof_doc = run_worker(argv, env, "profiler")
                if doc is None or prof_doc is None:
                    return 1
            else:
                doc = prof_doc = run_worker(argv, env, "all")
                if doc is None:
                    return 1
            results, checks, toggled = doc["results"], doc["checks"], doc["toggled"]
            base = statistics.median(results["not installed"])
            print(f"engines={engines} threads={threads} calls/thread={args.calls} repeats={args.repeats}"
                  + (f" cuda: batches of {args.batch} calls, device synchronised between them" if args.cuda else ""))
            for mode, v in results.items():
                med = statistics.median(v)
                print(f"  {mode:31s} {med:9.0f} ns/call  (+{med - base:6.0f} ns)  spread {min(v):.0f}-{max(v):.0f}")
            on = statistics.median(results["tracing on"]) - base
            prof_base = statistics.median(prof_doc["results"]["not installed"])
            prof = statistics.median(prof_doc["results"]["torch.profiler"]) - prof_base
            where = " (its own process)" if prof_doc is not doc else ""
            print(f"  tracing on adds {on:.0f} ns = {on / prof:.2f} x torch.profiler's {prof:.0f} ns{where}",
                  flush=True)
            flight = statistics.median(results["flight recorder"]) - base
            print(f"  flight recorder adds {flight:.0f} ns = {flight / on:.2f} x tracing on", flush=True)
            if checks:
                print_gpu_timing(results, checks, doc["held"])
            if toggled:
                print_toggled(toggled)
                print_steps(doc["steps"], toggled)
    return 0


if __name__ == "__main__":
    sys.exit(main())
