"""GPU timing on a real GPU: trt_trace's GPU spans against torch.profiler, streams, CUDA graphs, costs.

    python tools/device/gpu_timing_check.py          (on a CUDA machine, trt_trace installed; see device_check.sh)

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
from torch.utils import cpp_extension

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import load_events
from trt_trace.native import ops
from trt_trace.standin import model

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


def profiler_calls(events: list[dict], nested: bool = False) -> list[tuple[float, float, float]]:
    """Per tensorrt::execute_engine op of a torch.profiler trace, in call order: (op start us, first GPU
    start us, last GPU end us) over the kernels, copies and memsets correlated with it (nan if none;
    the stand-in's engine work starts with a copy). nested=True also counts GPU work launched by ops
    nested in the call (the profiler correlates a kernel with the innermost op). events: the
    profiler trace's traceEvents."""
    calls = sorted((e for e in events if e.get("ph") == "X" and e.get("name") == "tensorrt::execute_engine"),
                   key=lambda c: c["ts"])
    owner = {c["args"].get("External id"): c["args"].get("External id") for c in calls}
    if nested:
        for e in events:
            if e.get("ph") != "X" or e.get("cat") != "cpu_op" or "External id" not in e.get("args", {}):
                continue
            for c in calls:
                if e["tid"] == c["tid"] and c["ts"] <= e["ts"] and e["ts"] + e["dur"] <= c["ts"] + c["dur"]:
                    owner.setdefault(e["args"]["External id"], c["args"].get("External id"))
    kernels: dict[int, list[tuple[float, float]]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            ext = owner.get(e["args"].get("External id"))
            if ext is not None:
                kernels.setdefault(ext, []).append((e["ts"], e["ts"] + e["dur"]))
    out = []
    for c in calls:
        k = kernels.get(c["args"].get("External id"))
        nan = float("nan")
        out.append((c["ts"], min(a for a, _ in k), max(b for _, b in k)) if k else (c["ts"], nan, nan))
    return out


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
    prof_events = json.loads(Path(prof_out).read_text())["traceEvents"]
    prof_calls = profiler_calls(prof_events)  # (op start, first GPU start, last GPU end) per call
    extents = [k1 - k0 for _, k0, k1 in prof_calls]  # device extent of each call's GPU work
    check(f"{label}: every call has a GPU span", all("gpu" in c for c in ordered) and len(ordered) == len(extents),
          f"{sum('gpu' in c for c in ordered)}/{len(ordered)} calls, {len(extents)} profiler ops")
    early = [c for c in ordered if "gpu" in c and "enqueue" in c and c["gpu"][0] < c["enqueue"][0] - 1e-3]
    check(f"{label}: no GPU span starts before its enqueue", not early, f"{len(early)} early")
    # A span is the engine's own GPU time when the call's work was queued: the host had launched all
    # of it (the call's host slice had ended) before the GPU reached the span's start. Otherwise the
    # span also holds the GPU's wait for the host's launches (launch-to-completion, by design).
    ratios, rows, not_queued = [], [], []
    for c, ext in zip(ordered, extents, strict=False):
        if "gpu" not in c or not ext == ext:
            continue
        gpu_us = c["gpu"][1]
        rows.append((gpu_us, ext))
        if ext < 50:
            continue
        host_end = c["execute_engine"][0] + c["execute_engine"][1]
        (ratios if host_end <= c["gpu"][0] else not_queued).append(gpu_us / ext)
    within = [r for r in ratios if abs(r - 1) <= 0.10]
    name = f"{label}: GPU span within 10% of profiler kernel extent (queued calls >= 50 us)"
    detail = (f"{len(within)}/{len(ratios)} queued calls" + (
        f"; ratio median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f}"
        if ratios else "") + f"; {len(not_queued)} call(s) reached by the GPU before their launch ended" + (
        f" (ratio median {statistics.median(not_queued):.3f})" if not_queued else ""))
    if strict:
        check(name, len(ratios) >= 15 and len(within) == len(ratios), detail)
    else:
        print(f"INFO  {name}  {detail}")
    print(f"      {label}: first calls (gpu us, profiler us): {[(round(a, 1), round(b, 1)) for a, b in rows[:8]]}")
    # Per engine (calls go round the engines in order): is the difference a constant or a share?
    per_engine = []
    for k in range(len(REPEATS)):
        mine = rows[k::len(REPEATS)]
        if mine:
            per_engine.append(f"engine {k}: extent {statistics.median(b for _, b in mine):.1f} us, "
                              f"span - extent {statistics.median(a - b for a, b in mine):+.1f} us")
    print(f"      {label}: medians per engine: " + "; ".join(per_engine))
    nested = [k1 - k0 for _, k0, k1 in profiler_calls(prof_events, nested=True)]
    with_nested = [(c["gpu"][1], ext) for c, ext in zip(ordered, nested, strict=False) if "gpu" in c and ext == ext]
    near = [a / b for a, b in with_nested if b >= 50]
    if near:
        print(f"      {label}: against extents with nested ops' GPU work: "
              f"{sum(abs(r - 1) <= 0.10 for r in near)}/{len(near)} within 10%, median {statistics.median(near):.3f}")
    # Where a span's excess lies: the profiler's clock is lined up with trt_trace's through the calls'
    # host starts (the profiler's op event opens a little before trt_trace's call slice), then
    # lead = first kernel start - span start, tail = span end - last kernel end, per call.
    pairs = [(c, p) for c, p in zip(ordered, prof_calls, strict=False) if "gpu" in c and p[1] == p[1]]
    if pairs:
        offset = statistics.median(c["execute_engine"][0] - p[0] for c, p in pairs)
        lead = [p[1] + offset - c["gpu"][0] for c, p in pairs]
        tail = [c["gpu"][0] + c["gpu"][1] - (p[2] + offset) for c, p in pairs]
        print(f"      {label}: span start -> first kernel: median {statistics.median(lead):+.1f} us "
              f"(min {min(lead):+.1f}, max {max(lead):+.1f}); last kernel end -> span end: median "
              f"{statistics.median(tail):+.1f} us (min {min(tail):+.1f}, max {max(tail):+.1f})")


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
    # The GPU events' own host cost, measured alone in a C++ loop (no engine work around it to add noise):
    # begin_call + end_call on an idle current stream, with pooled events that completed before. This
    # process has run torch.profiler by now, after which CUDA calls cost more than in a fresh process
    # (2.3 vs 6.7 us on an H200, BENCHMARKS.md): tools/bench/gpu_event_sampling.py gives that figure.
    print("      (the figures below are taken after torch.profiler ran in this process: CUDA calls cost more"
          " here than in a fresh one, see tools/bench/gpu_event_sampling.py)")
    reps = [ops.gpu_event_host_ns(0, 2000) for _ in range(21)]
    print(f"      GPU events alone (C++ loop, 21 x 2000 calls, pooled events reused after completion): median "
          f"{statistics.median(reps):.0f} ns per call, spread {min(reps):.0f}-{max(reps):.0f} ns")
    # ... and its parts, each CUDA step alone (tools/bench/gpu_event_parts.cpp, built here).
    try:
        src = str(Path(__file__).resolve().parents[1] / "bench" / "gpu_event_parts.cpp")
        parts_ext = cpp_extension.load("trt_trace_gpu_event_parts", [src], extra_cflags=["-O2"], with_cuda=True,
                                       verbose=False)
    except Exception as e:  # a figure, not a check: the checks after it still run
        print(f"      GPU event steps: not measured ({str(e).splitlines()[0] if str(e) else type(e).__name__})")
        return
    names = ("CUDAGuard (device already current)", "current_device()", "current stream look-up",
             "cudaStreamIsCapturing", "cudaEventRecord (new event)",
             "cudaEventRecord (event recorded and completed before)")
    parts = [parts_ext.gpu_event_parts(0, 2000) for _ in range(11)]
    print("      GPU event steps alone (C++ loops, 11 x 2000, median ns): "
          + ", ".join(f"{n} {statistics.median(p[k] for p in parts):.0f}" for k, n in enumerate(names)))


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

    def package_calls_busy():
        # AOTInductor's runner waits for its previous run to finish on the GPU before it starts the
        # next (one model instance), so one sleep ahead of five runs leaves the GPU idle at the start
        # of runs 2-5. Serving keeps the GPU busy: work queued ahead of every run.
        for _ in range(5):
            torch.cuda._sleep(int(10e-3 * 1.98e9))
            runner(x)

    def package_own_stream_busy():
        with torch.cuda.stream(own):
            package_calls_busy()

    compare_with_profiler("AOTInductor package, idle GPU", package_calls, d, strict=False)
    compare_with_profiler("AOTInductor package, one sleep ahead of 5 runs", queued(package_calls), d, strict=False)
    compare_with_profiler("AOTInductor package, GPU busy", package_calls_busy, d)
    compare_with_profiler("AOTInductor package, own stream, GPU busy", package_own_stream_busy, d)
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
