"""The native writer thread's CPU per engine call under a busy loop, and what write() costs by piece size.

    python tools/bench/bench_writer_cpu.py [--seconds 4] [--repeats 3] [--engines 14] [--cpus 0,1]
                                           [--baseline DIR] [--sizes 32 128 512 1024 3072]

Part 1, the writer: bench_serving's package (`--engines` stand-in engines with no host work) called flat
out on one thread with a session (trt_trace.start, the defaults: Chrome JSON under TMPDIR). The writer
thread is named `trt_trace-write`; its user and system CPU time (/proc/<pid>/task/<tid>/stat) over the
loop, divided by the engine calls made, is what the writer costs a server per engine call: on a machine
with no idle core, CPU the serving threads lose. With --baseline DIR (a folder holding another build's
installed trt_trace package), the two builds alternate, one process each per repeat.

Part 2, write() alone: `--sizes` KiB pieces written to a file under TMPDIR until 512 MiB, each piece
refilled before its write (as a formatted piece is), the system time per byte. On the dev VM a piece
that fits the core's cache is copied several times cheaper than one of a few MiB: why the writer
formats and writes a drain in pieces of 512 records (csrc/session/native_writer.cpp, kWriteRecords).
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _writer_ticks(pid: int) -> tuple[int, int]:
    """The writer thread's (utime, stime) in clock ticks, (0, 0) while it has not started."""
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            if Path(task, "comm").read_text().strip() != "trt_trace-write":
                continue
            fields = Path(task, "stat").read_text().rsplit(")", 1)[1].split()
            return int(fields[11]), int(fields[12])
        except OSError:
            continue
    return 0, 0


def child(seconds: float, engines: int, out: str) -> None:
    """One traced busy loop; prints one line of JSON: engine calls, the writer's user and system seconds, bytes."""
    import json

    import torch

    sys.path.insert(0, str(HERE))
    from bench_serving import _specs  # the same package as the serving bench

    import trt_trace
    from trt_trace.standin import model

    runner = model.load_package(model.package_model(_specs(engines), torch.randn(8, 64)))
    x = torch.randn(8, 64)
    for _ in range(50):  # warm, untraced
        runner(x)
    trt_trace.start(out)
    time.sleep(0.2)  # the writer thread is up
    u0, s0 = _writer_ticks(os.getpid())
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        runner(x)
        n += 1
    u1, s1 = _writer_ticks(os.getpid())  # before stop: the last drain's work is not the loop's
    trt_trace.stop()
    size = sum(os.path.getsize(p) for p in glob.glob(out[:-len(".json")] + "*.json"))
    tick = os.sysconf("SC_CLK_TCK")
    print(json.dumps({"engine_calls": n * engines, "user_s": (u1 - u0) / tick, "sys_s": (s1 - s0) / tick,
                      "bytes": size, "loop_s": seconds}))


def writer_arm(name: str, env: dict[str, str], args: argparse.Namespace) -> dict[str, float]:
    import json

    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, __file__, "--child", str(Path(d) / "t.json")]
        if args.cpus:
            cmd = ["taskset", "-c", args.cpus, *cmd]
        cmd += ["--seconds", str(args.seconds), "--engines", str(args.engines)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise SystemExit(f"{name}: the child failed:\n{proc.stderr[-2000:]}")
        r = json.loads(proc.stdout.strip().splitlines()[-1])
    calls = r["engine_calls"]
    row = {"calls_per_s": calls / r["loop_s"], "user_us": r["user_s"] * 1e6 / calls,
           "sys_us": r["sys_s"] * 1e6 / calls, "bytes": r["bytes"] / calls}
    print(f"{name:10s} {row['calls_per_s']:9.0f} engine calls/s  writer user {row['user_us']:.3f} µs"
          f" + sys {row['sys_us']:.3f} µs per engine call  ({row['bytes']:.0f} B a call in the file)", flush=True)
    return row


def write_sizes(sizes_kib: list[int]) -> None:
    total = 512 << 20
    print("\nwrite() alone: system time per byte by piece size (512 MiB each, under TMPDIR)")
    for kib in sizes_kib:
        size = kib * 1024
        buf = bytearray(size)
        fills = [bytes([97 + k]) * size for k in range(2)]  # made before: refilling allocates nothing
        fd, path = tempfile.mkstemp()
        try:
            before = resource.getrusage(resource.RUSAGE_SELF)
            done = 0
            while done < total:
                buf[:] = fills[(done // size) % 2]  # refilled in place, as a formatted piece is
                done += os.write(fd, buf)
            after = resource.getrusage(resource.RUSAGE_SELF)
        finally:
            os.close(fd)
            os.unlink(path)
        print(f"  {kib:6d} KiB: {(after.ru_stime - before.ru_stime) * 1e9 / total:.3f} ns/B system", flush=True)
        time.sleep(1)  # let writeback catch up between sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeats", type=int, default=3, help="0: part 2 alone")
    ap.add_argument("--engines", type=int, default=14)
    ap.add_argument("--cpus", default="0,1", help="taskset CPU list for the children ('' for none)")
    ap.add_argument("--baseline", default="", help="a folder holding another build's installed trt_trace")
    ap.add_argument("--sizes", type=int, nargs="*", default=[32, 128, 512, 1024, 3072],
                    help="piece sizes in KiB for part 2 (none: skip it)")
    args = ap.parse_args()
    if args.child:
        child(args.seconds, args.engines, args.child)
        return 0
    builds = {"this build": dict(os.environ)}
    if args.baseline:
        builds["baseline"] = dict(os.environ, PYTHONPATH=os.path.abspath(args.baseline))
    print(f"{time.strftime('%Y-%m-%d %H:%M')}  {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}; "
          f"{args.engines} engines, 1 thread flat out, {args.seconds} s per arm, {args.repeats} repeats")
    rows: dict[str, list[dict[str, float]]] = {b: [] for b in builds}
    for rep in range(args.repeats):
        order = list(builds) if rep % 2 == 0 else list(reversed(builds))
        for b in order:
            rows[b].append(writer_arm(b, builds[b], args))
    if args.repeats > 0:
        summarize(rows)
    if args.sizes:
        write_sizes(args.sizes)
    return 0


def summarize(rows: dict[str, list[dict[str, float]]]) -> None:
    print("\nmedians: writer CPU per engine call (user + system)")
    for b, rs in rows.items():
        u = statistics.median(r["user_us"] for r in rs)
        s = statistics.median(r["sys_us"] for r in rs)
        print(f"  {b:10s} user {u:.3f} µs + system {s:.3f} µs = {u + s:.3f} µs")
    if "baseline" in rows:
        tot = {b: statistics.median(r["user_us"] + r["sys_us"] for r in rs) for b, rs in rows.items()}
        print(f"  this build ÷ baseline: {tot['this build'] / tot['baseline']:.2f}")


if __name__ == "__main__":
    sys.exit(main())
