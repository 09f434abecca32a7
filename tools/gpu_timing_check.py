"""GPU timing on a real GPU: trt_trace's GPU spans against torch.profiler, streams, CUDA graphs, costs.

    python tools/gpu_timing_check.py          (on a CUDA machine, trt_trace installed; see device_check.sh)

Uses the stand-in runtime's CUDA path: 4 engines whose device work differs (repeat passes over a
32 MiB tensor), eager and as an AOTInductor package built here. Prints each check and the figures
recorded in BENCHMARKS.md; exits non-zero if a check fails.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

import trt_trace
from trt_trace import ops, standin
from trt_trace.standin import model
from trt_trace.trace_summary import load_events

failures = 0
REPEATS = (4, 12, 40, 120)  # passes over the tensor: kernels from ~60 us to ~2 ms per call


def check(name: str, ok: bool, detail: str = "") -> None:
    global failures
    failures += 0 if ok else 1
    print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)


def specs():
    return [standin.EngineSpec(f"_run_on_acc_{i}_engine", scale=1.0, activation="none", repeat=r, device=0)
            for i, r in enumerate(REPEATS)]


def engine_of(spec):
    return standin.make_engine(**{f: getattr(spec, f) for f in spec.field_names()})


def trace_slices(path: str) -> dict[int, dict[str, tuple[float, float]]]:
    """{call_id: {slice name: (ts_us, dur_us)}}"""
    out: dict[int, dict[str, tuple[float, float]]] = {}
    for e in load_events(path):
        if e.get("ph") == "X" and e.get("cat") == "trt_trace":
            out.setdefault(e["args"]["call_id"], {})[e["name"]] = (e["ts"], e["dur"])
    return out


def profiler_kernel_extents(prof_json: str) -> list[float]:
    """Device extent (first start -> last end, us) of the kernels, copies and memsets of each
    tensorrt::execute_engine op, in call order (the stand-in's engine work starts with a copy)."""
    events = json.loads(Path(prof_json).read_text())["traceEvents"]
    ops_by_ext = {}
    for e in events:
        if e.get("ph") == "X" and e.get("name") == "tensorrt::execute_engine":
            ops_by_ext[e["args"].get("External id")] = e["ts"]
    kernels: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            ext = e["args"].get("External id")
            if ext in ops_by_ext:
                kernels.setdefault(ext, []).append((e["ts"], e["ts"] + e["dur"]))
    ordered = sorted(ops_by_ext, key=ops_by_ext.get)
    return [max(k[1] for k in kernels[x]) - min(k[0] for k in kernels[x]) if x in kernels else float("nan")
            for x in ordered]


def compare_with_profiler(label: str, run_calls, d: Path, strict: bool = True) -> None:
    """Runs run_calls() traced by trt_trace and torch.profiler at once; compares per call.

    strict=False reports the agreement with kernel extents without counting it as a check: with an
    idle GPU a call's span (start event at the call's start, end event at its end) also holds the
    time the GPU waited for the host to launch the kernels, which kernel extents leave out."""
    out = str(d / f"{label}.json")
    prof_out = str(d / f"{label}_prof.json")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        with trt_trace.tracing(out):
            run_calls()
            torch.cuda.synchronize()
    prof.export_chrome_trace(prof_out)
    calls = trace_slices(out)
    ordered = [calls[c] for c in sorted(calls)]
    extents = profiler_kernel_extents(prof_out)
    check(f"{label}: every call has a GPU span", all("gpu" in c for c in ordered) and len(ordered) == len(extents),
          f"{sum('gpu' in c for c in ordered)}/{len(ordered)} calls, {len(extents)} profiler ops")
    early = [c for c in ordered if "gpu" in c and "enqueue" in c and c["gpu"][0] < c["enqueue"][0] - 1e-3]
    check(f"{label}: no GPU span starts before its enqueue", not early, f"{len(early)} early")
    ratios, rows = [], []
    for c, ext in zip(ordered, extents, strict=False):
        if "gpu" not in c or not ext == ext:
            continue
        gpu_us = c["gpu"][1]
        rows.append((gpu_us, ext))
        if ext >= 50:
            ratios.append(gpu_us / ext)
    within = [r for r in ratios if abs(r - 1) <= 0.10]
    if ratios:
        detail = (f"{len(within)}/{len(ratios)}; ratio median {statistics.median(ratios):.3f}, "
                  f"min {min(ratios):.3f}, max {max(ratios):.3f}")
        name = f"{label}: GPU span within 10% of profiler kernel extent (calls >= 50 us)"
        if strict:
            check(name, len(within) == len(ratios), detail)
        else:
            print(f"INFO  {name}  {detail}")
    print(f"      {label}: first calls (gpu us, profiler us): {[(round(a, 1), round(b, 1)) for a, b in rows[:8]]}")
    by_len = sorted(rows, key=lambda r: r[1])
    print(f"      {label}: (trt_trace gpu us, profiler kernel extent us) shortest {by_len[:2]} "
          f"longest {by_len[-2:]}")


def host_overhead(n: int = 3000) -> None:
    e = engine_of(standin.EngineSpec("overhead_engine", device=0))
    x = [torch.randn(16, device="cuda")]

    def per_call() -> float:
        torch.cuda.synchronize()
        t = time.perf_counter_ns()
        for _ in range(n):
            torch.ops.tensorrt.execute_engine(x, e)
        torch.cuda.synchronize()
        return (time.perf_counter_ns() - t) / n

    results = {"off": [], "host phases": [], "host + gpu events": []}
    with tempfile.TemporaryDirectory() as d:
        for _ in range(5):  # interleaved, so drift of the machine hits every mode alike
            results["off"].append(per_call())
            with trt_trace.tracing(f"{d}/h.json", gpu=False):
                results["host phases"].append(per_call())
            with trt_trace.tracing(f"{d}/g.json", gpu=True):
                results["host + gpu events"].append(per_call())
    base = statistics.median(results["off"])
    for k, v in results.items():
        med = statistics.median(v)
        print(f"      host time per call, {k:18s}: median {med / 1000:7.2f} us (+{(med - base) / 1000:5.2f} us), "
              f"spread {min(v) / 1000:.2f}-{max(v) / 1000:.2f} us")


def multi_gpu(d: Path) -> None:
    """Engines on different devices, called in turn: each call's GPU span is on its engine's device."""
    n = torch.cuda.device_count()
    if n < 2:
        print(f"INFO  multi-GPU: {n} GPU on this machine, not checked")
        return
    engines = [engine_of(standin.EngineSpec(f"gpu{k}_engine", repeat=40, device=k)) for k in range(n)]
    xs = [torch.randn(8 << 20, device=f"cuda:{k}") for k in range(n)]
    out = str(d / "multi_gpu.json")
    with trt_trace.tracing(out):
        for _ in range(10):
            for e, x in zip(engines, xs, strict=True):
                torch.ops.tensorrt.execute_engine([x], e)
        for k in range(n):
            torch.cuda.synchronize(k)
    events = [e for e in load_events(out) if e.get("ph") == "X" and e.get("cat") == "trt_trace"]
    calls = {e["args"]["call_id"]: e for e in events if e["name"] == "execute_engine"}
    gpu = {e["args"]["call_id"]: e for e in events if e["name"] == "gpu"}
    wrong = [c for c, e in calls.items() if c not in gpu or gpu[c]["args"].get("device") != e["args"].get("device")]
    early = [c for c in gpu if gpu[c]["ts"] < calls[c]["ts"] - 1e-3]
    devices = sorted({e["args"].get("device") for e in gpu.values()})
    check(f"multi-GPU: {n} devices, every call has a span on its own device, none before its call",
          len(calls) == 10 * n and not wrong and not early and len(devices) == n,
          f"{len(gpu)}/{len(calls)} spans, devices {devices}, {len(wrong)} wrong, {len(early)} early; "
          f"median span per device (us): "
          + str({k: round(statistics.median(g["dur"] for g in gpu.values() if g["args"].get("device") == k), 1)
                 for k in devices}))


def main() -> int:
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}", flush=True)
    standin.load()
    check("GPU timing compiled in", ops.set_gpu_timing(True))
    sp = specs()
    engines = [engine_of(s) for s in sp]
    x = torch.randn(8 << 20, device="cuda")
    for e in engines:  # warm-up
        torch.ops.tensorrt.execute_engine([x], e)
    torch.cuda.synchronize()
    d = Path(tempfile.mkdtemp())

    def eager_default():
        for _ in range(5):
            for e in engines:
                torch.ops.tensorrt.execute_engine([x], e)

    own = torch.cuda.Stream()

    def eager_own_stream():
        with torch.cuda.stream(own):
            eager_default()

    compare_with_profiler("eager, default stream, idle GPU", eager_default, d, strict=False)
    compare_with_profiler("eager, own stream, idle GPU", eager_own_stream, d, strict=False)

    # GPU busy (the serving case): 60 ms of queued work ahead of the calls, so every engine's kernels
    # are queued before the GPU reaches them and the span is the engine's own GPU time.
    def queued(run, stream=None):
        def go():
            with torch.cuda.stream(stream or torch.cuda.current_stream()):
                torch.cuda._sleep(int(60e-3 * 1.98e9))  # ~60 ms at the H200's ~1.98 GHz, on the calls' stream
            run()
        return go

    compare_with_profiler("eager, default stream, GPU busy", queued(eager_default), d)
    compare_with_profiler("eager, own stream, GPU busy", queued(eager_own_stream, own), d)

    path = model.package_model(sp, x)
    runner = model.load_package(path)
    runner(x)
    torch.cuda.synchronize()

    def package_calls():
        for _ in range(5):
            runner(x)

    compare_with_profiler("AOTInductor package, idle GPU", package_calls, d, strict=False)
    compare_with_profiler("AOTInductor package, GPU busy", queued(package_calls), d)
    multi_gpu(d)

    # CUDA graph capture: no events inside a capture; the call is flagged, replays work.
    small = engines[0]
    xs = torch.randn(1024, device="cuda")
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    with trt_trace.tracing(str(d / "graph.json")):
        with torch.cuda.stream(s):
            torch.ops.tensorrt.execute_engine([xs], small)  # warm-up on the side stream
            torch.cuda.synchronize()
            with torch.cuda.graph(g, stream=s):
                ys = torch.ops.tensorrt.execute_engine([xs], small)
        g.replay()
        torch.cuda.synchronize()
    captured = [e for e in load_events(str(d / "graph.json"))
                if e.get("name") == "execute_engine" and e.get("args", {}).get("captured")]
    ok = torch.allclose(ys[0], xs)  # engine 0: scale 1, bias 0, no activation
    check("CUDA graph capture: no crash, call flagged captured, replay right", len(captured) == 1 and ok,
          f"{len(captured)} captured call(s)")

    host_overhead()

    # Clock placement: anchors renewed every second during a run; drift between renewals.
    t_end = time.time() + 20
    with trt_trace.tracing(str(d / "drift.json")):
        while time.time() < t_end:
            torch.ops.tensorrt.execute_engine([x], engines[1])
            torch.cuda.synchronize()
        stats = ops.gpu_clock_stats()
    print(f"      clock: {stats}")
    check("GPU->host clock placement error under 10 us", stats["anchors"] >= 100
          and stats["max_abs_residual_ns"] < 10000,
          f"{stats['anchors']} anchors, max |residual| {stats['max_abs_residual_ns'] / 1000:.2f} us, "
          f"p99 {stats['p99_abs_residual_ns'] / 1000:.2f} us, p50 {stats['p50_abs_residual_ns'] / 1000:.2f} us, "
          f"anchor window {stats['anchor_window_ns'] / 1000:.1f} us, "
          f"GPU clock rate {stats['gpu_clock_rate_ppm']:+.1f} ppm")
    print(trt_trace.summary(str(d / "AOTInductor package, GPU busy.json")), end="")
    print(f"{failures} check(s) failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
