"""Live Prometheus metrics: scraped over HTTP on 127.0.0.1 and parsed with prometheus_client's own
parser, checked against the counters and against a trace of the same calls."""

from __future__ import annotations

import concurrent.futures
import socket
import subprocess
import sys
import tempfile
import urllib.request

import numpy as np
import pytest
import torch
from conftest import Child, ClaimsCuda, playing_runtime, run_python
from prometheus_client.parser import text_string_to_metric_families
from trace_checks import load_strict, to_ns

import trt_trace
from trt_trace import standin
from trt_trace.native import ops
from trt_trace.runtime import metrics


def _scrape(host: str, port: int) -> dict[str, list]:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def _value(samples, name: str, **labels) -> float:
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served():
    host, port = trt_trace.serve_metrics(0)
    yield host, port
    metrics.stop()


def test_metrics_match_the_counters_and_the_trace(served, tmp_path):
    engines = {name: standin.make_engine(name, host_us=us) for name, us in (("m_fast", 20), ("m_slow", 1500))}
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out)):
        for k in range(30):
            for name, e in engines.items():
                if name == "m_fast" or k % 3 == 0:
                    torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    fams = _scrape(*served)
    events = load_strict(out)
    for name, calls in (("m_fast", 30), ("m_slow", 10)):
        assert _value(fams["trt_trace_engine_calls"], "trt_trace_engine_calls_total", engine=name) == calls
        durations = np.asarray([to_ns(e["dur"]) for e in events if e.get("ph") == "X"
                                and e["name"] == "execute_engine" and e["args"]["engine"] == name])
        hist = [s for s in fams["trt_trace_engine_call_seconds"] if s.labels.get("engine") == name]
        buckets = [(float(s.labels["le"]), s.value) for s in hist if s.name.endswith("_bucket")]
        assert buckets[-1] == (float("inf"), calls)
        for le, count in buckets[:-1]:
            # Every bound is a bound of the live histogram's buckets too: the counts are exact.
            assert count == (durations < round(le * 1e9)).sum(), le
        total_s = _value(hist, "trt_trace_engine_call_seconds_sum")
        assert total_s == pytest.approx(durations.sum() / 1e9, rel=1e-6)
        assert _value(hist, "trt_trace_engine_call_seconds_count") == calls
        phases = sum(_value(fams["trt_trace_engine_phase_seconds"], "trt_trace_engine_phase_seconds_total",
                            engine=name, phase=p) for p in ("workspace", "inputs", "outputs", "enqueue"))
        assert phases == pytest.approx(total_s, rel=1e-6)
    assert _value(fams["trt_trace_dropped_events"], "trt_trace_dropped_events_total") == 0


def test_serving_counts_and_a_stopped_session_keeps_counting(served, tmp_path):
    torch.ops.trt_trace.set_profile_execution(False)
    metrics.stop()
    trt_trace.serve_metrics(served[1])
    assert trt_trace.get_profile_execution()  # serving turned counting on
    e = standin.make_engine("m_after_session")
    with trt_trace.tracing(str(tmp_path / "t.json")):
        torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    torch.ops.tensorrt.execute_engine([torch.ones(8)], e)  # after the session: counted still
    fams = _scrape(*served)
    assert _value(fams["trt_trace_engine_calls"], "trt_trace_engine_calls_total", engine="m_after_session") == 2


SERVE = r"""
import sys, time, torch, trt_trace
from trt_trace import standin
from trt_trace.runtime import metrics
e = standin.make_engine("env_metrics_engine", host_us=100)
for _ in range(7):
    torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
while metrics.serving() and metrics.address() is None:
    time.sleep(0.01)  # the native thread binds at the first engine call: served (or refused) now
print("ready", flush=True)
sys.stdin.readline()
"""


def _serve_in_child(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    import os

    full = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    full.update(env)
    proc = Child([sys.executable, "-c", SERVE], env=full, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True, cwd=tempfile.gettempdir())
    line = proc.stdout.readline()
    assert line == "ready\n", proc.err_text()
    return proc, line


@pytest.mark.parametrize("with_trace", [False, True])
def test_env_variable_serves_metrics_with_or_without_a_trace_file(tmp_path, with_trace):
    port = _free_port()
    env = {"TRT_TRACE_METRICS_PORT": str(port)}
    if with_trace:
        env["TRT_TRACE_OUT"] = str(tmp_path / "t.json")
    proc, _ = _serve_in_child(env)  # serving once it says ready
    try:
        fams = _scrape("127.0.0.1", port)
        assert _value(fams["trt_trace_engine_calls"], "trt_trace_engine_calls_total", engine="env_metrics_engine") == 7
        assert _value(fams["trt_trace_engine_call_seconds"], "trt_trace_engine_call_seconds_count",
                      engine="env_metrics_engine") == 7
    finally:
        _, err = proc.communicate("\n", timeout=60)
    assert proc.returncode == 0
    assert f"metrics at http://127.0.0.1:{port}/metrics" in err
    if with_trace:
        calls = [e for e in load_strict(tmp_path / "t.json") if e.get("name") == "execute_engine"]
        assert len(calls) == 7


def test_a_busy_port_is_one_warning_and_the_program_runs_on():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = SERVE.replace('print("ready", flush=True)\nsys.stdin.readline()',
                             'print(trt_trace.summary().splitlines()[1].split()[:2])')
        proc = run_python(code, {"TRT_TRACE_METRICS_PORT": str(port)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['env_metrics_engine', '7']"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"TRT_TRACE_METRICS_PORT={port}: cannot serve metrics" in lines[0], proc.stderr


@pytest.mark.parametrize("value", ["nonsense", "70000"])
def test_a_bad_port_is_one_warning(value):
    proc = run_python(SERVE.replace("sys.stdin.readline()", ""), {"TRT_TRACE_METRICS_PORT": value})
    assert proc.returncode == 0 and proc.stdout == "ready\n"
    assert proc.stderr.count("\n") == 1 and "TRT_TRACE_METRICS_PORT" in proc.stderr


def test_a_process_that_runs_no_engine_does_not_take_the_port():
    port = _free_port()
    # Waiting for an engine call that never comes: nothing served, asked directly, not by sleeping.
    proc = run_python("import torch\nfrom trt_trace.native import ops\nfrom trt_trace.runtime import metrics\n"
                      "print(ops.metrics_status()[0], metrics.serving(), metrics.address())",
                      {"TRT_TRACE_METRICS_PORT": str(port)})
    assert proc.returncode == 0 and proc.stdout == "1 True None\n" and proc.stderr == ""
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))  # still free: a torchrun launcher leaves it to its workers


def test_processes_that_exit_while_waiting_for_their_first_engine_exit_cleanly():
    # The Python waiter thread this replaced polled a torch op; caught inside it at finalization it
    # aborted the process ("terminate called without an active exception") in about 1 exit in 6. The
    # native thread waits on an eventfd and is joined at exit. Eight exits at once, right after start-up.
    env = {"TRT_TRACE_METRICS_PORT": str(_free_port())}
    code = "import torch\nfrom trt_trace.native import ops\nprint(ops.metrics_status()[0])"
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        procs = list(pool.map(lambda _: run_python(code, env), range(8)))
    assert [(p.returncode, p.stdout, p.stderr) for p in procs] == [(0, "1\n", "")] * 8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
def test_gpu_metrics_count_every_gpu_span(served, tmp_path):
    e = standin.make_engine("m_gpu", device=0, repeat=4)
    out = tmp_path / "gpu.json"
    with trt_trace.tracing(str(out)):
        for _ in range(12):
            torch.ops.tensorrt.execute_engine([torch.ones(1 << 18, device="cuda")], e)
        torch.cuda.synchronize()
    spans = np.asarray([to_ns(ev["dur"]) for ev in load_strict(out) if ev.get("name") == "gpu" and ev.get("ph") == "X"])
    fams = _scrape(*served)
    hist = [s for s in fams["trt_trace_engine_gpu_call_seconds"] if s.labels.get("engine") == "m_gpu"]
    assert _value(hist, "trt_trace_engine_gpu_call_seconds_count") == len(spans) == 12
    assert _value(fams["trt_trace_engine_gpu_seconds"], "trt_trace_engine_gpu_seconds_total", engine="m_gpu") == \
        pytest.approx(spans.sum() / 1e9, rel=1e-6)
    assert _value(fams["trt_trace_engine_gpu_spans"], "trt_trace_engine_gpu_spans_total", engine="m_gpu") == 12
    assert _value(fams["trt_trace_engine_gpu_sampled_out"], "trt_trace_engine_gpu_sampled_out_total",
                  engine="m_gpu") == 0


def test_sampled_out_calls_are_counted_beside_the_measured_spans(served, tmp_path):
    # Inputs that claim a CUDA device (conftest.ClaimsCuda): the hook samples them as CUDA calls.
    try:
        with playing_runtime("2.13"):  # moves inputs to its (CPU) engine's device
            e = standin.make_engine("m_sampled")
            with trt_trace.tracing(str(tmp_path / "t.json"), gpu_every=8):
                for _ in range(16):
                    torch.ops.tensorrt.execute_engine([ClaimsCuda(torch.ones(4))], e)
    finally:
        ops.set_gpu_every(1)
    fams = _scrape(*served)
    measured = 2 if ops.set_gpu_timing(True) else 0  # a CPU build records no events for the 2 it measures
    assert _value(fams["trt_trace_engine_gpu_sampled_out"], "trt_trace_engine_gpu_sampled_out_total",
                  engine="m_sampled") == 14
    assert _value(fams["trt_trace_engine_gpu_spans"], "trt_trace_engine_gpu_spans_total",
                  engine="m_sampled") == measured
