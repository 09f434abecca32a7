"""How fast /metrics answers while the process serves flat out (issue 37): scrape latency, idle and under a
busy serving loop, of the native endpoint and of the prometheus_client one it replaced, side by side.

    python tools/bench/bench_metrics.py [--scrapes 200] [--interval 0.02] [--timeout 1] [--before-scrapes 10] [--trace]

The served process loads the demo's 6-engine AOTInductor package (stand-in engines, built once and cached)
and either makes one call and then blocks on stdin ("idle": the GIL free), or calls the package in a plain
loop on one thread ("busy": Python switches threads every 5 ms of bytecode, and where a C++ call lets the
GIL go), or calls the package and then runs sum(range(3,000,000)) in turn ("gil-held": ~0.1-0.2 s of one C
call that keeps the GIL throughout, as a GIL-holding extension does). The bench scrapes
http://127.0.0.1:PORT/metrics --scrapes times, one at a time --interval apart, each with --timeout, and
times each from connect to the last byte. `native` is this tree's endpoint (csrc/metrics, its own thread);
`prometheus_client` is the Python collector and server of 6db770f (trt_trace/metrics.py read from git),
run on this build's ops: the same counters behind both. The busy loop's engine calls/s come from the
counters themselves: while scraped (first to last scrape) and over a second before that, unscraped.
--trace: the served process also traces into a file (TRT_TRACE_OUT), its drainer thread beside the loop.
Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BEFORE_COMMIT = "6db770f"

CHILD = r"""
import os, subprocess, sys, types, torch
from trt_trace.runtime import config
from trt_trace.standin import model
path, stop, endpoint, port, load, repo, commit = sys.argv[1:8]
settings = config.MetricsSettings(port=int(port))
LAYERED = {"from . import ops": "from .native import ops", "from .config ": "from .runtime.config ",
           "from .records ": "from .schema.records ", "from .trace_format ": "from .schema.trace_format "}
if endpoint == "prometheus_client":  # the collector and server this tree replaced, on this build's ops
    source = subprocess.run(["git", "show", commit + ":trt_trace/metrics.py"], cwd=repo, check=True,
                            capture_output=True, text=True).stdout
    before = types.ModuleType("trt_trace.metrics_before_native")
    before.__package__ = "trt_trace"
    for before_name, now_name in LAYERED.items():  # that commit's imports, by the package's layers of today
        source = source.replace(before_name, now_name)
    exec(compile(source, "metrics.py@" + commit, "exec"), before.__dict__)
    before.serve_when_engines_run(settings, quiet=True)
else:
    from trt_trace.runtime import metrics
    metrics.serve_when_engines_run(settings, quiet=True)
runner = model.load_package(path)
x = torch.randn(8, 64)
runner(x)
print("calling", flush=True)
if load == "idle":
    sys.stdin.readline()
elif load == "gil-held":
    while not os.path.exists(stop):
        runner(x)
        sum(range(3_000_000))  # one C call: the GIL is not given up until it returns
else:
    n = 0
    while True:
        runner(x)
        n += 1
        if n % 50 == 0 and os.path.exists(stop):
            break
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port: int, timeout: float) -> tuple[float | None, str]:
    """(seconds from connect to the last byte, text), or (None, "") past the timeout or refused."""
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as resp:
            text = resp.read().decode()
    except OSError:
        return None, ""
    return time.perf_counter() - t0, text


def total_calls(text: str) -> float:
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("trt_trace_engine_calls_total{"))


def run(package: str, endpoint: str, load: str, scrapes: int, interval: float, timeout: float, trace: bool) -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        stop = Path(tmp) / "stop"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
        if trace:
            env["TRT_TRACE_OUT"] = str(Path(tmp) / "trace.json")
        proc = subprocess.Popen([sys.executable, "-c", CHILD, package, str(stop), endpoint, str(port), load,
                                 str(REPO), BEFORE_COMMIT], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, cwd=tmp)
        try:
            assert proc.stdout.readline() == "calling\n"
            time.sleep(0.5)  # past the first call: a polling waiter had its chance to start its server
            unscraped = None
            if load == "busy":
                first, t_first = scrape(port, timeout)[1], time.perf_counter()
                time.sleep(1.0)
                second, t_second = scrape(port, timeout)[1], time.perf_counter()
                if first and second:
                    unscraped = (total_calls(second) - total_calls(first)) / (t_second - t_first)
            seconds, texts = [], []
            for _ in range(scrapes):
                took, text = scrape(port, timeout)
                seconds.append(took)
                texts.append((time.perf_counter(), text))
                time.sleep(interval)
            stop.touch()
            proc.communicate("\n", timeout=120)
        finally:
            proc.kill()
    answered = sorted(s for s in seconds if s is not None)
    got = [(t, text) for t, text in texts if text]
    scraped_rate = None
    if load == "busy" and len(got) >= 2:
        scraped_rate = (total_calls(got[-1][1]) - total_calls(got[0][1])) / (got[-1][0] - got[0][0])
    ms = [1e3 * s for s in answered]
    return {
        "endpoint": endpoint, "load": load + (", traced" if trace else ""), "scrapes": scrapes,
        "answered": len(answered), "timeouts": scrapes - len(answered), "timeout_s": timeout,
        "median_ms": statistics.median(ms) if ms else None,
        "p90_ms": ms[min(len(ms) - 1, int(0.9 * len(ms)))] if ms else None,
        "max_ms": max(ms) if ms else None,
        "calls_per_s_scraped": scraped_rate, "calls_per_s_unscraped": unscraped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scrapes", type=int, default=200, help="scrapes of the native endpoint per load")
    parser.add_argument("--before-scrapes", type=int, default=10,
                        help="scrapes of the prometheus_client endpoint per load (each may wait --timeout)")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between scrapes")
    parser.add_argument("--timeout", type=float, default=1.0, help="seconds a scrape may take")
    parser.add_argument("--trace", action="store_true", help="the served process also writes a trace (TRT_TRACE_OUT)")
    args = parser.parse_args()

    import torch

    from trt_trace.standin import model

    package = model.package_model(model.demo_specs(6), torch.randn(8, 64))
    rows = []
    for endpoint, scrapes in (("native", args.scrapes), ("prometheus_client", args.before_scrapes)):
        for load in ("idle", "busy", "gil-held"):
            rows.append(run(package, endpoint, load, scrapes, args.interval, args.timeout, args.trace))

    def fmt(v: float | None, spec: str = ".2f") -> str:
        return "-" if v is None else format(v, spec)

    print("| endpoint | load | answered | median ms | p90 ms | max ms | engine calls/s scraped | unscraped |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['endpoint']} | {r['load']} | {r['answered']} of {r['scrapes']} (timeout {r['timeout_s']:g} s) | "
              f"{fmt(r['median_ms'])} | {fmt(r['p90_ms'])} | {fmt(r['max_ms'])} | "
              f"{fmt(r['calls_per_s_scraped'], ',.0f')} | {fmt(r['calls_per_s_unscraped'], ',.0f')} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
