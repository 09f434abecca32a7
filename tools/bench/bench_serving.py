"""What tracing costs a server that runs flat out, and whether it keeps up (issue 37 items 2 and 8).

    python tools/bench/bench_serving.py [--seconds 3] [--repeats 3] [--threads 1 8] [--engines 14]
                                        [--cpus 0,1] [--arms untraced traced] [--rate R ...]

A package of stand-in engines with no host work (the stand-in's AOTInductor package,
model.package_model, of `--engines` engines: demo_specs' shapes, host_us 0, no layers, one device pass)
is called in a busy loop (`runner(x)`, nothing else) on 1 and on 8 threads, `--seconds` per arm, in
one child process (pinned with taskset to `--cpus`). The arms alternate inside each repeat (which
goes first alternates too), so the traced and the untraced loop see the same machine:

  untraced   trt_trace loaded, no session (what a process without TRT_TRACE_OUT runs)
  traced     trt_trace.start(path) with the defaults, as TRT_TRACE_OUT starts it: a Chrome JSON file
             written by the native writer thread every 50 ms, GPU spans and NVTX at their defaults
  traced, <ablation>   the same session with one part switched off, to find where the cost goes:
             "no GPU" (gpu=False), "writer held" (the writer thread wakes but does not drain, so its
             CPU time is not taken from the loop; the rings fill and calls drop: cost figures only),
             "switch only" (no session: ops.set_profile_execution, the per-engine counters alone),
             "writer idle" (the writer thread at SCHED_IDLE: it runs in spare CPU time only),
             "writer default slice" (the writer thread's time slice back to the kernel's default: the
             writer asks for a long one, so that serving threads woken beside it run first),
             "writer slice N ms" (the writer thread's slice set to N ms instead of its own 20 ms, N from 0.1 to
             100: the kernel's bounds)

Per arm: runner calls/s over the whole arm, and for traced arms the drops (events and calls, from the
file's end record), the engine calls in the file (read back with the project's reader) against those
executed, the drain lag (records produced but not yet drained, sampled every 20 ms, as ms of the
loop at the arm's rate: median and max; a sample whose two reads were more than 5 ms apart is left out
and counted: a busy runner loop can keep the sampling thread from the GIL for seconds, traced or not),
and the process's peak RSS during the arm (VmRSS every 20 ms). Every arm's sampling thread makes the same
reads (the writer's status and the threads' counts) every 20 ms, so that each arm's loop shares the GIL with
the same work.
The summary gives each arm's median calls/s over the repeats and each traced arm's ratio to the
untraced median of the same thread count.

--burners N: N busy processes on the same CPUs for the whole run, so that no core is idle (the writer
thread's CPU time is then taken from the loop's, as on a server that uses every core).

--rate R: a paced arm instead of flat out: each thread makes R runner calls per second (the
sustainable rate question: at which rate per thread does nothing drop); repeat --rate for several.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ARMS = ("untraced", "traced", "traced, .pftrace", "traced, no GPU", "traced, writer held", "traced, writer idle",
        "traced, writer default slice", "switch only")


def _writer_tid() -> int:
    """The native writer thread's id (named trt_trace-write)."""
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/comm") as f:
            if f.read().strip() == "trt_trace-write":
                return int(tid)
    raise RuntimeError("no trt_trace-write thread in this process")


def _writer_at_idle_priority() -> None:
    """The writer thread moved to SCHED_IDLE, for the `traced, writer idle` arm: a writer that runs only in the CPU
    time no thread of normal priority wants. Tried and not kept (BENCHMARKS.md, "A writer in spare time, tried"):
    with no spare CPU it stops, and the file with it."""
    os.sched_setscheduler(_writer_tid(), os.SCHED_IDLE, os.sched_param(0))


def _writer_slice_ms() -> float | None:
    """The writer thread's time slice as the kernel holds it (/proc's sched, se.slice; EEVDF kernels), in ms."""
    try:
        with open(f"/proc/self/task/{_writer_tid()}/sched") as f:
            for line in f:
                if line.startswith("se.slice"):
                    return int(line.split(":")[1]) / 1e6
    except (OSError, ValueError, RuntimeError):
        pass
    return None


def _slice_arm_ms(arm: str) -> float | None:
    """N of a `traced, writer slice N ms` arm; None for any other arm."""
    prefix, suffix = "traced, writer slice ", " ms"
    if arm.startswith(prefix) and arm.endswith(suffix):
        return float(arm[len(prefix):-len(suffix)])
    return None


def _arm(text: str) -> str:
    """An --arms value: one of ARMS, or `traced, writer slice N ms` with N within the kernel's 0.1-100 ms."""
    try:
        ms = _slice_arm_ms(text)
    except ValueError:  # N is not a number
        ms = None
    if text in ARMS or (ms is not None and 0.1 <= ms <= 100):
        return text
    raise argparse.ArgumentTypeError(f"{text!r}: not an arm (one of {', '.join(ARMS)}, or 'traced, writer slice N ms' "
                                     "with N from 0.1 to 100)")


def _writer_at_slice(runtime_ns: int) -> None:
    """For the `traced, writer default slice` arm (runtime 0: the kernel's default, as before the writer asked for a
    long one; the ablation of that hint) and the `traced, writer slice N ms` arms: the writer thread's slice set
    with sched_setattr, its policy and nice value kept."""
    import ctypes
    import platform
    import struct

    # Python has no binding for these two calls; their numbers below are x86-64's (aarch64's differ).
    if platform.machine() != "x86_64":
        raise OSError(f"the writer-slice arms call sched_setattr by its x86-64 number; this is {platform.machine()}")
    deadline = time.monotonic() + 1.0  # the thread asks for its slice before its first wake: after that, not before
    while _ops().writer_status()["wakes"] == 0 and time.monotonic() < deadline:
        time.sleep(0.001)
    tid = _writer_tid()
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(48)
    if libc.syscall(315, tid, attr, 48, 0) != 0:  # sched_getattr (x86-64): keep policy and nice
        raise OSError(ctypes.get_errno(), "sched_getattr")
    _size, policy, _flags, nice, prio = struct.unpack_from("=IIQiI", attr.raw)
    new = ctypes.create_string_buffer(struct.pack("=IIQiIQQQ", 48, policy, 0, nice, prio, runtime_ns, 0, 0), 48)
    if libc.syscall(314, tid, new, 0) != 0:  # sched_setattr
        raise OSError(ctypes.get_errno(), "sched_setattr")


# -- the child: the busy loop ------------------------------------------------------------------------------

def _run_queue_ns() -> int:
    """This thread's time spent runnable on a run queue, not running (ns; /proc's schedstat, field 2)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _process_cpu() -> float:
    t = os.times()
    return t.user + t.system


def _specs(n: int) -> list:
    from trt_trace.standin import model

    return [dataclasses.replace(s, host_us=0, layers=(), repeat=1) for s in model.demo_specs(n)]


def _ops() -> Any:
    """trt_trace's typed ops, of this build or of a --baseline from before the package's layers (ops at its top)."""
    try:
        from trt_trace.native import ops
    except ImportError:
        from trt_trace import ops
    return ops


def _produced_dropped() -> tuple[int, int]:
    rows = _ops().thread_counts().tolist()
    return sum(r[1] for r in rows), sum(r[2] for r in rows)


def _run_arm(runner: Any, x: Any, arm: str, threads: int, seconds: float, rate: float, buffer: int,
             path: str) -> dict[str, Any]:
    import trt_trace

    ops = _ops()
    counts = [0] * threads
    cpu = [0.0] * threads  # each serving thread's CPU seconds in the loop
    waited = [0] * threads  # each serving thread's ns runnable but not running (on a run queue) in the loop
    stop = threading.Event()
    go = threading.Barrier(threads + 1)

    def loop(i: int) -> None:
        go.wait()
        c0, w0 = time.thread_time(), _run_queue_ns()
        if rate > 0:  # paced: call i at start + i / rate
            period, due = 1.0 / rate, time.perf_counter()
            while not stop.is_set():
                runner(x)
                counts[i] += 1
                due += period
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
        else:
            while not stop.is_set():
                runner(x)
                counts[i] += 1
        cpu[i] = time.thread_time() - c0
        waited[i] = _run_queue_ns() - w0

    session = None
    traced = arm.startswith("traced")
    held = None
    if traced:
        keywords: dict[str, Any] = {"buffer_events": buffer} if buffer else {}
        if arm == "traced, no GPU":
            keywords["gpu"] = False
        session = trt_trace.start(path, **keywords)
        if arm == "traced, writer idle":
            _writer_at_idle_priority()
        if arm == "traced, writer default slice":
            _writer_at_slice(0)
        if (slice_ms := _slice_arm_ms(arm)) is not None:
            _writer_at_slice(round(slice_ms * 1e6))
        if arm == "traced, writer held":
            held = session.drainer.held()
            held.__enter__()
    elif arm == "switch only":
        ops.set_profile_execution(True)
    workers = [threading.Thread(target=loop, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    rss_before = _rss_kib()
    peak = rss_before
    lags: list[int] = []  # events produced and not yet drained
    stalled = 0  # lag samples left out: this thread lost the GIL between the two reads
    go.wait()
    t0, process_cpu0 = time.perf_counter(), _process_cpu()
    end = t0 + seconds
    while (now := time.perf_counter()) < end:
        time.sleep(min(0.02, end - now))
        peak = max(peak, _rss_kib())
        if traced and held is None:
            # Drained first, produced after: the serving threads may take the GIL between the two reads, so
            # the lag is an upper bound (read the other way round it could come out below zero). A busy
            # runner loop can keep this thread from the GIL for seconds, traced or not (CPython's GIL
            # hand-off: the loop releases and retakes it on every call), so a pair read more than 5 ms apart
            # is not a lag and is left out (counted in lag_samples_stalled).
            t_read = time.perf_counter()
            drained = session.drainer.records_drained
            produced, dropped = _produced_dropped()
            if time.perf_counter() - t_read < 0.005:
                lags.append(produced - dropped - drained)
            else:
                stalled += 1
        elif held is None:
            # The same two reads in the arms without a session, so that every arm's loop shares its GIL with
            # the same sampling work and the ratio is tracing's cost alone.
            ops.writer_status()
            _produced_dropped()
    stop.set()
    elapsed = time.perf_counter() - t0
    writer_slice = _writer_slice_ms() if traced else None
    for w in workers:
        w.join()
    process_cpu = _process_cpu() - process_cpu0
    calls = sum(counts)
    out: dict[str, Any] = {"arm": arm, "threads": threads, "rate": rate, "seconds": elapsed, "calls": calls,
                           "calls_per_s": calls / elapsed, "peak_rss_mib": peak / 1024,
                           "rss_before_mib": rss_before / 1024,
                           # CPU per runner call: the serving threads', and the rest of the process's (the
                           # writer thread, this sampling thread): robust to the neighbours' load, which
                           # calls/s is not.
                           "serving_cpu_us": sum(cpu) / max(calls, 1) * 1e6,
                           "other_cpu_us": max(process_cpu - sum(cpu), 0.0) / max(calls, 1) * 1e6,
                           # Time the serving threads were ready to run and waited for a core, per runner call:
                           # where a writer of normal priority keeps a core, the thread that takes the GIL next
                           # waits here, and the others wait for that one.
                           "run_queue_us": sum(waited) / max(calls, 1) / 1e3}
    if traced:
        produced, _ = _produced_dropped()
        if held is not None:
            held.__exit__(None, None, None)
        trt_trace.stop()
        events_per_s = produced / elapsed
        out["path"] = path
        out["writer_slice_ms"] = writer_slice
        out["lag_ms_median"] = statistics.median(lags) / events_per_s * 1000 if lags and events_per_s else 0.0
        out["lag_ms_max"] = max(lags) / events_per_s * 1000 if lags and events_per_s else 0.0
        out["lag_events_max"] = max(lags) if lags else 0
        out["lag_samples"] = len(lags)
        out["lag_samples_stalled"] = stalled
    elif arm == "switch only":
        ops.set_profile_execution(False)
    return out


def child(args: argparse.Namespace) -> int:
    import torch

    from trt_trace.standin import model

    runner = model.load_package(model.package_model(_specs(args.engines), torch.randn(8, 64)))
    x = torch.randn(8, 64)
    for _ in range(200):  # warm: first-call work, allocator pools
        runner(x)
    print(json.dumps({"ready": True}), flush=True)
    n = 0
    cells = [(t, r) for t in args.threads for r in (args.rate or [0.0])]
    for rep in range(args.repeats):
        for threads, rate in cells:
            arms = list(args.arms) if rep % 2 == 0 else list(reversed(args.arms))
            for arm in arms:
                n += 1
                suffix = ".pftrace" if arm == "traced, .pftrace" else ".json"  # the format follows the name
                path = str(Path(args.dir) / f"{args.tag}arm{n}{suffix}")
                sys.stdin.readline()  # the parent's turn to this child (it has read the last file)
                row = _run_arm(runner, x, arm, threads, args.seconds, rate, args.buffer, path)
                print(json.dumps(dict(row, repeat=rep)), flush=True)
    return 0


# -- the parent: reading back, the table ---------------------------------------------------------------------

def read_back(path: str) -> dict[str, Any]:
    """Engine calls in the file and in every later part of a split trace (whole calls, the project's reader;
    no call is split across parts), and the last part's end record's drop counts."""
    from trt_trace.io.readers.calls import read_calls

    calls = partial = 0
    mib = 0.0
    part: str | None = path
    while part is not None:
        read = read_calls(part, lambda chunk, info: None)
        ends = [p.end_metadata for p in read.info.processes.values()]
        end = next((e for e in ends if e), None) or {}
        calls, partial, mib = calls + int(read.calls), partial + len(read.partial), mib + os.path.getsize(part) / 2**20
        following = end.get("next_part") if end.get("ended") == "split" else None
        part = os.path.join(os.path.dirname(part), following) if following else None
    return {"in_file": calls, "partial": partial, "ended": end.get("ended", "cut short"),
            "dropped_events": end.get("dropped_events"), "dropped_calls": end.get("dropped_calls"), "mib": mib}


def _fmt_row(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True)))


def parent(args: argparse.Namespace) -> int:
    import torch

    from trt_trace.standin import model

    model.package_model(_specs(args.engines), torch.randn(8, 64))  # built (or found) before anything is timed
    d = tempfile.mkdtemp(prefix="bench_serving.")
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")
           or k in ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")}
    children = {"": env}  # arm prefix -> the child's environment
    if args.baseline:  # another build's trt_trace (a folder holding its installed package), arms interleaved
        children["baseline "] = dict(env, PYTHONPATH=os.path.abspath(args.baseline))
    print(f"command: {' '.join(sys.argv)}")
    print(f"machine: nproc {os.cpu_count()}, {_cpu_model()}, load average {os.getloadavg()[0]:.2f} at the start")
    print(f"package: {args.engines} stand-in engines, no host work; {args.seconds} s per arm, {args.repeats} repeats; "
          f"child pinned to cpus {args.cpus or 'any'}; buffer {args.buffer or 'default'}"
          + (f"; baseline: {args.baseline}" if args.baseline else "")
          + (f"; {args.burners} busy process(es) beside it" if args.burners else ""))
    rows: list[dict[str, Any]] = []
    procs: dict[str, subprocess.Popen] = {}
    burners: list[subprocess.Popen] = []
    try:
        for _ in range(args.burners):  # no idle core: busy processes beside the loop, on its CPUs
            burn = [sys.executable, "-c", "while True: pass"]
            burners.append(subprocess.Popen(["taskset", "-c", args.cpus, *burn] if args.cpus else burn,
                                            start_new_session=True))  # a neighbour, not part of this session
        for tag, child_env in children.items():
            cmd = [sys.executable, __file__, "--child", "--dir", d, "--tag", tag.strip() or "this",
                   "--seconds", str(args.seconds), "--repeats", str(args.repeats), "--engines", str(args.engines),
                   "--buffer", str(args.buffer), "--threads", *map(str, args.threads), "--arms", *args.arms]
            if args.rate:
                cmd += ["--rate", *map(str, args.rate)]
            if args.cpus:
                cmd = ["taskset", "-c", args.cpus, *cmd]
            procs[tag] = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                          env=child_env)
            assert json.loads(procs[tag].stdout.readline())["ready"]
        # One arm at a time, the children taking turns (the other waits, blocked on its stdin).
        arms = args.repeats * len(args.threads) * len(args.rate or [0.0]) * len(args.arms)
        for _ in range(arms):
            for tag, proc in procs.items():
                proc.stdin.write("\n")
                proc.stdin.flush()
                row = json.loads(proc.stdout.readline())
                row["arm"] = tag + row["arm"]
                if "path" in row:
                    row.update(read_back(row["path"]))
                    os.remove(row["path"])
                row["engine_calls"] = row["calls"] * args.engines
                rows.append(row)
                print(_arm_line(row), flush=True)
        rc = max(p.wait() for p in procs.values())
    finally:
        for p in [*procs.values(), *burners]:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")
    _summary(rows, args)
    return rc


def _cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        return next(ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name"))
    except (OSError, StopIteration):
        return "cpu model unknown"


def _arm_line(r: dict[str, Any]) -> str:
    rate = f" at {r['rate']:g}/s/thread" if r["rate"] else ""
    text = (f"rep {r['repeat']} {r['threads']} thread(s){rate} {r['arm']:<20} {r['calls_per_s']:9.0f} runner calls/s "
            f"({r['engine_calls'] / r['seconds']:9.0f} engine calls/s), CPU µs/call {r['serving_cpu_us']:.1f} serving "
            f"+ {r['other_cpu_us']:.1f} rest, run queue {r['run_queue_us']:.1f} µs/call, "
            f"peak RSS {r['peak_rss_mib']:.0f} MiB")
    if "path" in r:
        lost = r["engine_calls"] - r["in_file"] - (r["dropped_calls"] or 0)
        text += (f"; dropped {r['dropped_calls']} calls ({r['dropped_events']} events), {r['in_file']} of "
                 f"{r['engine_calls']} engine calls in the file ({r['mib']:.0f} MiB, {r['ended']}), "
                 f"unaccounted {lost}; drain lag median {r['lag_ms_median']:.0f} ms, max {r['lag_ms_max']:.0f} ms"
                 f" ({r['lag_samples']} samples, {r['lag_samples_stalled']} left out: read > 5 ms apart)")
    return text


def _median_ci(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """A distribution-free confidence interval for the median: the k-th smallest and k-th largest of n values,
    k the largest rank with P(Binomial(n, 1/2) < k) <= (1 - level) / 2 (no normality assumed: single arms
    on a shared VM have long tails). None below 6 values, where no such k exists at 95%."""
    n = len(values)
    tail = (1.0 - level) / 2.0
    k, below = 0, 0.0
    while k < n // 2:
        nxt = below + math.comb(n, k) / 2.0**n  # P(X < k + 1)
        if nxt > tail:
            break
        below, k = nxt, k + 1
    if k == 0:
        return None
    s = sorted(values)
    return s[k - 1], s[n - k]


def _summary(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print("\nmedians over the repeats; ratio: the median of each repeat's calls/s over the untraced arm's in the same "
          "repeat (same threads and rate), [its 95% confidence interval, distribution-free, from 6 repeats]; "
          "CPU: µs per runner call, serving threads / the rest of the process "
          "(the writer thread); run queue: µs per runner call the serving threads were ready to run and waited for a "
          "core; +CPU/engine call: the traced arm's extra CPU, all threads, per engine call")
    head = ["threads", "rate/thread", "arm", "runner calls/s", "ratio", "CPU µs serving/rest", "run queue µs",
            "+CPU/engine call",
            "dropped calls", "calls missing", "lag ms med/max", "writer slice ms", "peak RSS MiB"]
    table = []
    for threads in args.threads:
        for rate in args.rate or [0.0]:
            cell = [r for r in rows if r["threads"] == threads and r["rate"] == rate]
            for arm in [t + a for t in (["", "baseline "] if args.baseline else [""]) for a in args.arms]:
                untraced = "baseline untraced" if arm.startswith("baseline ") else "untraced"
                base = {r["repeat"]: r for r in cell if r["arm"] == untraced}
                base_cpu = (statistics.median(r["serving_cpu_us"] + r["other_cpu_us"] for r in base.values())
                            if base else None)
                rs = [r for r in cell if r["arm"] == arm]
                if not rs:
                    continue
                med = statistics.median(r["calls_per_s"] for r in rs)
                ratios = [r["calls_per_s"] / base[r["repeat"]]["calls_per_s"] for r in rs if r["repeat"] in base]
                ratio = f"{statistics.median(ratios):.3f}" if ratios else "-"
                ci = _median_ci(ratios)
                if ci and arm != untraced:
                    ratio += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
                serving = statistics.median(r["serving_cpu_us"] for r in rs)
                rest = statistics.median(r["other_cpu_us"] for r in rs)
                queue = statistics.median(r.get("run_queue_us", 0.0) for r in rs)
                total = statistics.median(r["serving_cpu_us"] + r["other_cpu_us"] for r in rs)
                extra = (f"{(total - base_cpu) / args.engines:+.2f} µs"
                         if base_cpu is not None and arm != untraced else "-")
                traced = [r for r in rs if "path" in r]
                dropped = str(sum(r["dropped_calls"] or 0 for r in traced)) if traced else "-"
                missing = str(sum(r["engine_calls"] - r["in_file"] for r in traced)) if traced else "-"
                lag = (f"{statistics.median(r['lag_ms_median'] for r in traced):.0f}/"
                       f"{max(r['lag_ms_max'] for r in traced):.0f}") if traced else "-"
                rss = f"{max(r['peak_rss_mib'] for r in rs):.0f}"
                slices = sorted({r["writer_slice_ms"] for r in traced if r.get("writer_slice_ms") is not None})
                writer_slice = "/".join(f"{v:g}" for v in slices) or "-"  # the kernel's figure; "-": not shown
                table.append([str(threads), f"{rate:g}" if rate else "flat out", arm, f"{med:.0f}", ratio,
                              f"{serving:.1f}/{rest:.1f}", f"{queue:.1f}", extra, dropped, missing, lag, writer_slice,
                              rss])
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head)]
    print(_fmt_row(head, widths))
    for t in table:
        print(_fmt_row(t, widths))
    print("dropped calls, calls missing: totals over the repeats (missing: engine calls executed and not in the file); "
          "writer slice: the writer thread's time slice at the arm's end, from /proc (EEVDF kernels)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per arm")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--engines", type=int, default=14)
    ap.add_argument("--cpus", default="", help="taskset CPU list for the child (e.g. 0,1)")
    ap.add_argument("--arms", nargs="+", default=["untraced", "traced"], type=_arm)
    ap.add_argument("--rate", type=float, nargs="*", default=[], help="paced: runner calls per second per thread")
    ap.add_argument("--buffer", type=int, default=0, help="traced arms: ring records per thread (0: the default)")
    ap.add_argument("--baseline", default="", help="a folder holding another build's installed trt_trace package: "
                    "its arms run in a second child, interleaved with this build's (before / after in one run)")
    ap.add_argument("--burners", type=int, default=0,
                    help="busy processes (a Python `while True`) on the same CPUs for the whole run: no idle core")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tag", default="this", help=argparse.SUPPRESS)
    ap.add_argument("--dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    return child(args) if args.child else parent(args)


if __name__ == "__main__":
    raise SystemExit(main())
