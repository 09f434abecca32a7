"""trt_trace against the REAL Torch-TensorRT 2.11 runtime over a fake TensorRT, on a GPU machine.

    python tools/device/real_runtime_check.py --fake DIR --runtime libtorchtrt_runtime.so   (see device_check.sh)

DIR holds libnvinfer.so.10 / libnvinfer_plugin.so.10 built by tests/faketrt/build.sh; the runtime
library is torch_tensorrt/lib/libtorchtrt_runtime.so from the torch-tensorrt 2.11.0 wheel. Load
order: the fake libraries (RTLD_GLOBAL), then the runtime. Each check prints PASS/FAIL with its
figures; the exit status is non-zero if any failed. GPU span / truth figures (the fake measures its
own GPU work with CUDA events on the stream it is given) are MET/MISS lines against the 3% + 2 us
goal, which the exit status ignores; they go to BENCHMARKS.md.

The layers check runs per-layer timing (TRT_TRACE_LAYERS, docs/layers.md) through the real runtime's own
profiling methods over the fake's layered engines, eagerly and inside an AOTInductor package in a fresh
process with only TRT_TRACE_OUT and TRT_TRACE_LAYERS set, against what the fake reported per layer.

The torch_tensorrt_import check runs `import torch_tensorrt` itself (its Python package from the same
wheel, the real TensorRT Python bindings, both under --python; `import tensorrt` from the project's
shim) in a fresh process; tools/device/fetch_real_runtime.sh fetches them. The python_runtime check runs
the same package's own Python runtime (PythonTorchTensorRTModule: TensorRT's Python bindings, no
tensorrt::execute_engine) in a fresh process with only TRT_TRACE_OUT set, on three threads. The
python_runtime_layers check runs that class with TRT_TRACE_OUT and TRT_TRACE_LAYERS alone over the fake's
layered engine: trt_trace's own trt.IProfiler subclass set as the context's profiler through the real
bindings (the fake's setProfiler / getProfiler, its reportLayerTime calls back into Python), each layer
against what the fake reported to it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import traceback
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent  # tools/device
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "faketrt"))
sys.path.insert(0, str(HERE))
import capture_checks  # noqa: E402
import faketrt  # noqa: E402

failures = 0
SIZES_US = (10, 40, 150, 400)


def check(name: str, ok: bool, detail: str = "") -> None:
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def guarded(fn):  # noqa: ANN001, ANN201
    """A check that raises is one FAIL line (its first line), and the others still run."""
    def run(*a, **k):  # noqa: ANN002, ANN003, ANN202
        try:
            fn(*a, **k)
        except Exception as e:  # noqa: BLE001
            check(fn.__name__, False, f"raised {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            traceback.print_exc(limit=3)
    return run


def load_runtime(fake_dir: str, runtime: str) -> None:
    import torch

    faketrt.load(fake_dir)
    torch.ops.load_library(runtime)


def calls_of(path: str) -> dict[int, dict]:
    """{call_id: {"engine": name, "error": bool, "captured": bool, slice name: (ts_us, dur_us)}}"""
    from trt_trace.analysis.trace_summary import load_events

    out: dict[int, dict] = {}
    for e in load_events(path):
        if e.get("ph") == "X" and e.get("cat") == "trt_trace":
            c = out.setdefault(e["args"]["call_id"], {})
            c[e["name"]] = (e["ts"], e["dur"])
            if e["name"] == "gpu":
                c["gpu_stream"] = e["args"].get("stream")
            if e["name"] == "execute_engine":
                c["engine"] = e["args"]["engine"]
                c["error"] = bool(e["args"].get("error"))
                c["captured"] = bool(e["args"].get("captured"))
                c["thread"] = e["args"].get("thread")
    return out


HOST_PHASES = ("workspace", "inputs", "outputs", "enqueue")


def partitioned(c: dict) -> bool:
    """The host phases tile the call exactly (to the trace's ns precision)."""
    ts, dur = c["execute_engine"]
    phases = sorted(c[p] for p in HOST_PHASES if p in c)
    t = ts
    for a, d in phases:
        if abs(a - t) > 0.002:
            return False
        t = a + d
    return abs(t - (ts + dur)) <= 0.002


def whole(c: dict) -> bool:
    """A call with all four host phases, tiling it, and a GPU span."""
    return all(p in c for p in (*HOST_PHASES, "gpu")) and partitioned(c)


def phase_line(calls: list[dict]) -> str:
    parts = []
    for p in (*HOST_PHASES, "gpu"):
        v = [c[p][1] for c in calls if p in c]
        parts.append(f"{p} {statistics.median(v):.1f} us ({len(v)})" if v else f"{p} -")
    return ", ".join(parts)


def traced(path: str, fn) -> list[dict]:  # noqa: ANN001
    import torch

    import trt_trace

    with trt_trace.tracing(path):
        fn()
        torch.cuda.synchronize()
    return [c for _, c in sorted(calls_of(path).items())]


def engine_calls(engine, x, n: int, outs: list | None = None, clone: bool = False):  # noqa: ANN001, ANN201
    """A function making n calls of `engine` on [x], keeping each output in `outs` (cloned: a CUDA
    graph replay reuses its output buffer)."""
    import torch

    def run() -> None:
        for _ in range(n):
            y = torch.ops.tensorrt.execute_engine([x], engine)[0]
            if outs is not None:
                outs.append(y.clone() if clone else y)
    return run


@contextmanager
def switched_on(switch):  # noqa: ANN001, ANN201
    """A runtime mode on for the block, off after it whatever happens: switch(True), then switch(False)."""
    switch(True)
    try:
        yield
    finally:
        switch(False)


# ---- checks (each traced into its own file under d) ----------------------------------------

@guarded
def eager_streams(d: Path) -> None:
    import torch

    plan = faketrt.Plan("_run_on_acc_0_engine", gpu_us=20)
    engine = faketrt.make_engine(plan)
    text = str(engine)
    check("engine name from the real __str__", text.splitlines()[1:2] == ["  Name: _run_on_acc_0_engine"],
          repr(text.splitlines()[:2]))
    x = torch.randn(64, 256, device="cuda")
    for label, stream in (("default stream", None), ("own stream", torch.cuda.Stream())):
        outs = []

        def run(stream=stream, outs=outs) -> None:
            with torch.cuda.stream(stream or torch.cuda.current_stream()):
                engine_calls(engine, x, 20, outs)()
        calls = traced(str(d / f"eager_{label[:3]}.json"), run)
        caller = (stream or torch.cuda.current_stream()).cuda_stream
        st = faketrt.stats(plan.name)
        ok = all(torch.equal(o, x) for o in outs)
        check(f"eager, caller on {label}: 20 calls traced, named, 4 phases each, GPU spans, outputs right",
              ok and len(calls) == 20 and all(c["engine"] == plan.name for c in calls) and all(map(whole, calls)),
              f"{len(calls)} calls; {phase_line(calls)}; engine ran on "
              f"{'its own stream' if st['last_stream'] != caller else 'the caller stream'}")


@guarded
def dynamic_workspace(d: Path) -> None:
    import torch

    ws = 64 << 20
    plan = faketrt.Plan("_run_on_acc_dyn_engine", gpu_us=10, workspace=ws)
    engine = faketrt.make_engine(plan, dynamic=True)
    x = torch.randn(32, 32, device="cuda")
    torch.ops.tensorrt.execute_engine([x], engine)  # warm the allocator
    before = faketrt.stats(plan.name)["device_memory_sets"]
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        calls = traced(str(d / "dynamic.json"), engine_calls(engine, x, 10))
    sets = faketrt.stats(plan.name)["device_memory_sets"] - before
    events = prof.events()
    scopes = [e for e in events if e.name == f"trt::{plan.name}/workspace"]
    allocs = [e for e in events if e.name == "aten::empty"
              and any(s.time_range.start <= e.time_range.start and e.time_range.end <= s.time_range.end
                      for s in scopes)]
    check("dynamic allocation: the workspace tensor is allocated inside the `workspace` phase of every call",
          len(calls) == 10 and len(scopes) == 10 and len(allocs) == 10 and sets == 10 and all(map(partitioned, calls)),
          f"{len(calls)} calls, {len(scopes)} workspace scopes holding {len(allocs)} aten::empty, "
          f"setDeviceMemory x{sets} ({ws >> 20} MiB each); {phase_line(calls)}")


@guarded
def preallocated_and_output_allocator(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_pre_engine", gpu_us=10)
    engine = faketrt.make_engine(plan)
    try:
        engine.use_pre_allocated_outputs = True
        mode = "use_pre_allocated_outputs = True"
    except Exception as e:  # noqa: BLE001
        mode = f"could not switch on ({type(e).__name__})"
    outs: list = []
    calls = traced(str(d / "prealloc.json"), engine_calls(engine, x, 10, outs))
    check("pre-allocated outputs: phases partition every call, outputs right",
          len(calls) == 10 and all(map(partitioned, calls)) and all(torch.equal(o, x) for o in outs),
          f"{mode}; {sum('outputs' in c for c in calls)}/10 calls with an outputs phase; {phase_line(calls)}")

    plan = faketrt.Plan("_run_on_acc_oa_engine", gpu_us=10)
    engine = faketrt.make_engine(plan, requires_output_allocator=True)
    outs = []
    calls = traced(str(d / "output_allocator.json"), engine_calls(engine, x, 10, outs))
    st = faketrt.stats(plan.name)
    check("output-allocator mode: phases partition every call, outputs right, the allocator asked per call",
          len(calls) == 10 and all(map(partitioned, calls)) and all(torch.equal(o, x) for o in outs)
          and st["allocator_calls"] == 10,
          f"reallocateOutputAsync x{st['allocator_calls']}; {phase_line(calls)}")


@guarded
def cuda_graphs(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_cg_engine", gpu_us=30)
    engine = faketrt.make_engine(plan)
    outs: list = []
    with switched_on(torch.ops.tensorrt.set_cudagraphs_mode):
        calls = traced(str(d / "cudagraphs.json"), engine_calls(engine, x, 10, outs, clone=True))
    st = faketrt.stats(plan.name)
    check("set_cudagraphs_mode(True): capture + 10 replays traced, none flagged captured (they ran), GPU spans",
          len(calls) == 10 and not any(c["captured"] for c in calls) and all("gpu" in c for c in calls)
          and all(torch.equal(o, x) for o in outs) and st["captured"] == 1 and all(map(partitioned, calls)),
          f"enqueueV3 x{st['enqueues']} (captured x{st['captured']}); first call "
          f"{calls[0]['execute_engine'][1]:.0f} us,"
          f" replays {statistics.median(c['execute_engine'][1] for c in calls[1:]):.0f} us; {phase_line(calls[1:])}")

    # The caller captures a whole graph around an engine call: flagged captured, no GPU span.
    plan = faketrt.Plan("_run_on_acc_usergraph_engine", gpu_us=30)
    engine = faketrt.make_engine(plan)
    torch.ops.tensorrt.execute_engine([x], engine)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    box: dict = {}

    def capture() -> None:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            with torch.cuda.graph(g, stream=s):
                box["y"] = torch.ops.tensorrt.execute_engine([x], engine)[0]
        g.replay()
    try:
        calls = traced(str(d / "user_graph.json"), capture)
        check("a caller's own CUDA graph capture of an engine call: traced, flagged captured, no GPU span",
              len(calls) == 1 and calls[0]["captured"] and "gpu" not in calls[0] and torch.equal(box["y"], x),
              f"{len(calls)} call(s), captured={calls[0]['captured'] if calls else None}")
    except Exception as e:  # noqa: BLE001 (the runtime itself may refuse a caller's capture)
        print(f"INFO  caller-captured CUDA graph: the runtime refused it ({type(e).__name__}: "
              f"{str(e).splitlines()[0][:160] if str(e) else ''})")


@guarded
def runtime_profiling(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_prof_engine", gpu_us=20)
    engine = faketrt.make_engine(plan)
    prof_dir = d / "runtime_profile"
    prof_dir.mkdir()
    engine.profile_path_prefix = str(prof_dir)
    with switched_on(lambda on: engine.enable_profiling() if on else engine.disable_profiling()):
        calls = traced(str(d / "runtime_profiling.json"), engine_calls(engine, x, 5))
    files = sorted(p.name for p in prof_dir.rglob("*") if p.is_file())
    st = faketrt.stats(plan.name)
    check("the runtime's own enable_profiling() while trt_trace traces: both work",
          len(calls) == 5 and all(map(partitioned, calls)) and st["profiler_reports"] == 5 and len(files) > 0,
          f"{len(calls)} calls traced; per-layer reports x{st['profiler_reports']}; runtime wrote {len(files)} "
          f"file(s): {files[:5]}")


@guarded
def multi_device_safe_mode(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_md_engine", gpu_us=10)
    engine = faketrt.make_engine(plan)
    outs: list = []
    with switched_on(torch.ops.tensorrt.set_multi_device_safe_mode):
        calls = traced(str(d / "multi_device.json"), engine_calls(engine, x, 5, outs))
    check("multi-device safe mode: calls traced with phases and GPU spans, outputs right",
          len(calls) == 5 and all(map(partitioned, calls)) and all("gpu" in c for c in calls)
          and all(torch.equal(o, x) for o in outs), phase_line(calls))


@guarded
def two_threads(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_mt_engine", gpu_us=20, host_us=100)
    engine = faketrt.make_engine(plan)
    torch.ops.tensorrt.execute_engine([x], engine)
    wrong = []

    def worker() -> None:
        for _ in range(50):
            if not torch.equal(torch.ops.tensorrt.execute_engine([x], engine)[0], x):
                wrong.append(1)

    def run() -> None:
        ts = [threading.Thread(target=worker) for _ in range(2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    calls = traced(str(d / "threads.json"), run)
    threads = {c["thread"] for c in calls}
    waits = sorted(c["workspace"][1] for c in calls if "workspace" in c)
    check("two threads on one engine: every call traced from both threads, phases partition, outputs right",
          len(calls) == 100 and len(threads) == 2 and not wrong and all(map(partitioned, calls)),
          f"{len(calls)} calls from {len(threads)} threads; workspace (holds the engine lock wait) median "
          f"{statistics.median(waits):.1f} us, max {waits[-1]:.1f} us")


@guarded
def failing_enqueue(d: Path) -> None:
    import torch

    x = torch.randn(16, 128, device="cuda")
    for stage in ("enqueue", "infer_shapes"):
        plan = faketrt.Plan(f"_run_on_acc_fail_{stage}_engine", gpu_us=10, fail_every=3, fail_stage=stage)
        engine = faketrt.make_engine(plan)
        errors: list[str] = []

        def run(engine=engine, errors=errors) -> None:
            for _ in range(9):
                try:
                    torch.ops.tensorrt.execute_engine([x], engine)
                except RuntimeError as e:
                    errors.append(str(e).strip().splitlines()[-1] if str(e) else "")
        calls = traced(str(d / f"failing_{stage}.json"), run)
        flagged = [c for c in calls if c["error"]]
        failed = faketrt.stats(plan.name)["failed"]
        detail = (f"{failed} failures in {stage}, {len(errors)} exceptions ({errors[0][:100] if errors else ''!r}), "
                  f"{len(flagged)} calls flagged error of {len(calls)}")
        if stage == "enqueue" and not errors:
            # 2.11's standard path logs a failed enqueueV3 but does not raise: nothing reaches the caller.
            check("failing enqueueV3: the runtime logs it and returns; trt_trace flags no error where none was "
                  "raised", failed == 3 and not flagged and len(calls) == 9, detail)
            continue
        check(f"failing {stage}: the exception reaches the caller, the call is flagged error, later calls traced",
              failed == 3 and len(errors) == 3 and len(flagged) == 3 and len(calls) == 9
              and not any("gpu" in c for c in flagged), detail)


@guarded
def aliases(d: Path) -> None:
    import torch

    ns = torch.ops.tensorrt
    have = {op: hasattr(ns, op) for op in ("execute_engine", "set_cudagraphs_mode", "set_multi_device_safe_mode",
                                           "set_profile_execution", "dump_engine_timing")}
    x = torch.randn(16, 128, device="cuda")
    plan = faketrt.Plan("_run_on_acc_alias_engine", gpu_us=10)
    engine = faketrt.make_engine(plan)
    torch.ops.trt_trace.reset()
    ns.set_profile_execution(True)
    for _ in range(7):
        ns.execute_engine([x], engine)
    torch.cuda.synchronize()
    table = ns.dump_engine_timing()
    ns.set_profile_execution(False)
    row = [ln for ln in table.splitlines() if ln.startswith(plan.name)]
    check("torch.ops.tensorrt.set_profile_execution / dump_engine_timing beside the runtime's own ops",
          all(have.values()) and len(row) == 1 and row[0].split()[1] == "7",
          f"ops {have}; table row {row[0] if row else None!r}")
    print("\n".join("      " + ln for ln in table.splitlines()))


# ---- GPU spans against the engine's own GPU work ---------------------------------------------

WAIT = "caller stream wait"


def span_rows(calls: list[dict], truth: dict[str, list[int]],
              span: str = "gpu") -> dict[str, list[tuple[float, float]]]:
    """Per engine: (span us, truth us) per call in call order; span: "gpu" (the engine's own work) or
    WAIT (what the caller's stream waited)."""
    out: dict[str, list[tuple[float, float]]] = {}
    by_engine: dict[str, list[dict]] = {}
    for c in calls:
        by_engine.setdefault(c["engine"], []).append(c)
    for name, cs in by_engine.items():
        t = truth.get(name, [])
        if len(t) == len(cs):
            out[name] = [(c[span][1], w / 1000) for c, w in zip(cs, t, strict=True) if span in c]
    return out


def goal(name: str, met: bool, detail: str) -> None:
    """A target that is measured and reported, not a correctness check (the exit status ignores it):
    GPU spans within 3% + 2 us of the engine's work is out of reach of CUDA events (docs/gpu-clock.md)."""
    print(f"{'MET ' if met else 'MISS'}  {name}  {detail}", flush=True)


def ratio_line(r: list[tuple[float, float]]) -> str:
    ratios = [a / b for a, b in r]
    return (f"span/truth median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
            f"span - truth median {statistics.median(a - b for a, b in r):+.2f} us")


def report_spans(label: str, truth: dict[str, list[int]], sizes: dict[str, float],
                 calls: list[dict], caller_stream: int | None = None) -> None:
    rows, waits = span_rows(calls, truth), span_rows(calls, truth, WAIT)
    for name, us in sizes.items():
        r = rows.get(name, [])
        mine = [c for c in calls if c["engine"] == name and "gpu" in c]
        # Queued: the GPU reached the span after the call's host side had ended (the GPU was busy ahead).
        queued = sum(c["gpu"][0] >= c["execute_engine"][0] + c["execute_engine"][1] for c in mine)
        streams = sorted({c.get("gpu_stream") for c in mine}, key=str)
        where = (f"; span streams {streams}" + (f" (caller {caller_stream})" if caller_stream is not None else ""))
        if not r:
            check(f"{label}, {us:.0f} us engine: GPU spans", False, "no spans")
            continue
        within = [abs(a - b) <= 0.03 * b + 2.0 for a, b in r]
        goal(f"{label}, {us:.0f} us engine: GPU span within 3% + 2 us of its own GPU work",
             sum(within) >= 0.95 * len(r),
             f"{sum(within)}/{len(r)} calls; {ratio_line(r)}; truth median "
             f"{statistics.median(b for _, b in r):.1f} us; {queued}/{len(mine)} queued{where}")
        # Where the engine ran on a stream of its own: the first measured call and every
        # get_caller_wait_every()-th after it have a caller-stream wait, around their engine-stream span.
        both = [c for c in mine if WAIT in c]
        if both:
            from trt_trace.native import ops

            every = ops.get_caller_wait_every()
            inside = [c[WAIT][0] - 0.001 <= c["gpu"][0] and c["gpu"][0] + c["gpu"][1] <= sum(c[WAIT]) + 0.001
                      for c in both]
            w = waits.get(name, [])
            check(f"{label}, {us:.0f} us engine: a caller-stream wait around the engine-stream span of 1 in "
                  f"{every} calls", all(inside) and both == mine[::every],
                  f"{sum(inside)}/{len(both)} waits around their spans, on {len(both)} of {len(mine)} calls; "
                  f"wait {ratio_line(w) if w else '-'}")


def size_plans(prefix: str) -> list[faketrt.Plan]:
    return [faketrt.Plan(f"{prefix}_{us}us_engine", gpu_us=us,
                         inputs=(("x", "float32", (-1, -1)),)) for us in SIZES_US]


@guarded
def gpu_truth_eager(d: Path) -> None:
    import torch

    import trt_trace

    plans = size_plans("_run_on_acc_eager")
    engines = [faketrt.make_engine(p) for p in plans]
    x = torch.randn(16, 16, device="cuda")
    for label, stream in (("eager, default stream", None), ("eager, own stream", torch.cuda.Stream())):
        ctx = torch.cuda.stream(stream) if stream is not None else torch.cuda.stream(torch.cuda.current_stream())
        with ctx:
            for e in engines:
                torch.ops.tensorrt.execute_engine([x], e)
            torch.cuda.synchronize()
            for p in plans:
                faketrt.work_ns(p.name)
            path = str(d / f"truth_{'default' if stream is None else 'own'}.json")
            with trt_trace.tracing(path):
                for _ in range(30):
                    torch.cuda._sleep(4_000_000)  # ~2 ms: the GPU busy ahead of the calls
                    for e in engines:
                        torch.ops.tensorrt.execute_engine([x], e)
                torch.cuda.synchronize()
        truth = {p.name: faketrt.work_ns(p.name) for p in plans}
        calls = [c for _, c in sorted(calls_of(path).items())]
        caller = (stream or torch.cuda.current_stream()).stream_id & 0xFFFFFFFF
        report_spans(label, truth, {p.name: p.gpu_us for p in plans}, calls, caller)
    from trt_trace.native import ops

    print(f"      c10 GPU trace reports to trt_trace (engine-stream spans): {ops.gpu_stream_trace_installed()}")


@guarded
def profiler_kernels(d: Path) -> None:
    """Exact kernel time from torch.profiler's CUDA activity (tools/device/capture_checks.py)."""
    capture_checks.profiler_kernels(d, check, faketrt)


@guarded
def nsys_kernels(d: Path, args: argparse.Namespace) -> None:
    """Exact kernel time from an Nsight Systems capture, where nsys runs here (capture_checks.py). Without
    an nsys this is one INFO line, unless the check was asked for by name (--only nsys_kernels)."""
    if capture_checks.find_nsys() is None and not (args.only and "nsys_kernels" in args.only):
        print("INFO  nsys_kernels: no nsys here (carry .nsys from tools/device/fetch_nsys.sh; see nsys_probe.sh)")
        return
    capture_checks.nsys_kernels(d, check, args.fake, args.runtime)


@guarded
def nsys_range(d: Path, args: argparse.Namespace) -> None:
    """TRT_TRACE_CUDA_PROFILER=session under `nsys profile --capture-range=cudaProfilerApi`: the capture holds
    the session's calls and nothing else (capture_checks.py). Without an nsys, one INFO line (as nsys_kernels)."""
    if capture_checks.find_nsys() is None and not (args.only and "nsys_range" in args.only):
        print("INFO  nsys_range: no nsys here (carry .nsys from tools/device/fetch_nsys.sh; see nsys_probe.sh)")
        return
    capture_checks.nsys_range(d, check, args.fake, args.runtime)


# ---- fresh processes: the AOTInductor package, `import torch_tensorrt` --------------------------------

def fresh_process(args: argparse.Namespace, child_mode: str, extra: list[str],
                  env: dict[str, str]) -> tuple[dict | None, str]:
    """This script as `--child child_mode` in a fresh process whose environment has no TRT_TRACE_*
    but `env` (updated over it): the child's last JSON line, or None and why there is none."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    full.update(env)
    cmd = [sys.executable, __file__, "--fake", args.fake, "--runtime", args.runtime, "--child", child_mode, *extra]
    try:
        p = subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=300, cwd="/tmp")
    except subprocess.TimeoutExpired:
        return None, "the child process ran past 300 s"
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = [ln for ln in (p.stderr or p.stdout).strip().splitlines() if ln.strip()][-3:]
        return None, f"child rc {p.returncode}: {tail}"
    return json.loads(lines[-1]), ""


PACKAGE_PLANS = [faketrt.Plan("_run_on_acc_0_engine", gpu_us=3000)] + [
    faketrt.Plan(f"_run_on_acc_{i + 1}_engine", gpu_us=us) for i, us in enumerate(SIZES_US)]


def build_package(path: Path, plans: list[faketrt.Plan] | None = None) -> None:
    import torch

    faketrt.register_export_fakes()
    plans = PACKAGE_PLANS if plans is None else plans

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            for p in plans:
                setattr(self, p.name, faketrt.make_engine(p))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for p in plans:
                x = torch.ops.tensorrt.execute_engine([x], getattr(self, p.name))[0] * 1.0 + 0.5
            return x

    x = torch.randn(16, 16, device="cuda")
    ep = torch.export.export(Model(), (x,), strict=False)
    torch._inductor.aoti_compile_and_package(ep, package_path=str(path))


def child(args: argparse.Namespace) -> int:
    """Runs the package in this fresh process; prints the engines' own GPU work as JSON."""
    import torch

    if args.child == "after":
        load_runtime(args.fake, args.runtime)
        import trt_trace

        trt_trace.start(args.trace)
    else:  # TRT_TRACE_OUT set: tracing started when torch was imported, before the runtime loads
        load_runtime(args.fake, args.runtime)
    runner = torch._inductor.aoti_load_package(args.package)
    plans = LAYER_PLANS if args.layered else PACKAGE_PLANS
    x = torch.randn(16, 16, device="cuda")
    expect = x
    for _ in plans:
        expect = expect * 1.0 + 0.5
    ok = True
    for p in plans:
        faketrt.work_ns(p.name)
    for _ in range(args.runs):
        out = runner(x)
        ok &= bool(torch.allclose(out, expect))
    torch.cuda.synchronize()
    print(json.dumps({"ok": ok, "truth": {p.name: faketrt.work_ns(p.name) for p in plans},
                      "layers": {p.name: faketrt.layer_ns(p.name) for p in plans},
                      "stats": {p.name: faketrt.stats(p.name) for p in plans}}))
    if args.child == "after":
        import trt_trace

        trt_trace.stop()
    return 0


@guarded
def package(d: Path, args: argparse.Namespace) -> None:
    import time

    pkg = d / "engines.pt2"
    t0 = time.time()
    build_package(pkg)
    print(f"      AOTInductor package of {len(PACKAGE_PLANS)} real-runtime engines compiled in "
          f"{time.time() - t0:.0f} s")
    runs = 30
    for mode in ("env", "after"):
        trace = d / f"package_{mode}.json"
        result, why = fresh_process(args, mode, ["--package", str(pkg), "--trace", str(trace), "--runs", str(runs)],
                                    {"TRT_TRACE_OUT": str(trace)} if mode == "env" else {})
        label = ("package in a fresh process, only TRT_TRACE_OUT (tracing before the runtime loads)" if mode == "env"
                 else "package in a fresh process, tracing started after the runtime loaded")
        if result is None or not trace.exists():
            check(label, False, why or f"no {trace.name}")
            continue
        calls = [c for _, c in sorted(calls_of(str(trace)).items())]
        per = {pl.name: sum(c["engine"] == pl.name for c in calls) for pl in PACKAGE_PLANS}
        check(f"{label}: every engine call traced with its name, phases and GPU spans, output right",
              result["ok"] and all(v == runs for v in per.values()) and all("gpu" in c for c in calls)
              and all(map(partitioned, calls)), f"calls per engine {list(per.values())}; {phase_line(calls)}")
        report_spans(f"package ({mode})", result["truth"],
                     {pl.name: pl.gpu_us for pl in PACKAGE_PLANS[1:]}, calls)


# ---- per-layer timing (TRT_TRACE_LAYERS) through the real runtime's own profiling ------------------

# Engines with layers of known length (a spinning kernel each), named as TensorRT names Torch-TensorRT's.
LAYER_PLANS = [
    faketrt.Plan("_run_on_acc_0_engine", layers=(
        ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv1/convolution] + [RELU]-[aten_ops.relu.default]-"
         "[/relu1/relu]", 400),
        ("Reformatting CopyNode for Input Tensor 0 to [MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc/mm]", 20),
        ("[MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc/mm]", 150),
        ("{ForeignNode[/attn/MatMul.../attn/Softmax]}", 1000))),
    faketrt.Plan("_run_on_acc_1_engine", layers=(
        ("[ELEMENTWISE]-[aten_ops.add.Tensor]-[/add/add]", 40), ("__myl_MulAdd_myl0_0", 10))),
]
LAYER_CALLS = 5  # TRT_TRACE_LAYERS
LAYER_RUNS = 30  # calls of each engine: the first, LAYER_CALLS profiled, the rest after the window


def layered_calls(path: str) -> tuple[dict[str, list[dict]], dict[int, list[tuple[str, float]]]]:
    """Per engine its calls in order (calls_of's dicts, with their call id); per call id its layers
    (name, us) in order, from a trace file."""
    from trt_trace.analysis.trace_summary import load_events
    from trt_trace.schema.trace_format import LAYER_CATEGORY

    events = load_events(path)
    by_engine: dict[str, list[dict]] = {}
    for call_id, c in sorted(calls_of(path).items(), key=lambda kv: kv[1].get("execute_engine", (0, 0))[0]):
        if "engine" in c:
            by_engine.setdefault(c["engine"], []).append(dict(c, call_id=call_id))
    layers: dict[int, list[tuple[str, float]]] = {}
    for e in sorted((e for e in events if e.get("cat") == LAYER_CATEGORY), key=lambda e: e["ts"]):
        layers.setdefault(e["args"]["call_id"], []).append((e["name"], e["dur"]))
    return by_engine, layers


def median(v: list[float]) -> float:
    return statistics.median(v) if v else float("nan")


def report_layers(label: str, path: str, truth: dict[str, list[int]], stats: dict[str, dict[str, int]],
                  baseline: tuple[dict[str, list[dict]], ...] | None) -> None:
    """The checks of one layered run: every engine's layers with the right names, each as the fake
    measured it (3% + 2 us), its calls outside the window unsynchronised and as they cost without the switch."""
    by_engine, layers = layered_calls(path)
    for plan in LAYER_PLANS:
        calls = by_engine.get(plan.name, [])
        ids = [c["call_id"] for c in calls]
        names = [n for n, _ in plan.layers]
        profiled = [i for i in ids if i in layers]
        check(f"{label}, {plan.name}: its calls 2-{LAYER_CALLS + 1} (of {len(calls)}) have their {len(names)} layers, "
              "by name, in order", profiled == ids[1:LAYER_CALLS + 1]
              and all([n for n, _ in layers[i]] == names for i in profiled),
              f"profiled calls at {[ids.index(i) + 1 for i in profiled]}")
        got = [us for i in profiled for _, us in layers[i]]
        want = [ns / 1000 for ns in truth.get(plan.name, [])]
        pairs = list(zip(got, want, strict=False))
        within = [abs(a - b) <= 0.03 * b + 2.0 for a, b in pairs]
        check(f"{label}, {plan.name}: each layer's time within 3% + 2 us of its kernel as the fake's events "
              "measured it", len(got) == len(want) == LAYER_CALLS * len(names) and all(within),
              f"{sum(within)}/{len(want)} layers; trace - fake median {median([a - b for a, b in pairs]):+.3f} us; "
              f"largest |diff| {max((abs(a - b) for a, b in pairs), default=float('nan')):.3f} us")
        nominal = list(zip(got, [us for _ in profiled for _, us in plan.layers], strict=False))
        goal(f"{label}, {plan.name}: each layer's time within 3% + 2 us of its kernel's nominal spin",
             bool(got) and all(abs(a - b) <= 0.03 * b + 2.0 for a, b in nominal),
             f"trace / nominal median {median([a / b for a, b in nominal]):.4f}")
        st = stats.get(plan.name, {})
        after = calls[LAYER_CALLS + 1:]
        host_after = median([c["execute_engine"][1] for c in after])
        gpu_work = sum(us for _, us in plan.layers)
        check(f"{label}, {plan.name}: outside the window no call was profiled nor waited for the GPU",
              st.get("profiled_enqueues") == LAYER_CALLS and st.get("waited_enqueues") == LAYER_CALLS
              and (gpu_work < 200 or host_after < 0.5 * gpu_work),
              f"profiled enqueues x{st.get('profiled_enqueues')}, waiting x{st.get('waited_enqueues')}; host p50 "
              f"{host_after:.1f} us after the window for {gpu_work:.0f} us of GPU work")
        window = [c["execute_engine"][1] for c in calls[1:LAYER_CALLS + 1]]
        sums = [sum(us for _, us in layers[i]) for i in profiled]
        spans = [c["gpu"][1] for c in calls[1:LAYER_CALLS + 1] if "gpu" in c]
        print(f"      {plan.name}: profiled call host p50 {median(window):.1f} us, after the window "
              f"{host_after:.1f} us; layers' sum p50 {median(sums):.1f} us, GPU span of the profiled calls p50 "
              f"{median(spans):.1f} us")
        check_layers_verb(label, path, plan.name, names, len(profiled), [c for c in calls[1:LAYER_CALLS + 1]
                                                                           if "gpu" in c])
        if baseline is not None:
            # The plain sessions' calls at the same places (after the first LAYER_CALLS + 1), before and after.
            bases = [b.get(plan.name, [])[LAYER_CALLS + 1:] for b in baseline]
            host_base = [median([c["execute_engine"][1] for c in b]) for b in bases]
            gpu_base = [median([c["gpu"][1] for c in b if "gpu" in c]) for b in bases]
            gpu_after = median([c["gpu"][1] for c in after if "gpu" in c])

            def inside(v: float, brackets: list[float]) -> bool:
                return 0.9 * min(brackets) - 5 <= v <= 1.1 * max(brackets) + 5
            check(f"{label}, {plan.name}: calls after the window cost as without the switch (host and GPU span p50 "
                  "within 10% + 5 us of the plain sessions before and after it)",
                  inside(host_after, host_base) and inside(gpu_after, gpu_base),
                  f"host {host_after:.1f} vs {' / '.join(f'{v:.1f}' for v in host_base)} us; GPU span {gpu_after:.1f} "
                  f"vs {' / '.join(f'{v:.1f}' for v in gpu_base)} us")


def check_layers_verb(label: str, path: str, engine: str, names: list[str], profiled: int, with_gpu: list) -> None:
    """`trt-trace layers --json` (the streamed readers, no torch) on the same trace: the engine's profiled
    calls, its layers by name, and a GPU span for each profiled call."""
    exe = os.path.join(os.path.dirname(sys.executable), "trt-trace")
    done = subprocess.run([exe, "layers", path, "--json"], capture_output=True, text=True, timeout=300)
    doc = json.loads(done.stdout) if done.returncode == 0 else {"engines": []}
    mine = [e for e in doc["engines"] if e["engine"] == engine]
    got = mine[0] if mine else {}
    check(f"{label}, {engine}: trt-trace layers counts its {profiled} profiled calls, its layers and their GPU spans",
          done.returncode == 0 and got.get("profiled_calls") == profiled
          and sorted(r["layer"] for r in got.get("layers", [])) == sorted(names)
          and got.get("gpu_calls") == len(with_gpu) == profiled,
          f"exit {done.returncode}; {done.stderr.strip()[:200]} profiled {got.get('profiled_calls')}, GPU spans "
          f"{got.get('gpu_calls')}, layers / GPU {got.get('layers_vs_gpu')}")


def layer_engine_calls(engines: list, x, runs: int, sync_after: int | None = None):  # noqa: ANN001, ANN201
    """`runs` rounds of a call of each engine, then the device synchronised; sync_after: also after that
    many rounds (a plain session's calls then start where a layered session's window leaves them: its
    profiled calls are synchronous, the GPU idle; host calls cost more with an idle GPU than queued)."""
    import torch

    def run() -> None:
        for r in range(runs):
            for e in engines:
                torch.ops.tensorrt.execute_engine([x], e)
            if r + 1 == sync_after:
                torch.cuda.synchronize()
        torch.cuda.synchronize()
    return run


@guarded
def layers(d: Path, args: argparse.Namespace) -> None:
    import torch

    import trt_trace
    from trt_trace.native import ops

    x = torch.randn(16, 16, device="cuda")
    engines = [faketrt.make_engine(p) for p in LAYER_PLANS]
    for p in LAYER_PLANS:  # the fake's counts from here on
        faketrt.layer_ns(p.name)
    base_path = str(d / "layers_baseline.json")
    with trt_trace.tracing(base_path):
        layer_engine_calls(engines, x, LAYER_RUNS, sync_after=LAYER_CALLS + 1)()
    baseline, _ = layered_calls(base_path)
    before = {p.name: faketrt.stats(p.name) for p in LAYER_PLANS}
    path = str(d / "layers_eager.json")
    tmp_before = set(Path(tempfile.gettempdir()).iterdir())
    with trt_trace.tracing(path, layers=LAYER_CALLS):
        layer_engine_calls(engines, x, LAYER_RUNS)()
        folder = ops.layer_private_folder()
    stats = {p.name: {k: v - before[p.name].get(k, 0) for k, v in faketrt.stats(p.name).items()} for p in LAYER_PLANS}
    truth = {p.name: faketrt.layer_ns(p.name) for p in LAYER_PLANS}
    # A second plain session after the layered one: the two brackets say how much a plain session's
    # calls move within this process, so the switch is judged against that, not against one sample.
    after_path = str(d / "layers_baseline_after.json")
    with trt_trace.tracing(after_path):
        layer_engine_calls(engines, x, LAYER_RUNS, sync_after=LAYER_CALLS + 1)()
    baseline_after, _ = layered_calls(after_path)
    report_layers("eager", path, truth, stats, (baseline, baseline_after))
    left = set(Path(tempfile.gettempdir()).iterdir()) - tmp_before
    check("eager: the runtime's profile files went to a private folder, removed after the session",
          bool(folder) and not Path(folder).exists() and not left, f"folder {folder}; new in the temp dir: {left}")

    # A Dynamic-strategy engine: 2.11's disable_profiling() re-creates its context with the static
    # strategy; trt_trace gives it its user-managed context back (the fake counts a workspace bound
    # to a static context, which TensorRT reports as an error). The runtime's own toggles, for contrast.
    ws = 1 << 20
    dyn = [faketrt.Plan(f"_run_on_acc_dyn{i}_engine", workspace=ws, layers=(("[dyn]", 20),)) for i in range(2)]
    mine, theirs = (faketrt.make_engine(p, dynamic=True) for p in dyn)
    with trt_trace.tracing(str(d / "layers_dynamic.json"), layers=2):
        layer_engine_calls([mine], x, 6)()
    theirs.profile_path_prefix = str(d)
    theirs.enable_profiling()
    layer_engine_calls([theirs], x, 2)()
    theirs.disable_profiling()
    layer_engine_calls([theirs], x, 2)()
    a, b = faketrt.stats(dyn[0].name), faketrt.stats(dyn[1].name)
    check("a Dynamic engine keeps a user-managed context after trt_trace's window (the runtime's own "
          "disable_profiling() does not)", a["static_memory_sets"] == 0 and a["profiled_enqueues"] == 2,
          f"workspaces bound to a static context: trt_trace's window {a['static_memory_sets']}, the runtime's own "
          f"toggles {b['static_memory_sets']} (of {b['device_memory_sets']})")

    # The same engines inside an AOTInductor package, in a fresh process with only TRT_TRACE_OUT and
    # TRT_TRACE_LAYERS (and a temporary directory of its own, to see that nothing is left in it).
    pkg = d / "layered.pt2"
    build_package(pkg, LAYER_PLANS)
    trace = d / "layers_package.json"
    tmp = d / "child_tmp"
    tmp.mkdir()
    result, why = fresh_process(args, "env", ["--package", str(pkg), "--trace", str(trace), "--runs", str(LAYER_RUNS),
                                              "--layered"],
                                {"TRT_TRACE_OUT": str(trace), "TRT_TRACE_LAYERS": str(LAYER_CALLS), "TMPDIR": str(tmp)})
    label = "package in a fresh process, only TRT_TRACE_OUT and TRT_TRACE_LAYERS"
    if result is None or not trace.exists():
        check(label, False, why or f"no {trace.name}")
        return
    check(f"{label}: outputs right, nothing left in its temporary directory", result["ok"] and not list(tmp.iterdir()),
          f"left: {[p.name for p in tmp.iterdir()]}")
    report_layers("package", str(trace), result["layers"], result["stats"], None)


# ---- `import torch_tensorrt` itself, in a fresh process ------------------------------------------

TORCHTRT_PLAN = faketrt.Plan("_run_on_acc_0_engine", gpu_us=20)
TORCHTRT_ALIAS_PLAN = faketrt.Plan("_run_on_acc_alias_engine", gpu_us=10)
TORCHTRT_CALLS = 20
ALIAS_CALLS = 7
PYTHON_PACKAGES = ("torch_tensorrt", "tensorrt_bindings", "dllist")  # what fetch_real_runtime.sh puts in --python


def torchtrt_site(d: Path, python_dir: Path, runtime: str) -> Path | str:
    """A folder for sys.path where `import torch_tensorrt` finds: its Python package with the runtime
    library under test as its only lib/ (so it loads that library alone, as a runtime-only install
    does), the real bindings, dllist, and the project's `tensorrt` shim. A reason string if it cannot."""
    missing = [n for n in PYTHON_PACKAGES if not (python_dir / n).is_dir()]
    if missing:
        return (f"{python_dir} lacks {', '.join(missing)} (tools/device/fetch_real_runtime.sh fetches them "
                f"where pip reaches the index; carry .trt)")
    site = d / "site"
    shutil.copytree(python_dir / "torch_tensorrt", site / "torch_tensorrt",
                    ignore=lambda where, names: ["lib"] if Path(where) == python_dir / "torch_tensorrt" else [])
    (site / "torch_tensorrt" / "lib").mkdir()
    (site / "torch_tensorrt" / "lib" / "libtorchtrt_runtime.so").symlink_to(Path(runtime).resolve())
    for n in PYTHON_PACKAGES[1:]:
        (site / n).symlink_to((python_dir / n).resolve())
    shutil.copytree(REPO / "tests" / "faketrt" / "python_shim" / "tensorrt", site / "tensorrt")
    return site


def report_child(run, out: dict) -> int:  # noqa: ANN001
    """Runs a child's checks and prints what it found as its last JSON line (an exception's last line as
    `error`, which the parent reports as one FAIL line)."""
    try:
        run()
    except Exception as e:  # noqa: BLE001 (reported by the parent as one FAIL line)
        out["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1] if str(e).strip() else ''}"[:300]
    print(json.dumps(out), flush=True)
    return 0


def torchtrt_child(args: argparse.Namespace) -> int:
    """In a fresh process with only TRT_TRACE_OUT set (tracing starts at interpreter start-up):
    `import torch_tensorrt`, then engines through its own TorchTensorRTModule. Prints one JSON line;
    a stage that raises is named there with its error instead."""
    import time

    import torch

    out: dict = {"stage": "load the fake TensorRT"}

    def loaded() -> list[str]:  # Torch-TensorRT libraries in this process, by the path they were loaded from
        import dllist

        return sorted(p for p in dllist.dllist() if "libtorchtrt" in p)

    def run() -> None:
        faketrt.load(args.fake)
        out["ops_before_import"] = hasattr(torch.ops.tensorrt, "execute_engine")
        out["loaded_before_import"] = loaded()
        out["stage"] = "import torch_tensorrt"
        t0 = time.perf_counter()
        import torch_tensorrt

        out["import_s"] = round(time.perf_counter() - t0, 1)
        out["version"] = torch_tensorrt.__version__
        out["tensorrt"] = f"{sys.modules['tensorrt'].__version__} ({type(sys.modules['tensorrt']).__name__})"
        features = torch_tensorrt.ENABLED_FEATURES
        out["runtime_feature"] = bool(features.torch_tensorrt_runtime)
        out["torchscript_frontend"] = bool(features.torchscript_frontend)
        out["ops_after_import"] = hasattr(torch.ops.tensorrt, "execute_engine")
        out["abi"] = str(torch.ops.tensorrt.ABI_VERSION())
        out["loaded"] = loaded()
        out["stage"] = "TorchTensorRTModule"
        from torch_tensorrt.dynamo.runtime import TorchTensorRTModule

        def module(plan: faketrt.Plan) -> torch.nn.Module:
            return TorchTensorRTModule(plan.text().encode(), input_binding_names=[n for n, _, _ in plan.inputs],
                                       output_binding_names=[n for n, _ in plan.outputs],
                                       name=plan.name.removesuffix("_engine"))
        trt_module = module(TORCHTRT_PLAN)
        out["engine_str"] = str(trt_module.engine).splitlines()[:2]
        x = torch.randn(64, 256, device="cuda")
        out["stage"] = "calls through TorchTensorRTModule"
        ys = [trt_module(x) for _ in range(TORCHTRT_CALLS)]
        torch.cuda.synchronize()
        out["outputs_right"] = all(torch.equal(y, x) for y in ys)
        out["enqueues"] = faketrt.stats(TORCHTRT_PLAN.name)["enqueues"]
        out["stage"] = "trt_trace's aliases with torch_tensorrt imported"
        ns = torch.ops.tensorrt
        alias_module = module(TORCHTRT_ALIAS_PLAN)
        ns.set_profile_execution(True)
        for _ in range(ALIAS_CALLS):
            alias_module(x)
        torch.cuda.synchronize()
        out["table"] = str(ns.dump_engine_timing())
        ns.set_profile_execution(False)
        out["stage"] = "done"
    return report_child(run, out)


def torchtrt_process(d: Path, args: argparse.Namespace, label: str, child_mode: str, trace: Path,
                     settings: dict[str, str] | None = None) -> dict | None:
    """Runs `child_mode` in a fresh process that imports the wheel's torch_tensorrt (torchtrt_site) over the
    fake TensorRT, with only TRT_TRACE_OUT=trace set (and `settings`, TRT_TRACE_* too); its report, or None after
    a failing check that says why."""
    site = torchtrt_site(d, Path(args.python), args.runtime)
    if isinstance(site, str):
        check(label, False, site)
        return None

    def prepended(var: str, first: str) -> str:
        return os.pathsep.join([first] + ([os.environ[var]] if os.environ.get(var) else []))
    r, why = fresh_process(args, child_mode, [], {"TRT_TRACE_OUT": str(trace), **(settings or {}),
                                                  "PYTHONPATH": prepended("PYTHONPATH", str(site)),
                                                  "LD_LIBRARY_PATH": prepended("LD_LIBRARY_PATH", args.fake)})
    if r is None:
        check(label, False, why)
        return None
    if "error" in r:
        check(label, False, f"{r['stage']} raised {r['error']}")
        return None
    return r


@guarded
def torch_tensorrt_import(d: Path, args: argparse.Namespace) -> None:
    """torch_tensorrt's import loads the runtime under test (put in its lib/; nothing else in that
    process loads it), and engines run through its own TorchTensorRTModule are traced."""
    label = "import torch_tensorrt (fresh process, only TRT_TRACE_OUT)"
    trace = d / "torchtrt.json"
    r = torchtrt_process(d, args, label, "torchtrt", trace)
    if r is None:
        return
    check(f"{label}: torch_tensorrt {r['version']} over the real bindings (tensorrt {r['tensorrt']}); its own "
          "runtime library registered the ops at import",
          not r["loaded_before_import"] and r["ops_after_import"] and r["runtime_feature"]
          and [os.path.realpath(f) for f in r["loaded"]] == [os.path.realpath(args.runtime)],
          f"import {r['import_s']} s; execute_engine before/after import {r['ops_before_import']}/"
          f"{r['ops_after_import']}; runtime feature {r['runtime_feature']}, TorchScript frontend "
          f"{r['torchscript_frontend']}; ABI {r['abi']}; loaded {r['loaded']}")
    if not trace.exists():
        check(f"{label}: trace written at exit", False, f"no {trace.name}")
        return
    calls = [c for _, c in sorted(calls_of(str(trace)).items())]
    mine = [c for c in calls if c.get("engine") == TORCHTRT_PLAN.name]
    check(f"torch_tensorrt's TorchTensorRTModule: {TORCHTRT_CALLS} calls traced, named, 4 phases each, "
          "GPU spans, outputs right",
          r["outputs_right"] and r["enqueues"] == TORCHTRT_CALLS and len(mine) == TORCHTRT_CALLS
          and r["engine_str"][1:2] == [f"  Name: {TORCHTRT_PLAN.name}"]
          and all(map(whole, mine)),
          f"{len(mine)} calls of {r['engine_str'][1:2]}, enqueueV3 x{r['enqueues']}; {phase_line(mine)}")
    row = [ln for ln in r["table"].splitlines() if ln.startswith(TORCHTRT_ALIAS_PLAN.name)]
    check("torch.ops.tensorrt.set_profile_execution / dump_engine_timing with torch_tensorrt imported",
          len(row) == 1 and row[0].split()[1] == str(ALIAS_CALLS)
          and sum(c.get("engine") == TORCHTRT_ALIAS_PLAN.name for c in calls) == ALIAS_CALLS,
          f"table row {row[0] if row else None!r}")


PY_PLAN = faketrt.Plan("_run_on_acc_py_engine", gpu_us=20)
PY_CALLS = 20
PY_THREADS = 2
PY_THREAD_CALLS = 15


def pyrt_child(args: argparse.Namespace) -> int:
    """In a fresh process with only TRT_TRACE_OUT set: `import torch_tensorrt`, then engines through its own
    Python runtime, PythonTorchTensorRTModule (the real 2.11 class over the real TensorRT bindings, over the
    fake), on this thread and on PY_THREADS more (a module each: the class is not for sharing across
    threads). Prints one JSON line; a stage that raises is named there with its error instead."""
    import torch

    out: dict = {"stage": "load the fake TensorRT"}

    def run() -> None:
        faketrt.load(args.fake)
        out["stage"] = "import torch_tensorrt"
        import torch_tensorrt
        from torch_tensorrt.dynamo.runtime import PythonTorchTensorRTModule

        out["version"] = torch_tensorrt.__version__
        out["instrumented"] = bool(PythonTorchTensorRTModule.__dict__.get("_trt_trace_instrumented"))
        out["stage"] = "PythonTorchTensorRTModule"

        def module(name: str) -> torch.nn.Module:
            return PythonTorchTensorRTModule(PY_PLAN.text().encode(),
                                             input_binding_names=[n for n, _, _ in PY_PLAN.inputs],
                                             output_binding_names=[n for n, _ in PY_PLAN.outputs], name=name)
        main = module(PY_PLAN.name)
        x = torch.randn(64, 256, device="cuda")
        out["stage"] = "calls through PythonTorchTensorRTModule"
        right = [torch.equal(main(x), x) for _ in range(PY_CALLS)]
        out["stage"] = "calls on threads"
        per_thread = [module(f"{PY_PLAN.name}_t{i}") for i in range(PY_THREADS)]
        errors: list[str] = []

        def worker(m: torch.nn.Module) -> None:
            try:
                right.extend(torch.equal(m(x), x) for _ in range(PY_THREAD_CALLS))
            except Exception as e:  # noqa: BLE001 (reported in the JSON line)
                errors.append(f"{type(e).__name__}: {e}")
        threads = [threading.Thread(target=worker, args=(m,)) for m in per_thread]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(errors[0])
        torch.cuda.synchronize()
        out["outputs_right"] = len(right) == PY_CALLS + PY_THREADS * PY_THREAD_CALLS and all(right)
        out["enqueues"] = faketrt.stats(PY_PLAN.name)["enqueues"]
        out["table"] = str(torch.ops.tensorrt.dump_engine_timing())
        out["stage"] = "done"
    return report_child(run, out)


@guarded
def python_runtime(d: Path, args: argparse.Namespace) -> None:
    """The real 2.11 PythonTorchTensorRTModule (torch_tensorrt's own Python runtime: TensorRT's Python
    bindings, no tensorrt::execute_engine) traced like the C++ runtime, with TRT_TRACE_OUT alone."""
    label = "PythonTorchTensorRTModule (fresh process, only TRT_TRACE_OUT)"
    trace = d / "pyrt.json"
    r = torchtrt_process(d, args, label, "pyrt", trace)
    if r is None:
        return
    check(f"{label}: torch_tensorrt {r['version']}'s class instrumented at its import", r["instrumented"])
    if not trace.exists():
        check(f"{label}: trace written at exit", False, f"no {trace.name}")
        return
    calls = [c for _, c in sorted(calls_of(str(trace)).items())]
    total = PY_CALLS + PY_THREADS * PY_THREAD_CALLS
    names = [PY_PLAN.name] + [f"{PY_PLAN.name}_t{i}" for i in range(PY_THREADS)]
    mine = [c for c in calls if c.get("engine") in names]
    counts = [sum(c.get("engine") == n for c in mine) for n in names]
    check(f"the Python runtime: {total} calls ({PY_THREADS} threads besides the main one) traced, named, 4 phases "
          "each, GPU spans, outputs right",
          r["outputs_right"] and r["enqueues"] == total and counts == [PY_CALLS] + [PY_THREAD_CALLS] * PY_THREADS
          and len(mine) == len(calls) and all(map(whole, mine)) and not any(c["error"] for c in mine),
          f"calls per engine {dict(zip(names, counts, strict=True))}, enqueueV3 x{r['enqueues']}; {phase_line(mine)}")
    rows = {ln.split()[0]: ln.split() for ln in r["table"].splitlines() if ln.strip() and ln.split()[0] in names}
    check("the Python runtime's engines in dump_engine_timing",
          [rows.get(n, [None, None])[1] for n in names] == [str(n) for n in counts],
          f"rows {sorted(rows)}")


PY_LAYER_PLAN = faketrt.Plan("_run_on_acc_pylayers_engine", layers=(
    ("[CONVOLUTION]-[aten_ops.convolution.default]-[/conv1/convolution] + [RELU]-[aten_ops.relu.default]-"
     "[/relu1/relu]", 400),
    ("Reformatting CopyNode for Input Tensor 0 to [MATRIX_MULTIPLY]-[aten_ops.mm.default]-[/fc/mm]", 20),
    ("{ForeignNode[/attn/MatMul.../attn/Softmax]}", 150)))
PY_LAYER_CALLS = 4  # TRT_TRACE_LAYERS
PY_LAYER_RUNS = 20  # calls: the first, PY_LAYER_CALLS profiled, the rest after the window


def pyrt_layers_child(args: argparse.Namespace) -> int:
    """In a fresh process with TRT_TRACE_OUT and TRT_TRACE_LAYERS alone: the real 2.11 PythonTorchTensorRTModule
    over the fake's layered engine. Prints one JSON line (what the fake reported to a profiler, its counts, the
    context's profiler after the calls); a stage that raises is named there with its error instead."""
    import torch

    out: dict = {"stage": "load the fake TensorRT"}

    def run() -> None:
        faketrt.load(args.fake)
        out["stage"] = "import torch_tensorrt"
        import torch_tensorrt
        from torch_tensorrt.dynamo.runtime import PythonTorchTensorRTModule

        out["version"] = torch_tensorrt.__version__
        out["stage"] = "PythonTorchTensorRTModule"
        plan = PY_LAYER_PLAN
        module = PythonTorchTensorRTModule(plan.text().encode(), input_binding_names=[n for n, _, _ in plan.inputs],
                                           output_binding_names=[n for n, _ in plan.outputs], name=plan.name)
        x = torch.randn(64, 256, device="cuda")
        out["stage"] = "calls with per-layer timing on"
        right = [torch.equal(module(x), x) for _ in range(PY_LAYER_RUNS)]
        torch.cuda.synchronize()
        out["outputs_right"] = all(right)
        out["reported_ns"] = faketrt.layer_ns(plan.name)
        out["stats"] = faketrt.stats(plan.name)
        # Through the real bindings: getProfiler answers None once trt_trace took its profiler off.
        out["profiler_after"] = repr(module.context.profiler)
        out["profiling_enabled"] = bool(module.profiling_enabled)
        out["stage"] = "done"
    return report_child(run, out)


@guarded
def python_runtime_layers(d: Path, args: argparse.Namespace) -> None:
    """Per-layer time through the real 2.11 PythonTorchTensorRTModule: trt_trace's trt.IProfiler subclass on the
    context through the real TensorRT bindings, each layer as the fake reported it."""
    label = "PythonTorchTensorRTModule layers (fresh process, only TRT_TRACE_OUT and TRT_TRACE_LAYERS)"
    trace = d / "pyrt_layers.json"
    r = torchtrt_process(d, args, label, "pyrt_layers", trace, {"TRT_TRACE_LAYERS": str(PY_LAYER_CALLS)})
    if r is None:
        return
    if not trace.exists():
        check(f"{label}: trace written at exit", False, f"no {trace.name}")
        return
    plan = PY_LAYER_PLAN
    names = [n for n, _ in plan.layers]
    by_engine, layers = layered_calls(str(trace))
    calls = by_engine.get(plan.name, [])
    ids = [c["call_id"] for c in calls]
    profiled = [i for i in ids if i in layers]
    check(f"{label}: its calls 2-{PY_LAYER_CALLS + 1} (of {len(calls)}) have their {len(names)} layers, by name, in "
          "order; outputs right",
          r["outputs_right"] and len(calls) == PY_LAYER_RUNS and profiled == ids[1:PY_LAYER_CALLS + 1]
          and all([n for n, _ in layers[i]] == names for i in profiled),
          f"profiled calls at {[ids.index(i) + 1 for i in profiled]}")
    got = [us for i in profiled for _, us in layers[i]]
    told = [ns / 1000 for ns in r["reported_ns"]]
    pairs = list(zip(got, told, strict=False))
    check(f"{label}: each layer's time as the fake told trt_trace's profiler (within 1 ns)",
          len(got) == len(told) == PY_LAYER_CALLS * len(names) and all(abs(a - b) <= 0.0015 for a, b in pairs),
          f"{len(got)} traced, {len(told)} told; largest |diff| "
          f"{max((abs(a - b) for a, b in pairs), default=float('nan')):.4f} us")
    nominal = list(zip(got, [us for _ in profiled for _, us in plan.layers], strict=False))
    goal(f"{label}: each layer's time within 3% + 2 us of its kernel's nominal spin",
         bool(got) and all(abs(a - b) <= 0.03 * b + 2.0 for a, b in nominal),
         f"trace / nominal median {median([a / b for a, b in nominal]):.4f}")
    st = r["stats"]
    check(f"{label}: only the window's calls were profiled (and waited for the GPU); the profiler is off after it, "
          "the runtime's own profiling never turned on",
          st.get("profiled_enqueues") == PY_LAYER_CALLS and st.get("waited_enqueues") == PY_LAYER_CALLS
          and r["profiler_after"] == "None" and not r["profiling_enabled"],
          f"profiled enqueues x{st.get('profiled_enqueues')}, waiting x{st.get('waited_enqueues')}; context.profiler "
          f"after {r['profiler_after']}; profiling_enabled {r['profiling_enabled']}")
    sums = [sum(us for _, us in layers[i]) for i in profiled]
    spans = [c["gpu"][1] for c in calls[1:PY_LAYER_CALLS + 1] if "gpu" in c]
    window = [c["execute_engine"][1] for c in calls[1:PY_LAYER_CALLS + 1]]
    after = [c["execute_engine"][1] for c in calls[PY_LAYER_CALLS + 1:]]
    print(f"      {plan.name}: profiled call host p50 {median(window):.1f} us, after the window "
          f"{median(after):.1f} us; layers' sum p50 {median(sums):.1f} us, GPU span of the profiled calls p50 "
          f"{median(spans):.1f} us")
    check_layers_verb(label, str(trace), plan.name, names, len(profiled),
                      [c for c in calls[1:PY_LAYER_CALLS + 1] if "gpu" in c])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fake", required=True, help="folder with the fake libnvinfer.so.10")
    ap.add_argument("--runtime", required=True, help="libtorchtrt_runtime.so of torch-tensorrt 2.11.0")
    ap.add_argument("--only", nargs="*", help="run only these checks")
    ap.add_argument("--python", default=str(REPO / ".trt" / "python"),
                    help="torch_tensorrt's Python package, tensorrt_bindings and dllist (fetch_real_runtime.sh)")
    ap.add_argument("--child", choices=("env", "after", "torchtrt", "pyrt", "pyrt_layers"), help=argparse.SUPPRESS)
    ap.add_argument("--package", help=argparse.SUPPRESS)
    ap.add_argument("--trace", help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=30, help=argparse.SUPPRESS)
    ap.add_argument("--layered", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "torchtrt":
        return torchtrt_child(args)
    if args.child == "pyrt":
        return pyrt_child(args)
    if args.child == "pyrt_layers":
        return pyrt_layers_child(args)
    if args.child:
        return child(args)
    import torch

    import trt_trace  # noqa: F401  (the hook is in place before the runtime loads)

    load_runtime(args.fake, args.runtime)
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}; "
          f"runtime {args.runtime}")
    checks = {"eager_streams": eager_streams, "dynamic_workspace": dynamic_workspace,
              "preallocated_and_output_allocator": preallocated_and_output_allocator, "cuda_graphs": cuda_graphs,
              "runtime_profiling": runtime_profiling, "multi_device_safe_mode": multi_device_safe_mode,
              "two_threads": two_threads, "failing_enqueue": failing_enqueue, "aliases": aliases,
              "gpu_truth_eager": gpu_truth_eager, "profiler_kernels": profiler_kernels,
              "nsys_kernels": lambda d: nsys_kernels(d, args),
              "nsys_range": lambda d: nsys_range(d, args), "package": lambda d: package(d, args),
              "layers": lambda d: layers(d, args),
              "torch_tensorrt_import": lambda d: torch_tensorrt_import(d, args),
              "python_runtime": lambda d: python_runtime(d, args),
              "python_runtime_layers": lambda d: python_runtime_layers(d, args)}
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in checks.items():
            if args.only and name not in args.only:
                continue
            sub = Path(tmp) / name
            sub.mkdir()
            fn(sub)
    print(f"{failures} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
