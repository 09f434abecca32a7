"""No hang, whatever the import order: with every start-up variable (TRT_TRACE_OUT, TRT_TRACE_FLIGHT,
TRT_TRACE_METRICS_PORT, TRT_TRACE_LAYERS, together), a fresh process that imports trt_trace first,
torch first, `from trt_trace import standin`, `import trt_trace.standin.model`, or runs under `trt-trace
run`, runs its engine and leaves what the variables promise: the trace, the flight recorder's exit dump,
metrics that count the calls, the calls' layers. Each is a real subprocess with a timeout (a hang fails
the test, never the suite): `import trt_trace` before torch used to wait on its own library load for ever
(the start-up hook ran inside that load's `import torch`)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from trt_trace.io.readers import read_calls

TIMEOUT_S = 150  # a hang is a failure; a loaded 2-core machine starts torch in a few seconds
CALLS = 5

# What comes first in the program, then the rest of its imports.
ORDERS = {
    "trt_trace first": "import trt_trace\nimport torch\nfrom trt_trace import standin\n",
    "torch first": "import torch\nimport trt_trace\nfrom trt_trace import standin\n",
    "standin first": "from trt_trace import standin\nimport torch\nimport trt_trace\n",
    "standin.model first": ("import trt_trace.standin.model\nimport torch\nimport trt_trace\n"
                            "from trt_trace import standin\n"),
}

# The program: its engine's calls (with layers, for TRT_TRACE_LAYERS), then, with metrics on, its own scrape.
BODY = """
import os, sys, time, urllib.request
engine = standin.make_engine("order_engine", layers=(("conv", 20), ("relu", 10)))
for _ in range({calls}):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
port = os.environ.get("TRT_TRACE_METRICS_PORT")
if port:
    deadline = time.monotonic() + 60
    while True:
        try:
            text = urllib.request.urlopen(f"http://127.0.0.1:{{port}}/metrics", timeout=5).read().decode()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    with open("scrape.txt", "w") as f:
        f.write(text)
print("ran", flush=True)
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def variables(kind: str) -> dict[str, str]:
    """The start-up variables of one case (TRT_TRACE_OUT is trace.json wherever a file is expected)."""
    env: dict[str, str] = {}
    if kind in ("out", "out+layers", "all"):
        env["TRT_TRACE_OUT"] = "trace.json"
    if kind in ("flight", "all"):
        env.update(TRT_TRACE_OUT="trace.json", TRT_TRACE_FLIGHT="30", TRT_TRACE_FLIGHT_ON_EXIT="1")
    if kind in ("metrics", "all"):
        env["TRT_TRACE_METRICS_PORT"] = str(free_port())
    if kind in ("out+layers", "all"):
        env["TRT_TRACE_LAYERS"] = "2"
    return env


def run_program(argv: list[str], env_extra: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env.update(env_extra)
    proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"hung for {TIMEOUT_S} s: {argv[-1][:80]!r}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def calls_in(path: Path) -> tuple[int, str, dict]:
    read = read_calls(str(path), lambda calls, info: None)
    meta = read.info.last_metadata or {}
    return read.calls, read.info.ended, meta


def check(kind: str, proc: subprocess.CompletedProcess, cwd: Path) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "ran" in proc.stdout, proc.stderr
    assert "could not start tracing" not in proc.stderr and "running untraced" not in proc.stderr, proc.stderr
    if kind in ("out", "out+layers"):
        calls, ended, meta = calls_in(cwd / "trace.json")
        assert (calls, ended) == (CALLS, "closed"), proc.stderr
        assert "trace written to trace.json" in proc.stderr
        if kind == "out+layers":  # each engine's 2 calls after its first, layer by layer
            assert meta["layers"]["calls_per_engine"] == 2
            assert [e["profiled_calls"] for e in meta["layers"]["engines"]] == [2], meta["layers"]
    if kind in ("flight", "all"):  # the flight recorder writes only its exit dump
        assert not (cwd / "trace.json").exists()
        calls, ended, meta = calls_in(cwd / "trace.dump1.json")
        assert calls == CALLS, proc.stderr
        if kind == "all":
            assert meta["layers"]["calls_per_engine"] == 2
    if kind in ("metrics", "all"):
        scrape = (cwd / "scrape.txt").read_text()
        line = next(ln for ln in scrape.splitlines()
                    if ln.startswith("trt_trace_engine_calls") and "order_engine" in ln)
        assert float(line.rsplit(" ", 1)[1]) == CALLS, line


KINDS = ["out", "flight", "metrics", "out+layers", "all"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("order", sorted(ORDERS))
def test_any_import_order_with_any_start_up_variable_runs_and_leaves_its_file(order, kind, tmp_path):
    code = ORDERS[order] + BODY.format(calls=CALLS)
    proc = run_program([sys.executable, "-c", code], variables(kind), tmp_path)
    check(kind, proc, tmp_path)


@pytest.mark.parametrize("order", ["trt_trace first", "standin first"])
def test_under_trt_trace_run_the_program_that_imports_trt_trace_first_is_traced(order, tmp_path):
    cli = shutil.which("trt-trace", path=os.path.dirname(sys.executable))
    assert cli is not None
    code = ORDERS[order] + BODY.format(calls=CALLS)
    proc = run_program([cli, "run", "-o", "trace.json", "--", sys.executable, "-c", code], {}, tmp_path)
    check("out", proc, tmp_path)


def test_the_library_load_is_never_re_entered_by_the_start_up_hook(tmp_path):
    """The mechanism: the hook that `import torch` runs inside the library's load waits for the load's end
    (trt_trace.native._library.after_load), and the session starts after the library is loaded."""
    code = ("import trt_trace\nfrom trt_trace.native import _library\nfrom trt_trace.runtime import session\n"
            "s = session.active()\nprint('active', s is not None and s.path.endswith('trace.json'), flush=True)\n"
            "print('ran', flush=True)\n")
    proc = run_program([sys.executable, "-c", code], {"TRT_TRACE_OUT": "trace.json"}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "active True" in proc.stdout, (proc.stdout, proc.stderr)

