"""A busy package loop, traced: is the file written while the loop runs, and what reaches it?

    python tools/bench/bench_busy_drain.py [--seconds 10] [--kill-after S] [--python PATH]

Runs the stand-in's 6-engine AOTInductor package (model.package_model(model.demo_specs(6), x)) in a
plain loop on one thread for `seconds` with TRT_TRACE_OUT set (issue 37's reproduction), in a child
process of the interpreter given (--python: another install, e.g. the main branch's, for a before /
after pair). Samples the file's size every 0.5 s while the loop runs; reports the runner calls
executed (the child writes its counter to a side file every iteration), the engine calls in the
file, the drops the end record reports. --kill-after S: SIGKILL the child S seconds into the loop and
report what the file holds against what was executed (the writer wakes every 50 ms). --hold-gil-ms N:
after each runner call, one C call that keeps the GIL for about N ms (a GIL-holding extension).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOP = """
import os, sys, time, torch
from trt_trace.standin import model
runner = model.load_package(model.package_model(model.demo_specs(6), torch.randn(8, 64)))
x = torch.randn(8, 64)
seconds, counter, hold_ms = float(sys.argv[1]), sys.argv[2], float(sys.argv[3])
held = list(range(1 << 16))[::-1]
t0 = time.perf_counter()
sorted(held)
held = held * max(1, int(hold_ms / 1000 / (time.perf_counter() - t0)))  # sorted(held): about hold_ms, GIL held
runner(x)
fd = os.open(counter, os.O_WRONLY | os.O_CREAT, 0o644)
print("start", flush=True)
end, n = time.monotonic() + seconds, 1
while time.monotonic() < end:
    runner(x)
    if hold_ms:
        sorted(held)  # one C call that keeps the GIL, as a GIL-holding extension would
    n += 1
    os.pwrite(fd, b"%12d" % n, 0)
print("calls", n, flush=True)
"""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--kill-after", type=float, default=0)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--hold-gil-ms", type=float, default=0,
                    help="after each runner call, one C call that holds the GIL for about this long")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        script, out, counter = Path(d, "serve.py"), Path(d, "e.json"), Path(d, "n")
        script.write_text(LOOP)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
        env["TRT_TRACE_OUT"] = str(out)
        seconds = max(args.seconds, args.kill_after + 60) if args.kill_after else args.seconds
        proc = subprocess.Popen([args.python, str(script), str(seconds), str(counter), str(args.hold_gil_ms)],
                                cwd=d, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "start", proc.communicate()[1]
        t0, sizes = time.monotonic(), []
        while proc.poll() is None:
            time.sleep(0.5)
            sizes.append((round(time.monotonic() - t0, 1), out.stat().st_size if out.exists() else 0))
            if args.kill_after and time.monotonic() - t0 >= args.kill_after:
                proc.send_signal(signal.SIGKILL)
                break
        _, stderr = proc.communicate()
        executed = int(counter.read_bytes() or b"0")
        from trt_trace.io.readers import load_events

        events = load_events(str(out)) if out.exists() else []
        in_file = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine")
        ends = [e["args"] for e in events if e.get("name") == "trt_trace_metadata" and "ended" in e.get("args", {})]
        dropped = ends[-1]["dropped_events"] if ends else "no end record"
        print(f"interpreter: {args.python}")
        print(f"runner calls executed: {executed} ({6 * executed} engine calls)")
        print(f"engine calls in the file: {in_file}; dropped events reported: {dropped}")
        if args.kill_after:
            per_s = executed / max(sizes[-1][0], 0.1)
            print(f"SIGKILL after {sizes[-1][0]} s: {6 * executed - in_file} engine calls missing "
                  f"(~{(executed - in_file / 6) / per_s * 1000:.0f} ms of the loop at {per_s:.0f} runner calls/s)")
        print("file size over time (s, bytes): " + ", ".join(f"{t}:{b}" for t, b in sizes))
        for line in stderr.splitlines():
            if line.startswith("trt_trace:"):
                print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
