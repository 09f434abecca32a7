"""Forked children keep every call in a complete file of their own (TRT_TRACE_OUT='t_{pid}.json'),
however they leave: a multiprocessing fork worker, a ProcessPoolExecutor's fork workers and a bare
os.fork() child all end in os._exit, which runs no atexit hook. A child killed by a signal leaves
what its drainer wrote: the calls so far, no end record."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from trace_checks import check_trace, load_strict

from trt_trace.analysis.trace_summary import load_events

CALL = """
import os, sys, torch
from trt_trace import standin

def calls(n, name="child_engine"):
    e = standin.make_engine(name)
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    return os.getpid(), n
"""

MP_PROCESS = CALL + """
import multiprocessing as mp
if __name__ == "__main__":
    p = mp.get_context("fork").Process(target=calls, args=(int(sys.argv[1]),))
    p.start()
    p.join()
    print(p.pid, p.exitcode)
"""

POOL = CALL + """
import concurrent.futures as cf, multiprocessing as mp
if __name__ == "__main__":
    with cf.ProcessPoolExecutor(max_workers=2, mp_context=mp.get_context("fork")) as pool:
        done = list(pool.map(calls, [int(sys.argv[1])] * 6))
    print(" ".join(f"{pid}:{n}" for pid, n in done))
"""

BARE_FORK = CALL + """
pid = os.fork()
if pid == 0:
    calls(int(sys.argv[1]))
    os._exit(0)
os.waitpid(pid, 0)
print(pid, 0)
"""


def run_script(script: str, tmp_path: Path, *args: str, out: str | None = "t_{pid}.json",
               **env: str) -> subprocess.CompletedProcess:
    path = tmp_path / "program.py"
    path.write_text(script)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    if out is not None:
        base["TRT_TRACE_OUT"] = out
    return subprocess.run([sys.executable, str(path), *args], env={**base, **env}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def engine_calls(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine"]


def end_record(events: list[dict]) -> dict | None:
    ends = [e["args"] for e in events if e.get("ph") == "M" and e.get("name") == "trt_trace_metadata"
            and "ended" in e.get("args", {})]
    return ends[-1] if ends else None


def check_complete_child_trace(path: Path, calls: int) -> None:
    """A complete JSON file (closing ] included) with exactly `calls` calls and a "closed" end."""
    events = load_strict(path)
    check_trace(events)
    assert len(engine_calls(events)) == calls, path
    end = end_record(events)
    assert end is not None and end["ended"] == "closed"
    assert end["records_written"] == sum(1 for e in events if e.get("ph") == "X")


@pytest.mark.parametrize("calls", [40, 5000])
def test_a_multiprocessing_fork_worker_keeps_every_call(tmp_path, calls):
    proc = run_script(MP_PROCESS, tmp_path, str(calls))
    assert proc.returncode == 0, proc.stderr
    pid, exitcode = map(int, proc.stdout.split())
    assert exitcode == 0
    # The parent ran no engine: its file was never created; the worker's is whole.
    assert sorted(p.name for p in tmp_path.glob("t_*.json")) == [f"t_{pid}.json"]
    check_complete_child_trace(tmp_path / f"t_{pid}.json", calls)
    assert f"trace written to t_{pid}.json ({calls * 5} events)" in proc.stderr


def test_process_pool_fork_workers_keep_every_call(tmp_path):
    proc = run_script(POOL, tmp_path, "300")
    assert proc.returncode == 0, proc.stderr
    per_worker: dict[int, int] = {}
    for item in proc.stdout.split():
        pid, n = map(int, item.split(":"))
        per_worker[pid] = per_worker.get(pid, 0) + n
    assert sum(per_worker.values()) == 1800
    assert sorted(p.name for p in tmp_path.glob("t_*.json")) == sorted(f"t_{pid}.json" for pid in per_worker)
    for pid, n in per_worker.items():
        check_complete_child_trace(tmp_path / f"t_{pid}.json", n)


@pytest.mark.parametrize("calls", [40, 5000])
def test_a_bare_fork_child_that_ends_in_os_exit_keeps_every_call(tmp_path, calls):
    proc = run_script(BARE_FORK, tmp_path, str(calls))
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.split()[0])
    assert sorted(p.name for p in tmp_path.glob("t_*.json")) == [f"t_{pid}.json"]
    check_complete_child_trace(tmp_path / f"t_{pid}.json", calls)


KILLED = CALL + """
import signal, trt_trace
pid = os.fork()
if pid == 0:
    calls(int(sys.argv[1]))
    trt_trace.active().drainer.drain_once()  # written, as the drainer does every 50 ms
    os.write(1, b"%d\\n" % os.getpid())
    while True:
        signal.pause()  # killed here
"""


def test_a_child_killed_by_a_signal_leaves_its_drained_calls_and_no_end(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(KILLED)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    proc = subprocess.Popen([sys.executable, str(script), "30"], env={**base, "TRT_TRACE_OUT": "t_{pid}.json"},
                            cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    try:
        child = int(proc.stdout.readline())  # its calls are in its file now
        path = tmp_path / f"t_{child}.json"
        os.kill(child, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    data = path.read_bytes().rstrip()
    assert data.endswith(b"}") and not data.endswith(b"]")  # every drained batch whole, no closing bracket
    events = orjson.loads(data + b"\n]")
    # The 30 calls, each with its four phases, and no end record.
    assert len(engine_calls(events)) == 30 and sum(1 for e in events if e.get("ph") == "X") == 150
    assert end_record(events) is None
    summary = subprocess.run([str(Path(sys.executable).parent / "trt-trace"), "summary", path.name], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120, env=base)
    assert summary.returncode == 0 and "Traceback" not in summary.stderr, summary.stderr
    rows = {ln.split()[0]: ln.split()[1] for ln in summary.stdout.splitlines()[1:] if ln.strip()
            and not ln.startswith("cut short")}
    left_out = re.search(r"cut short: (\d+) partial call", summary.stdout + summary.stderr)
    # What the table counts and what it says it left out add up to the calls in the file.
    assert int(rows["child_engine"]) + (int(left_out.group(1)) if left_out else 0) == 30, summary.stdout


def test_os_exit_in_the_main_process_finishes_the_trace_too(tmp_path):
    code = CALL + "calls(12, 'main_engine')\nos._exit(0)\n"
    proc = run_script(code, tmp_path, out="main.json")
    assert proc.returncode == 0, proc.stderr
    check_complete_child_trace(tmp_path / "main.json", 12)
    assert "trace written to main.json (60 events)" in proc.stderr


def test_posix_exit_cannot_run_python_code_and_leaves_what_was_drained(tmp_path):
    # What is not covered, said plainly: posix._exit (like a C-level _exit) skips every Python hook.
    code = CALL + ("import trt_trace, posix\ncalls(7, 'raw_exit_engine')\n"
                   "trt_trace.active().drainer.drain_once()\nposix._exit(0)\n")
    proc = run_script(code, tmp_path, out="raw.json")
    assert proc.returncode == 0, proc.stderr
    events = load_events(str(tmp_path / "raw.json"))
    assert len(engine_calls(events)) == 7 and end_record(events) is None
    assert "trace written" not in proc.stderr


def test_the_exit_hook_passes_the_status_on_and_chains_to_an_earlier_wrapper(tmp_path):
    code = CALL + ("import trt_trace\nseen = []\nreal = os._exit\n"
                   "os._exit = lambda status: (seen.append(status), os.write(1, b'wrapped %d\\n' % status), "
                   "real(status))\n"
                   "with trt_trace.tracing('x.json'):\n    calls(2, 'chained')\n"
                   "trt_trace.start('y.json')\ncalls(3, 'chained')\nos._exit(5)\n")
    proc = run_script(code, tmp_path, out=None)
    assert proc.returncode == 5 and proc.stdout == "wrapped 5\n", (proc.stdout, proc.stderr)
    check_complete_child_trace(tmp_path / "x.json", 2)
    check_complete_child_trace(tmp_path / "y.json", 3)
