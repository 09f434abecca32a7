"""TRT_TRACE_CUDA_PROFILER=session: cudaProfilerStart right before a session records, cudaProfilerStop once it
has drained (runtime/profiler_range.py), for `nsys profile --capture-range=cudaProfilerApi`. No GPU here: the
calls are checked through a stand-in cudaProfilerStart/Stop (tests/cuda_profiler_stub.c, LD_PRELOADed, found as
the process's global symbol as libcudart's is) that logs each call with its CLOCK_MONOTONIC time, the trace's
clock: every recorded call lies inside the range, every call made outside a session outside it. That nsys records
exactly that range on a GPU is the device check's to prove (not yet run)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Child, trt_trace_cli
from trace_checks import load_strict

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed (as for building trt_trace)"
    lib = tmp_path_factory.mktemp("cuda_profiler") / "libcuda_profiler_stub.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", str(HERE / "cuda_profiler_stub.c"), "-o", str(lib)], check=True)
    return lib


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env.update(extra)
    return env


# Calls outside any session (their times printed), a session of 20 calls, calls after it, a second session.
SCRIPT = """
import torch, trt_trace
from trt_trace import standin
from trt_trace.native import ops
engine = standin.make_engine("range_engine")
def calls(n):
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
t0 = ops.clock_now_ns(); calls(5); t1 = ops.clock_now_ns()
with trt_trace.tracing("first.json"):
    calls(20)
t2 = ops.clock_now_ns(); calls(5); t3 = ops.clock_now_ns()
with trt_trace.tracing("second.json"):
    calls(3)
print(t0, t1, t2, t3)
"""


def _log(path: Path) -> list[tuple[str, int]]:
    return [(w, int(t)) for w, t in (line.split() for line in path.read_text().splitlines())] if path.exists() else []


def _call_span_ns(trace: Path) -> tuple[int, int, int]:
    """(calls, first call's start, last call's end) of a trace, in CLOCK_MONOTONIC ns."""
    calls = [e for e in load_strict(trace) if e.get("ph") == "X" and e.get("name") == "execute_engine"]
    return (len(calls), min(round(e["ts"] * 1000) for e in calls),
            max(round((e["ts"] + e["dur"]) * 1000) for e in calls))


def test_each_session_is_one_range_holding_its_calls_and_no_other(stub: Path, tmp_path: Path) -> None:
    log = tmp_path / "profiler.log"
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=_env(TRT_TRACE_CUDA_PROFILER="session", LD_PRELOAD=str(stub),
                                CUDA_PROFILER_STUB_LOG=str(log)))
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    t0, t1, t2, t3 = (int(v) for v in r.stdout.split())
    ranges = _log(log)
    assert [w for w, _ in ranges] == ["start", "stop", "start", "stop"]
    (_, start1), (_, stop1), (_, start2), (_, stop2) = ranges
    n, first, last = _call_span_ns(tmp_path / "first.json")
    assert n == 20
    assert t1 < start1 < first and last < stop1 < t2  # the 5 calls before and after lie outside
    n, first, last = _call_span_ns(tmp_path / "second.json")
    assert n == 3 and t3 < start2 < first and last < stop2


def test_a_capture_window_is_the_range(stub: Path, tmp_path: Path) -> None:
    """trt-trace capture of a process started under nsys's cudaProfilerApi capture range: the range is the window."""
    log = tmp_path / "profiler.log"
    control = tmp_path / "ctl"
    target = """
import time, torch, trt_trace
from trt_trace import standin
engine = standin.make_engine("window_engine")
print("ready", flush=True)
end = time.monotonic() + 60
while time.monotonic() < end:
    torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    time.sleep(0.0005)
"""
    env = _env(TRT_TRACE_CUDA_PROFILER="session", TRT_TRACE_CONTROL_DIR=str(control), LD_PRELOAD=str(stub),
               CUDA_PROFILER_STUB_LOG=str(log))
    proc = Child([sys.executable, "-c", target], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith("ready"), proc.err_text()
        assert _log(log) == []  # armed, not capturing: no range yet
        r = subprocess.run([*trt_trace_cli(), "capture", str(proc.pid), "--seconds", "1", "-o",
                            str(tmp_path / "window.json")], env=_env(TRT_TRACE_CONTROL_DIR=str(control)),
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        ranges = _log(log)
        assert [w for w, _ in ranges] == ["start", "stop"]
        n, first, last = _call_span_ns(tmp_path / "window.json")
        assert n > 0 and ranges[0][1] < first and last < ranges[1][1]
        assert 0.9e9 < ranges[1][1] - ranges[0][1] < 30e9
    finally:
        proc.kill()
        proc.communicate()


@pytest.mark.parametrize(("env", "line"), [
    ({}, None),  # unset: never called
    ({"TRT_TRACE_CUDA_PROFILER": "calls"}, "trt_trace: TRT_TRACE_CUDA_PROFILER='calls' is not a mode; use session"),
    ({"TRT_TRACE_CUDA_PROFILER": "session", "CUDA_PROFILER_STUB_ERROR": "4"},
     "trt_trace: TRT_TRACE_CUDA_PROFILER: cudaProfilerStart failed (cudaError_t 4); no capture range"),
])
def test_off_a_bad_mode_and_a_failing_call(stub: Path, tmp_path: Path, env: dict[str, str], line: str | None) -> None:
    """Off or refused: no range (a failed start is no open range: no stop follows), the sessions record as ever."""
    log = tmp_path / "profiler.log"
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=_env(LD_PRELOAD=str(stub), CUDA_PROFILER_STUB_LOG=str(log), **env))
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    if line is None:
        assert lines == [] and _log(log) == []
    else:
        assert len(lines) == 1 and lines[0].startswith(line), r.stderr
        assert [w for w, _ in _log(log)] == (["start"] if "ERROR" in str(env) else [])
    assert _call_span_ns(tmp_path / "first.json")[0] == 20


def test_no_cuda_runtime_is_one_line(tmp_path: Path) -> None:
    """A CPU build of torch has no cudaProfilerStart: one line for the process, the sessions record as ever."""
    r = subprocess.run([sys.executable, "-c", SCRIPT], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=_env(TRT_TRACE_CUDA_PROFILER="session"))
    assert r.returncode == 0, r.stderr
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA build has the function (the device check covers it)")
    assert r.stderr.splitlines() == ["trt_trace: TRT_TRACE_CUDA_PROFILER: no CUDA runtime in this process (no "
                                     "cudaProfilerStart); no capture range"]
    assert _call_span_ns(tmp_path / "second.json")[0] == 3


@pytest.mark.parametrize(("raw", "expected", "warns"), [
    (None, None, False), ("0", None, False), ("off", None, False), ("session", "session", False),
    (" Session ", "session", False), ("calls", None, True), ("1", None, True),
])
def test_trt_trace_cuda_profiler_reads_as_documented(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                                     raw: str | None, expected: str | None, warns: bool) -> None:
    from trt_trace.runtime import config

    if raw is None:
        monkeypatch.delenv("TRT_TRACE_CUDA_PROFILER", raising=False)
    else:
        monkeypatch.setenv("TRT_TRACE_CUDA_PROFILER", raw)
    assert config.cuda_profiler_from_env() == expected
    assert (capsys.readouterr().err != "") is warns
