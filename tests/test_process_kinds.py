"""Accounting in every process kind: calls executed = calls in the files + calls reported dropped.

Each cell runs a real program with `TRT_TRACE_OUT='t_{pid}.json'` (so every process that runs an engine has
a file of its own) in one way a process is started or ends: a normal exit, an exception, Ctrl-C, SIGTERM
(trt_trace's handler and the program's own), SIGKILL, `os._exit`, fork / spawn / forkserver `Process`
and `Pool` (the pool's own terminate at `with` exit and close + join), `ProcessPoolExecutor`, and
torchrun workers. Every process counts the engine calls it executed into a file of its own, with
SIGINT and SIGTERM blocked around the call and the count, so that the count is exact whatever signal
arrives. The test then reads every trace back and checks, per process:

* the calls in its file plus the calls its end record says were dropped equal the calls it executed;
* the file says how it ended (an end record `ended: closed`), except after SIGKILL, where it has no end
  record and holds every call but those of the last moments (the drain runs every 50 ms);
* the exit line "trace written to X (N events)", where printed, is true of X;
* no process that ran no engine left a file, and no file belongs to no process.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Child, terminal_signals

from trt_trace.io.readers.in_memory import load_events

COUNTER = r"""
import os, signal, sys, threading, time
import torch
from trt_trace import standin

COUNTS = os.environ["COUNTS_DIR"]
_BLOCK = {signal.SIGINT, signal.SIGTERM}
_done = {"pid": None, "n": 0, "fd": None}


_lock = threading.Lock()


def _count_one() -> None:
    with _lock:
        if _done["pid"] != os.getpid():  # a forked child starts its own count
            _done.update(pid=os.getpid(), n=0, fd=os.open(f"{COUNTS}/{os.getpid()}", os.O_WRONLY | os.O_CREAT, 0o644))
        _done["n"] += 1
        os.pwrite(_done["fd"], b"%20d\n" % _done["n"], 0)


def calls(n, name="engine"):
    e = standin.make_engine(name)
    for _ in range(n):
        signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCK)  # the call and its count, or neither
        try:
            torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
            _count_one()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _BLOCK)
    return os.getpid(), n


def until_stopped(name="engine"):
    calls(50, name)
    print("ready", flush=True)
    while True:
        calls(10, name)
"""

PROGRAMS = {
    "exit": "calls(300)\n",
    "exception": "calls(300)\nraise RuntimeError('the program fails')\n",
    "os._exit": "calls(300)\nos._exit(3)\n",
    "sigint": "until_stopped()\n",
    "sigterm": "until_stopped()\n",
    "sigterm, own handler": ("signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))\nuntil_stopped()\n"),
    "sigkill": "until_stopped()\n",
}
for _method in ("fork", "spawn", "forkserver"):
    PROGRAMS[f"Process {_method}"] = f"""
import multiprocessing as mp
if __name__ == "__main__":
    ps = [mp.get_context("{_method}").Process(target=calls, args=(120,)) for _ in range(2)]
    for p in ps: p.start()
    for p in ps: p.join()
    assert all(p.exitcode == 0 for p in ps), [p.exitcode for p in ps]
    calls(30, "parent")
"""
    PROGRAMS[f"Pool {_method}, terminated at with-exit"] = f"""
import multiprocessing as mp
if __name__ == "__main__":
    with mp.get_context("{_method}").Pool(2) as pool:
        pool.map(calls, [40] * 6)
    calls(30, "parent")
"""
    PROGRAMS[f"Pool {_method}, close and join"] = f"""
import multiprocessing as mp
if __name__ == "__main__":
    pool = mp.get_context("{_method}").Pool(2)
    pool.map(calls, [40] * 6)
    pool.close()
    pool.join()
"""
for _method in ("fork", "spawn"):
    PROGRAMS[f"ProcessPoolExecutor {_method}"] = f"""
import concurrent.futures as cf, multiprocessing as mp
if __name__ == "__main__":
    with cf.ProcessPoolExecutor(2, mp_context=mp.get_context("{_method}")) as ex:
        list(ex.map(calls, [40] * 6))
"""

# torchrun's workers (its agent imports torch too, and runs no engine: no file).
PROGRAMS["torchrun workers"] = "calls(300)\n"

# Threads that outrun a tiny buffer: drops, which the end record must count in calls.
PROGRAMS["threads past a tiny buffer"] = """
import threading
ts = [threading.Thread(target=calls, args=(2000,)) for _ in range(3)]
for t in ts: t.start()
for t in ts: t.join()
"""
ENV = {"threads past a tiny buffer": {"TRT_TRACE_BUFFER": "64"}}

SIGNALLED = {"sigint": signal.SIGINT, "sigterm": signal.SIGTERM, "sigterm, own handler": signal.SIGTERM,
             "sigkill": signal.SIGKILL}


def _env(tmp_path: Path, suffix: str = ".json") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRT_TRACE_") or k in ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")}
    (tmp_path / "counts").mkdir()
    env.update(TRT_TRACE_OUT="t_{pid}" + suffix, COUNTS_DIR=str(tmp_path / "counts"), OMP_NUM_THREADS="1")
    return env


def run_cell(tmp_path: Path, kind: str, suffix: str = ".json") -> subprocess.CompletedProcess:
    (tmp_path / "program.py").write_text(COUNTER + PROGRAMS[kind])
    env = {**_env(tmp_path, suffix), **ENV.get(kind, {})}
    cmd = [sys.executable, "program.py"]
    if kind == "torchrun workers":
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        cmd = [str(Path(sys.executable).parent / "torchrun"), "--nproc-per-node", "2", "--master-addr", "127.0.0.1",
               "--master-port", str(port), "program.py"]
    if kind not in SIGNALLED:
        return subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
                              preexec_fn=terminal_signals)
    proc = Child(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True, preexec_fn=terminal_signals)
    try:
        assert proc.stdout.readline().strip() == "ready"
        time.sleep(1.0)  # a second of busy calls: the drain must keep up while they run
        proc.send_signal(SIGNALLED[kind])
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def executed_calls(tmp_path: Path) -> dict[int, int]:
    return {int(p.name): int(p.read_text()) for p in (tmp_path / "counts").iterdir()}


def end_record(events: list[dict]) -> dict | None:
    ends = [e["args"] for e in events if e.get("ph") == "M" and e.get("name") == "trt_trace_metadata"
            and "ended" in e.get("args", {})]
    return ends[-1] if ends else None


def dropped_calls(end: dict) -> int:
    return int(end["dropped_calls"])


CELLS = list(PROGRAMS)
# A .pftrace session is written by the same native thread as a JSON one: the cells where the writer's own
# handling shows (the exit paths, signals, SIGKILL, fork and spawn children, drops), in that format too.
PFTRACE_CELLS = ["exit", "exception", "os._exit", "sigterm", "sigkill", "Process fork", "Pool fork, close and join",
                 "Pool spawn, close and join", "threads past a tiny buffer"]


@pytest.mark.parametrize(("kind", "suffix"), [(k, ".json") for k in CELLS] + [(k, ".pftrace") for k in PFTRACE_CELLS])
def test_calls_executed_equal_calls_in_the_files_plus_calls_dropped(tmp_path, kind, suffix):
    proc = run_cell(tmp_path, kind, suffix)
    executed = executed_calls(tmp_path)
    assert executed, proc.stderr
    name = re.compile(r"t_(\d+)" + re.escape(suffix))
    files = {int(m.group(1)): p for p in tmp_path.glob(f"t_*{suffix}") if (m := name.fullmatch(p.name))}
    # Only processes that ran an engine have a file, and every file is one of theirs.
    assert sorted(files) == sorted(executed), (files, executed, proc.stderr)
    for pid, n in executed.items():
        events = load_events(str(files[pid]))
        in_file = sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine")
        end = end_record(events)
        if kind == "sigkill":
            assert end is None, end
            # All but the last moments: the drain writes every 50 ms; at most 0.25 s of calls may be lost.
            rate = n / 1.5
            assert n - rate * 0.25 <= in_file <= n, (in_file, n)
            continue
        assert end is not None and end["ended"] == "closed", (kind, pid, end, proc.stderr)
        assert in_file + dropped_calls(end) == n, (kind, pid, in_file, dropped_calls(end), n, proc.stderr)
        assert (dropped_calls(end) > 0) == (kind in ENV), end  # drops where the buffer is too small, only there
        assert end["records_written"] == sum(1 for e in events if e.get("ph") == "X")
        line = re.search(rf"trace written to t_{pid}{re.escape(suffix)} \((\d+) events\)", proc.stderr)
        if line:  # the exit line, where the process could print one, is true of the file
            assert int(line.group(1)) == end["records_written"], proc.stderr
