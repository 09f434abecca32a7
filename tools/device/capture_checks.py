"""Exact kernel time from the profilers that own CUPTI, on a GPU: trt_trace.captures against the fake
TensorRT's known kernel lengths, with the real Torch-TensorRT 2.11 runtime. The fake's enqueue copies the
input, then launches a kernel that spins for gpu_us on the GPU's %globaltimer and stamps its own first and
last reading into device memory (faketrt.spin_stamps: each launch's length as the kernel saw it, no profiler
involved). A profiler's kernel record also spans the grid's launch on the SM and its exit, a fixed cost the
stamps cannot see (~0.55 µs on the H200): the same code launched with a zero-length spin outside any call
(faketrt.fixed_cost_probe) measures it, read from the capture's raw records, not through trt_trace's reader.
A call's known length = its own stamped spin + that fixed cost (docs/captures.md, "How the proof knows").

Imported by tools/device/real_runtime_check.py (checks `profiler_kernels` and `nsys_kernels`, e.g.
`CHECKS=real_runtime_check REAL_CHECKS="profiler_kernels nsys_kernels" bash tools/device/device_check.sh`).
An nsys capture made where its report cannot be imported (QdstrmImporter missing) is verified later,
on any machine with nsys, from the files the check leaves in $OUT:

    python tools/device/capture_checks.py verify-nsys DIR     (DIR: run.sqlite or run.qdstrm, trace.json, truth.json,
                                                               stamps.json)

Each check prints PASS/FAIL lines with figures; per size: the calls' kernel time from the capture beside
trt_trace's own CUDA-event `gpu` span of the same calls and the fake's own event-timed work.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

SIZES_US = (10, 40, 150, 400)
ROUNDS = 30
SPIN = "spin_kernel"  # the fake's kernel (tests/faketrt/faketrt.cu)
Check = Callable[[str, bool, str], None]


PROBES = 50  # zero-length launches of the fixed-cost probe per capture
PROBE = "fixed_cost_probe"


def within(measured_ns: int, known_ns: float, nominal_us: float) -> bool:
    """The issue's goal: within 1% + 0.5 µs of the kernel's known length."""
    return abs(measured_ns - known_ns) <= 0.01 * nominal_us * 1000 + 500


def stamp_lengths(stamps: list) -> list[int]:  # noqa: ANN001
    return [int(b) - int(a) for a, b in stamps]


def fixed_cost_ns(probe_durations: list[int], probe_stamps: list) -> tuple[float | None, str]:  # noqa: ANN001
    """What the profiler's kernel record holds beyond the kernel's own stamped length: the median over the
    zero-length probes (in launch order on one stream, as the capture has them) of duration - stamped."""
    lengths = stamp_lengths(probe_stamps)
    if not probe_durations or len(probe_durations) != len(lengths):
        return None, f"{len(probe_durations)} probe kernel(s) in the capture, {len(lengths)} stamped"
    extra = [d - s for d, s in zip(probe_durations, lengths, strict=True)]
    return float(statistics.median(extra)), (f"fixed cost {statistics.median(extra):.0f} ns (probe kernels "
                                             f"{min(extra)}..{max(extra)} ns beyond their stamps, {len(extra)})")


def torch_profiler_probes(path: Path) -> list[int]:
    """The probe kernels' durations (ns) straight from the exported JSON, in start order."""
    import gzip

    raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    events = json.loads(raw)
    events = events.get("traceEvents", []) if isinstance(events, dict) else events
    probes = sorted((e["ts"], e["dur"]) for e in events if e.get("cat") == "kernel" and PROBE in str(e.get("name")))
    return [round(d * 1000) for _, d in probes]


def nsys_probes(sqlite: Path) -> list[int]:
    """The probe kernels' durations (ns) straight from the export's kernel table, in start order."""
    import sqlite3

    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT k.start, k.end FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = "
                           "k.demangledName WHERE s.value LIKE ? ORDER BY k.start", (f"%{PROBE}%",)).fetchall()
    finally:
        con.close()
    return [int(e) - int(b) for b, e in rows]


def nsys_raw_api_calls(sqlite: Path, pid: int, tid: int, begin: int, end: int) -> int:
    """CUDA runtime/driver rows of the export on one thread in [begin, end] (ns), by plain SQL: whether a
    call without CUDA activity is the capture's gap (none there either) or the reader's miss."""
    import sqlite3

    con = sqlite3.connect(f"file:{sqlite}?mode=ro", uri=True)
    try:
        return int(con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE ((globalTid >> 24) & 16777215) "
                               "= ? AND (globalTid & 16777215) = ? AND start >= ? AND start <= ?",
                               (pid, tid, begin, end)).fetchone()[0])
    finally:
        con.close()


def trace_of(path: str) -> dict[int, dict]:
    """trt_trace's own calls: {call_id: {engine, thread, begin, end, gpu (ns or None)}}."""
    from trt_trace.analysis.trace_summary import load_events

    out: dict[int, dict] = {}
    for e in load_events(path):
        if e.get("ph") != "X" or e.get("cat") != "trt_trace":
            continue
        c = out.setdefault(e["args"]["call_id"], {"gpu": None})
        if e["name"] == "execute_engine":
            c.update(engine=e["args"]["engine"], thread=e["args"]["thread"], begin=round(e["ts"] * 1000),
                     end=round((e["ts"] + e["dur"]) * 1000))
        elif e["name"] == "gpu":
            c["gpu"] = round(e["dur"] * 1000)
    return {k: v for k, v in out.items() if "engine" in v}


def evaluate(label: str, calls, trace: dict[int, dict], sizes: dict[str, float],  # noqa: ANN001
             truth: dict[str, list[int]], per_key: int, check: Check, by_call_id: bool,
             stamps: dict[str, list], probe_durations: list[int],
             raw_api_calls: Callable[[int, int, int, int], int] | None = None, concurrent: bool = False) -> None:
    """The proof, from a capture's calls (trt_trace.captures.model.CaptureCalls), trt_trace's trace, each
    engine's stamped spins (launch order) and the probe kernels' durations read raw from the capture."""
    import numpy as np

    from trt_trace.captures import align

    names = calls.engine_names()
    ours = sorted(trace.items(), key=lambda kv: kv[1]["begin"])
    t_engine = np.asarray([c["engine"] for _, c in ours], dtype=object)
    t_tid = np.asarray([c["thread"] for _, c in ours], dtype=np.int64)
    t_begin = np.asarray([c["begin"] for _, c in ours], dtype=np.int64)
    t_end = np.asarray([c["end"] for _, c in ours], dtype=np.int64)
    t_id = np.asarray([k for k, _ in ours], dtype=np.int64)
    t_gpu = [c["gpu"] for _, c in ours]
    keys = {(str(e), int(t)) for e, t in zip(names, calls.tid, strict=True) if str(e) in sizes}
    per = {k: int(((names == k[0]) & (calls.tid == k[1])).sum()) for k in keys}
    threads = len({t for _, t in keys})
    check(f"{label}: every engine call in the capture, per engine and thread",
          len(keys) == len(sizes) * threads and set(per.values()) == {per_key},
          f"{len(calls)} calls, {threads} thread(s), calls per (engine, thread) {sorted(set(per.values()))}")
    acts = calls.activities
    spin = np.asarray([SPIN in n for n in calls.activity_names], dtype=bool)
    is_spin = (acts.kind == 0) & spin[acts.name] if len(acts) else np.zeros(0, dtype=bool)
    spins = np.bincount(acts.call[is_spin], minlength=len(calls))
    engine_call = np.asarray([str(n) in sizes for n in names])
    # Calls in whose time the capture holds no CUDA record at all: the profiler's gap (checked by plain
    # SQL where it can be), its own line; the kernel checks below are of the calls it recorded.
    gap = calls.no_cuda_activity() & engine_call
    if gap.any():
        by_thread = {int(t): int((gap & (calls.tid == t)).sum()) for t in np.unique(calls.tid[gap])}
        span = (f"{(calls.begin_ns[gap].min()) / 1e6:.1f}..{calls.end_ns[gap].max() / 1e6:.1f} ms "
                f"of the capture's clock")
        raw = (sum(raw_api_calls(int(calls.pid[r]), int(calls.tid[r]), int(calls.begin_ns[r]), int(calls.end_ns[r]))
                   for r in np.flatnonzero(gap)) if raw_api_calls else None)
        what = (f"{int(gap.sum())} call(s) (per thread {by_thread}, {span}) have no CUDA API or kernel record in "
                f"the capture: a gap in the profiler's recording, not attributed anywhere")
        if raw == 0:
            print(f"INFO  {label}: capture gap  {what}; the export's own CUPTI_ACTIVITY_KIND_RUNTIME holds 0 rows "
                  f"there (plain SQL): the profiler recorded none; these calls are left out of the checks below")
        else:
            check(f"{label}: no capture gap (every call has CUDA activity in the capture)", False,
                  what + ("" if raw is None else f"; yet the export holds {raw} CUDA API row(s) there: a reader miss"))
    mine = engine_call & ~gap
    check(f"{label}: every call's kernels found through the profiler's correlation ids",
          bool(mine.any()) and (spins[mine] == 1).all() and (calls.launches_unmatched[mine] == 0).all()
          and (calls.kernels[mine] == 1).all(),
          f"spin kernels per call {sorted(set(spins[mine].tolist()))}, kernels per call "
          f"{sorted(set(calls.kernels[mine].tolist()))}, copies per call "
          f"{sorted(set(calls.copies[mine].tolist()))}, launches without device activity "
          f"{int(calls.launches_unmatched[mine].sum())}")
    i, j = align.pair_calls(calls, t_engine, t_tid, t_begin, t_id if by_call_id else None)
    fit = align.align(calls, t_engine, t_tid, t_begin, t_end, t_id if by_call_id else None)
    check(f"{label}: the capture's calls are trt_trace's (paired one to one, one clock offset contains every call)",
          fit.matched == int(engine_call.sum()) == len(trace) and fit.contained_within(1000),
          f"{fit.matched} paired of {len(calls)} / {len(trace)}; containment slack {fit.high_ns - fit.low_ns} ns")
    span_of = {int(a): t_gpu[int(b)] for a, b in zip(i, j, strict=True)}
    fixed, fixed_detail = fixed_cost_ns(probe_durations, stamps.get(PROBE, []))
    check(f"{label}: the kernel's fixed cost beyond its stamped spin, from {PROBES} zero-length probes",
          fixed is not None and 0 <= fixed < 5000, fixed_detail)
    wrong = 0
    ordered = sorted(sizes.items(), key=lambda kv: kv[1])

    def med(v: list) -> float:
        return float(statistics.median(v)) if len(v) else float("nan")
    for name, us in ordered:
        # The engine's calls in call order = its launches' order (the runtime holds the engine's lock for
        # the whole call), so the n-th call's kernel is the n-th stamped spin.
        m_all = np.flatnonzero(names == name)
        m_all = m_all[np.argsort(calls.begin_ns[m_all], kind="stable")]
        lengths = stamp_lengths(stamps.get(name, []))
        if len(lengths) != len(m_all) or fixed is None:
            check(f"{label}, {us:.0f} us engine: every call's spin stamped", False,
                  f"{len(lengths)} stamped spins for {len(m_all)} calls; {fixed_detail}")
            continue
        keep = ~gap[m_all]
        m = m_all[keep]
        known = [lengths[p] + fixed for p in np.flatnonzero(keep)]
        k = calls.kernel_ns[m]
        nearest = [min(ordered, key=lambda kv, v=int(v): abs(kv[1] * 1000 - v))[0] for v in k]
        wrong += sum(n != name for n in nearest)
        ok = [within(int(v), ref, us) for v, ref in zip(k, known, strict=True)]
        err = [int(v) - ref for v, ref in zip(k, known, strict=True)]
        nominal_err = [int(v) - us * 1000 for v in k]
        spans = [span_of.get(int(r)) for r in m]
        spans = [s for s in spans if s is not None]
        t = truth.get(name, [])
        ratio = med(spans) / med(k) if len(k) and med(k) > 0 else float("nan")
        left = f" ({int((~keep).sum())} in the capture gap left out)" if (~keep).any() else ""
        check(f"{label}, {us:.0f} us engine: gpu kernels per call within 1% + 0.5 us of the kernel's known length "
              f"(its stamped spin + the fixed cost)", len(k) > 0 and all(ok),
              f"{sum(ok)}/{len(k)} calls{left}; kernel median {med(k) / 1e3:.3f} us, known median "
              f"{med(known) / 1e3:.3f} us (error median {med(err):+.0f} ns, max |error| "
              f"{max(map(abs, err), default=0):.0f} ns; against the nominal {us:.0f} us: {med(nominal_err):+.0f} ns) | "
              f"trt_trace gpu span median {med(spans) / 1e3:.3f} us ({len(spans)} spans, span/kernel {ratio:.3f}) | "
              f"fake's own events (copy + kernel) median {med(t) / 1e3:.3f} us")
        tight = [abs(e) <= 500 for e in err]
        if concurrent:
            # Two streams' kernels overlap on the GPU: a kernel's recorded start can precede its first
            # instruction (the stamps) by a few us now and then, in the capture itself (the table's kernel
            # union is checked against the capture's raw records below). A reader off by 1 us would move
            # the median error; each call stays within the bound above.
            check(f"{label}, {us:.0f} us engine: the median kernel time within 0.5 us of its known length (a "
                  f"reader off by 1 us fails at every size)", len(k) > 0 and abs(med(err)) <= 500,
                  f"error median {med(err):+.0f} ns; {sum(tight)}/{len(k)} calls within 0.5 us")
        else:
            check(f"{label}, {us:.0f} us engine: every call's kernel time within 0.5 us of its known length (a "
                  f"reader off by 1 us fails at every size)", len(k) > 0 and all(tight), f"{sum(tight)}/{len(k)} calls")
    check(f"{label}: no call's kernel time is nearer another engine's size (none attributed to the wrong engine)",
          wrong == 0, f"{wrong} call(s) nearer another size" + (f"; {int(gap.sum())} call(s) in the capture gap "
                                                                 f"not counted" if gap.any() else ""))


def _engines(faketrt, prefix: str):  # noqa: ANN001, ANN202
    import torch

    plans = [faketrt.Plan(f"{prefix}_{us}us_engine", gpu_us=us) for us in SIZES_US]
    engines = [faketrt.make_engine(p) for p in plans]
    x = torch.randn(16, 16, device="cuda")
    for e in engines:
        torch.ops.tensorrt.execute_engine([x], e)
    torch.cuda.synchronize()
    for p in plans:
        faketrt.work_ns(p.name)
        faketrt.spin_stamps(p.name)  # the warm-up's spins are no call of the capture
    return plans, engines, x


def _rounds(engines: list, x, rounds: int, stream=None) -> None:  # noqa: ANN001
    import torch

    with torch.cuda.stream(stream or torch.cuda.current_stream()):
        for _ in range(rounds):
            torch.cuda._sleep(2_000_000)  # ~1 ms: the GPU busy ahead of the calls (queued, as when serving)
            for e in engines:
                torch.ops.tensorrt.execute_engine([x], e)
        torch.cuda.current_stream().synchronize()


def _work(engines: list, x, threads: int) -> None:  # noqa: ANN001
    """ROUNDS rounds of every engine: on this thread and its current stream, or on `threads` new threads,
    each on a stream of its own, released together."""
    import torch

    if threads == 1:
        _rounds(engines, x, ROUNDS)
        return
    barrier = threading.Barrier(threads)

    def worker() -> None:
        s = torch.cuda.Stream()
        barrier.wait()
        _rounds(engines, x, ROUNDS, s)
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def profiler_kernels(d: Path, check: Check, faketrt) -> None:  # noqa: ANN001
    """torch.profiler with CUDA activity over the real runtime's calls: one thread on the default stream,
    then two threads on two streams of their own (the profiler recording every thread)."""
    import torch

    import trt_trace
    from trt_trace.captures import report, torch_profiler

    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    for label, threads in (("torch.profiler, one thread, default stream", 1),
                           ("torch.profiler, two threads, two streams", 2)):
        plans, engines, x = _engines(faketrt, f"_run_on_acc_prof{threads}")
        trace, prof_path = d / f"prof{threads}.trace.json", d / f"prof{threads}.json.gz"
        config = None
        if threads > 1:
            try:
                config = torch._C._profiler._ExperimentalConfig(profile_all_threads=True)
            except TypeError as e:
                check(label, False, f"this torch has no profile_all_threads ({e})")
                continue
        with trt_trace.tracing(str(trace)):
            with torch.profiler.profile(activities=acts, experimental_config=config) as prof:
                probes = faketrt.fixed_cost_probe(PROBES)  # outside every engine call
                _work(engines, x, threads)
                torch.cuda.synchronize()
        prof.export_chrome_trace(str(prof_path))
        truth = {p.name: faketrt.work_ns(p.name) for p in plans}
        stamps = {p.name: faketrt.spin_stamps(p.name) for p in plans} | {PROBE: probes}
        calls = torch_profiler.read(str(prof_path))
        print(f"      {prof_path.name}: {prof_path.stat().st_size >> 10} KiB; notes {calls.notes}")
        evaluate(label, calls, trace_of(str(trace)), {p.name: p.gpu_us for p in plans}, truth, ROUNDS, check,
                 by_call_id=False, stamps=stamps, probe_durations=torch_profiler_probes(prof_path),
                 concurrent=threads > 1)
        print("\n".join("      " + ln for ln in report.format_engine_table(calls).splitlines()))
        print("\n".join("      " + ln for ln in report.format_top_kernels(calls, 2).splitlines()[:6]))
        cli_checks(label, prof_path, trace, calls, check, d)


def cli_checks(label: str, capture: Path, trace: Path, calls, check: Check, out_dir: Path) -> None:  # noqa: ANN001
    """The same capture through the CLI (the readers registry): `summary --json --kernels` gives each
    engine's exact kernel sum, and `merge` puts every kernel of a paired call after its call's start on
    trt_trace's timeline (a kernel starts after its launch, which is inside the call)."""
    import numpy as np

    cli = [sys.executable, "-c", "import sys, trt_trace_cli; sys.exit(trt_trace_cli.main())"]
    p = subprocess.run([*cli, "summary", str(capture), "--json", "--kernels", "3"], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        check(f"{label}: trt-trace summary --kernels", False, p.stderr.strip()[-300:])
        return
    doc = json.loads(p.stdout)
    names = calls.engine_names()
    bad = []
    for row in doc["engines"]:
        m = names == row["engine"]
        want_ms, want_k = int(calls.kernel_ns[m].sum()) / 1e6, int(calls.kernels[m].sum())
        if abs(row.get("gpu_kernels_ms", -1) - want_ms) > 1e-6 or row.get("kernels") != want_k:
            bad.append((row["engine"], row.get("gpu_kernels_ms"), want_ms, row.get("kernels"), want_k))
    check(f"{label}: summary's gpu kernels ms = the capture's kernel unions, per engine", not bad and
          bool(doc.get("top_kernels")), f"{len(doc['engines'])} engines; top kernel "
          f"{(doc.get('top_kernels') or [{}])[0].get('name')}; {bad[:3]}")
    merged = out_dir / f"{capture.name}.merged.json"
    p = subprocess.run([*cli, "merge", str(trace), str(capture), "-o", str(merged)], capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        check(f"{label}: trt-trace merge", False, p.stderr.strip()[-300:])
        return
    events = json.loads(merged.read_text())
    starts = {e["args"]["call_id"]: e["ts"] for e in events
              if e.get("cat") == "trt_trace" and e.get("name") == "execute_engine"}
    kernels = [e for e in events if str(e.get("cat", "")).startswith(f"{calls.source} ") and e.get("ph") == "X"]
    early = [e for e in kernels if e["ts"] < starts.get(e["args"]["call_id"], -1e30) - 1.0]
    placed = [d for d in events if d.get("name") == "trt_trace_metadata"][-1]["args"]["merged"]["captures"][0]
    check(f"{label}: merge places every kernel/copy, none before its call's start", placed["placed_activities"] ==
          len(calls.activities) == len(kernels) and not early,
          f"{len(kernels)} of {len(calls.activities)} placed; {len(early)} early; " + " | ".join(
              p.stdout.strip().splitlines()[-2:]) + f"; median kernel {np.median([k['dur'] for k in kernels]):.1f} µs")


# ---- Nsight Systems ------------------------------------------------------------------------------

def find_nsys() -> str | None:
    """TRT_TRACE_NSYS, the one tools/device/nsys_probe.sh unpacked (/tmp/nsys/...), or one on the PATH."""
    for c in (os.environ.get("TRT_TRACE_NSYS"), "/tmp/nsys/target-linux-x64/nsys", shutil.which("nsys")):
        if c and os.access(c, os.X_OK):
            return c
    return None


def nsys_child(fake: str, runtime: str, out: str) -> int:
    """In the process nsys profiles: after a warm-up call of each engine, one thread's rounds, then two
    threads' on two streams, traced into out/trace.json with NVTX ranges (only traced calls get them);
    the fake's own GPU work per call into out/truth.json."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "faketrt"))
    import faketrt
    import torch

    import trt_trace  # the hook in place before the runtime loads

    faketrt.load(fake)
    torch.ops.load_library(runtime)
    plans, engines, x = _engines(faketrt, "_run_on_acc_nsys")
    # nsys records from here (--capture-range=cudaProfilerApi), leaving the process's start-up out. nsys 2023.4
    # on the H100 still fails to import this capture ("Unknown runtime API function index: 486", a CUDA 13
    # runtime call made inside the range too, 2026-12-06), while nsys_range's capture of the same engines imports.
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    trt_trace.start(str(Path(out, "trace.json")), nvtx=True)
    _rounds(engines, x, ROUNDS)
    ts = [threading.Thread(target=_rounds, args=(engines, x, ROUNDS, torch.cuda.Stream())) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    torch.cuda.synchronize()
    trt_trace.stop()
    # After the calls, on a thread of their own: nsys 2023.4 on the H200 loses every CUDA record of the
    # main thread from some point of its phase on, so probes launched there are lost too (captures.md).
    got: list = []
    probe_thread = threading.Thread(target=lambda: got.append(faketrt.fixed_cost_probe(PROBES)))
    probe_thread.start()
    probe_thread.join()
    probes = got[0] if got else []
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    Path(out, "truth.json").write_text(json.dumps({p.name: faketrt.work_ns(p.name) for p in plans}))
    Path(out, "stamps.json").write_text(json.dumps({p.name: faketrt.spin_stamps(p.name) for p in plans} |
                                                   {PROBE: probes}))
    return 0


def verify_nsys(folder: Path, check: Check) -> None:
    """The proof from an nsys export (run.sqlite) and the same run's trace.json and truth.json: the main
    thread's rounds, then two threads' on two streams, each thread 30 calls of each engine."""
    from trt_trace.captures import nsys_sqlite, report

    calls = nsys_sqlite.read(str(folder / "run.sqlite"))
    print(f"      nsys {calls.metadata.get('export_product_version')}; notes {calls.notes}")
    check("nsys: the capture holds CUDA activity", calls.has_device_activity, f"{len(calls.activities)} activities")
    import sqlite3

    with sqlite3.connect(str(folder / "run.sqlite")) as con:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "CUPTI_ACTIVITY_KIND_KERNEL" not in tables:  # seen with nsys 2023.4 (CUPTI 12.4) under a CUDA 13 driver
        log = (folder / "profile.log").read_text() if (folder / "profile.log").exists() else ""
        unknown = re.search(r"Unknown runtime API function index: \d+", log)
        check("nsys: the capture holds the calls' kernels", False,
              f"no kernel table in the export of nsys {calls.metadata.get('export_product_version')}"
              + (f": its import failed on a call it does not know ({unknown.group(0)})" if unknown else "")
              + ", so nothing here can be compared")
        return
    truth = json.loads((folder / "truth.json").read_text())
    stamps = json.loads((folder / "stamps.json").read_text())
    sqlite = folder / "run.sqlite"
    evaluate("nsys, one thread then two threads on two streams", calls, trace_of(str(folder / "trace.json")),
             {f"_run_on_acc_nsys_{us}us_engine": us for us in SIZES_US}, truth, ROUNDS, check, by_call_id=True,
             stamps=stamps, probe_durations=nsys_probes(sqlite), concurrent=True,
             raw_api_calls=lambda pid, tid, b, e: nsys_raw_api_calls(sqlite, pid, tid, b, e))
    print("\n".join("      " + ln for ln in report.format_engine_table(calls).splitlines()))
    cli_checks("nsys", folder / "run.sqlite", folder / "trace.json", calls, check, folder)


def profile_and_export(nsys: str, cmd: list[str], env: dict[str, str], keep: Path, label: str, check: Check,
                       timeout: int) -> bool:
    """Runs `nsys profile` (cmd, writing keep/run.nsys-rep; its output in keep/profile.log), then exports the
    report to keep/run.sqlite; False after one FAIL line where either step failed. Without a report, the
    capture's .qdstrm is kept as keep/run.qdstrm, to import where QdstrmImporter runs (verify-nsys)."""
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    (keep / "profile.log").write_text(p.stdout + p.stderr)
    rep = keep / "run.nsys-rep"
    if not rep.exists():
        qd = sorted(keep.glob("*.qdstrm")) + sorted(Path("/tmp").glob("nsys-report-*.qdstrm"))
        for q in qd[-1:]:
            if q != keep / "run.qdstrm":
                shutil.copy(q, keep / "run.qdstrm")
        kept = f"kept {keep / 'run.qdstrm'} to import elsewhere" if qd else "no .qdstrm"
        tail = " | ".join((p.stdout + p.stderr).strip().splitlines()[-4:])
        check(f"{label}: nsys made a report here", False, f"rc {p.returncode}; {kept}; {tail[:400]}")
        return False
    e = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite=true", "-o", str(keep / "run.sqlite"),
                        str(rep)], capture_output=True, text=True, timeout=300)
    if e.returncode != 0 or not (keep / "run.sqlite").exists():
        check(f"{label}: nsys export --type sqlite", False, (e.stdout + e.stderr)[-400:])
        return False
    return True


def nsys_kernels(d: Path, check: Check, fake: str, runtime: str) -> None:
    """The same proof under Nsight Systems (`nsys profile --trace=cuda,nvtx`, trt_trace's NVTX ranges on, the
    calls and probes inside a cudaProfilerStart/Stop range), where
    an nsys runs on this machine; the files go to $OUT/nsys (an export, or the .qdstrm to import elsewhere)."""
    nsys = find_nsys()
    if nsys is None:
        check("nsys_kernels: an nsys on this machine", False,
              "none (TRT_TRACE_NSYS, /tmp/nsys from tools/device/nsys_probe.sh, PATH): see nsys_probe.sh")
        return
    keep = Path(os.environ.get("OUT", str(d))) / "nsys"
    keep.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    extra = os.environ.get("NSYS_EXTRA_FLAGS", "").split()  # e.g. --cuda-flush-interval=100, to probe the gap
    cmd = [nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--force-overwrite=true",
           "--capture-range=cudaProfilerApi", "--capture-range-end=stop", *extra,
           "-o", str(keep / "run"), sys.executable, __file__, "nsys-child", fake, runtime, str(keep)]
    print(f"      {' '.join(cmd[:10 + len(extra)])} ...")
    if not profile_and_export(nsys, cmd, env, keep, "nsys_kernels", check, timeout=540):
        return
    verify_nsys(keep, check)


RANGE_INSIDE_US, RANGE_OUTSIDE_US = 40, 400  # the engine called inside the session, and the one outside it
RANGE_CALLS = 60                              # calls inside; the same number before it and after it
RANGE_OUTSIDE_MARK = "trt_trace_check_outside_call"  # the child's own NVTX range around each call outside


def nsys_range_child(fake: str, runtime: str, out: str) -> int:
    """In the process nsys profiles with --capture-range=cudaProfilerApi and TRT_TRACE_CUDA_PROFILER=session:
    RANGE_CALLS calls of a 400 us engine, a tracing() session of RANGE_CALLS calls of a 40 us engine, then
    RANGE_CALLS of the 400 us one again. Only the session's kernels may be in the capture."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "faketrt"))
    import faketrt
    import torch

    import trt_trace  # the hook in place before the runtime loads

    faketrt.load(fake)
    torch.ops.load_library(runtime)
    inside = faketrt.make_engine(faketrt.Plan("_run_on_acc_range_inside_engine", gpu_us=RANGE_INSIDE_US))
    outside = faketrt.make_engine(faketrt.Plan("_run_on_acc_range_outside_engine", gpu_us=RANGE_OUTSIDE_US))
    x = torch.randn(16, 16, device="cuda")

    def calls(engine, marker: str | None = None) -> None:  # noqa: ANN001
        for _ in range(RANGE_CALLS):
            if marker:  # an NVTX range of our own around each call outside the session
                torch.cuda.nvtx.range_push(marker)
            torch.ops.tensorrt.execute_engine([x], engine)
            if marker:
                torch.cuda.nvtx.range_pop()
        torch.cuda.synchronize()
    calls(outside, RANGE_OUTSIDE_MARK)
    with trt_trace.tracing(str(Path(out, "range.json")), nvtx=True):
        calls(inside)
    calls(outside, RANGE_OUTSIDE_MARK)
    return 0


def nsys_range(d: Path, check: Check, fake: str, runtime: str) -> None:
    """`nsys profile --capture-range=cudaProfilerApi` of a process with TRT_TRACE_CUDA_PROFILER=session records
    the session's calls and nothing else: every call of the session's engine (its kernels and NVTX ranges) and
    no kernel of the engine called before and after it."""
    import sqlite3

    nsys = find_nsys()
    if nsys is None:
        check("nsys_range: an nsys on this machine", False, "none (TRT_TRACE_NSYS, /tmp/nsys, PATH)")
        return
    keep = Path(os.environ.get("OUT", str(d))) / "nsys_range"
    keep.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_CUDA_PROFILER"] = "session"
    cmd = [nsys, "profile", "--trace=cuda,nvtx", "--sample=none", "--cpuctxsw=none", "--force-overwrite=true",
           "--capture-range=cudaProfilerApi", "--capture-range-end=stop", "-o", str(keep / "run"),
           sys.executable, __file__, "nsys-range-child", fake, runtime, str(keep)]
    print(f"      {' '.join(cmd[:9])} ...")
    if not profile_and_export(nsys, cmd, env, keep, "nsys_range", check, timeout=400):
        return
    con = sqlite3.connect(str(keep / "run.sqlite"))
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    spins: list[float] = []
    if "CUPTI_ACTIVITY_KIND_KERNEL" in tables:
        spins = [(end - start) / 1000 for start, end, name in con.execute(
            "SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName")
            if "spin_kernel" in name]
    from trt_trace.captures import CaptureError, nsys_sqlite

    try:  # trt_trace's NVTX ranges in the capture, one per call (its call id the payload)
        captured = nsys_sqlite.read(str(keep / "run.sqlite"))
        ranges = len({int(c) for c in captured.call_id if c >= 0})
    except CaptureError as err:
        print(f"      no NVTX ranges read: {err}")
        ranges = 0
    from trt_trace.analysis.trace_summary import load_events

    traced = sum(1 for ev in load_events(str(keep / "range.json"))
                 if ev.get("name") == "execute_engine" and ev.get("ph") == "X")
    marks = 0
    if "NVTX_EVENTS" in tables:
        marks = con.execute("SELECT count(*) FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId "
                            "WHERE coalesce(n.text, s.value) = ?", (RANGE_OUTSIDE_MARK,)).fetchone()[0]
    long_ones = sum(1 for us in spins if us > (RANGE_INSIDE_US + RANGE_OUTSIDE_US) / 2)
    print(f"      capture: {ranges} trt_trace NVTX range(s), {marks} of the outside calls' own NVTX ranges, "
          + (f"{len(spins)} spin kernel(s) ({long_ones} of the outside engine's length)" if spins else
             "no kernel recorded (this nsys records none here: see nsys_kernels)") + f"; the trace: {traced} call(s)")
    check("nsys_range: every call of the session is in the capture",
          traced == RANGE_CALLS and ranges == RANGE_CALLS and (not spins or len(spins) - long_ones == RANGE_CALLS),
          f"{ranges} NVTX ranges" + (f", {len(spins) - long_ones} kernels" if spins else "")
          + f" of {traced} traced calls ({RANGE_CALLS} made)")
    check("nsys_range: nothing from before or after the session in the capture", marks == 0 and long_ones == 0,
          f"{marks} of the {2 * RANGE_CALLS} outside calls' NVTX ranges, {long_ones} of their kernels captured")


def main() -> int:
    if len(sys.argv) >= 2 and sys.argv[1] == "nsys-child":
        return nsys_child(*sys.argv[2:5])
    if len(sys.argv) >= 2 and sys.argv[1] == "nsys-range-child":
        return nsys_range_child(*sys.argv[2:5])
    if len(sys.argv) == 3 and sys.argv[1] == "verify-nsys":
        folder = Path(sys.argv[2])
        failures = []

        def check(name: str, ok: bool, detail: str = "") -> None:
            failures.extend([] if ok else [name])
            print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail}", flush=True)
        if not (folder / "run.sqlite").exists() and (folder / "run.qdstrm").exists():
            nsys = find_nsys() or shutil.which("nsys")
            importer = Path(nsys).parents[1] / "host-linux-x64" / "QdstrmImporter" if nsys else None
            if importer is None or not importer.exists():
                print("verify-nsys: run.qdstrm needs QdstrmImporter (tools/install_nsys.sh's nsys, TRT_TRACE_NSYS)")
                return 2
            subprocess.run([str(importer), "-i", str(folder / "run.qdstrm")], check=True)
            subprocess.run([nsys, "export", "--type", "sqlite", "-o", str(folder / "run.sqlite"),
                            str(folder / "run.nsys-rep")], check=True)
        verify_nsys(folder, check)
        print(f"{len(failures)} check(s) failed")
        return 1 if failures else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
