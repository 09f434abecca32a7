"""Under load, faults and bad input nothing is lost and nothing breaks (issue: robustness)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest
import torch
from conftest import TERMINAL_SIGNALS, drain_all, run_python, with_signals_ignored
from trace_checks import check_nesting, check_trace, load_strict

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, load_events
from trt_trace.native import ops

# -- overflow -----------------------------------------------------------------------------------

OVERFLOW = """
import threading, torch
from trt_trace import standin
e = standin.make_engine("flood_engine")
x = [torch.ones(4)]
def work():
    for _ in range(3000):
        torch.ops.tensorrt.execute_engine(x, e)
ts = [threading.Thread(target=work) for _ in range(2)]
[t.start() for t in ts]; [t.join() for t in ts]
"""


def test_overflow_never_blocks_and_counts_every_lost_event(tmp_path):
    out = tmp_path / "t.json"
    # 64 events per thread and a drainer every 50 ms: most of 30,000 events cannot be kept.
    proc = run_python(OVERFLOW, {"TRT_TRACE_OUT": str(out), "TRT_TRACE_BUFFER": "64"})
    assert proc.returncode == 0, proc.stderr
    events = load_strict(out)
    check_trace(events)
    end = [e for e in events if e["ph"] == "M" and e["name"] == "trt_trace_metadata"][-1]["args"]
    written_per_thread: dict[int, int] = {}
    for e in events:
        if e["ph"] == "X":
            written_per_thread[e["args"]["thread"]] = written_per_thread.get(e["args"]["thread"], 0) + 1
    for t in end["threads"]:
        if t["thread"] in written_per_thread:  # the two workers
            assert written_per_thread[t["thread"]] + t["dropped"] == t["produced"]
    assert sum(t["produced"] for t in end["threads"]) == 2 * 3000 * 5  # every call: call + 4 phases
    # Every event that is not in the file is counted, exactly: events, not threads.
    lost = 2 * 3000 * 5 - sum(written_per_thread.values())
    assert lost > 0 and end["dropped_events"] == lost
    # And in calls: the 6,000 calls executed are the calls in the file and the calls dropped.
    in_file = sum(1 for e in events if e["ph"] == "X" and e["name"] == "execute_engine")
    assert in_file + end["dropped_calls"] == 2 * 3000 and lost == 5 * end["dropped_calls"]
    assert sum(t["dropped_calls"] for t in end["threads"]) == end["dropped_calls"]
    warnings = [ln for ln in proc.stderr.splitlines() if "dropped" in ln]
    assert warnings == [f"trt_trace: {end['dropped_calls']} call(s) ({lost} event(s)) dropped in 2 thread(s): the "
                        "trace buffer was full; raise TRT_TRACE_BUFFER (now 64 events per thread)"]


def test_dump_engine_timing_reports_drops():
    ops.set_buffer_capacity(64)
    try:
        engine = standin.make_engine("drop_table_engine")

        def flood():
            ops.set_profile_execution(True)
            for _ in range(100):
                torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)

        ops.reset_thread_counts()
        t = threading.Thread(target=flood)
        t.start()
        t.join()
        ops.set_profile_execution(False)
        text = ops.timing_table()
        kept = len(drain_all())
    finally:
        ops.set_buffer_capacity(1 << 16)
    assert "drop_table_engine" in text and "100" in text  # the counters still count every call
    produced = sum(r[1] for r in ops.thread_counts().tolist())
    assert f"WARNING: {produced - kept} event(s) dropped in 1 thread(s)" in text and "TRT_TRACE_BUFFER" in text


# -- concurrency --------------------------------------------------------------------------------


def test_many_threads_while_switching_on_and_off_and_dumping(tmp_path):
    out = tmp_path / "t.json"
    shared = [standin.make_engine(f"shared_{i}", host_us=20) for i in range(3)]
    stop = threading.Event()
    errors: list[BaseException] = []
    calls_done = [0] * 8

    def worker(k: int) -> None:
        private = standin.make_engine(f"private_{k}")
        try:
            for n in range(600):
                torch.ops.tensorrt.execute_engine([torch.ones(8)], shared[n % 3])
                torch.ops.tensorrt.execute_engine([torch.ones(8)], private)
                calls_done[k] += 2
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    def meddler() -> None:
        while not stop.is_set():
            ops.set_profile_execution(False)
            ops.dump_engine_timing()
            ops.set_profile_execution(True)
            ops.reset()
            stop.wait(0.005)  # paces the meddling (the workers' end is what stops it)

    with trt_trace.tracing(str(out)):
        m = threading.Thread(target=meddler)
        m.start()
        ws = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
        for w in ws:
            w.start()
        for w in ws:
            w.join()
        stop.set()
        m.join()
    assert not errors and sum(calls_done) == 8 * 1200
    events = load_strict(out)
    check_trace(events)  # every track nests, every slice has its args
    by_call: dict[int, list[dict]] = {}
    for e in events:
        if e["ph"] == "X":
            by_call.setdefault(e["args"]["call_id"], []).append(e)
    for slices in by_call.values():  # no torn record: a call's slices agree and nest in it
        assert len({(s["args"]["engine"], s["args"]["thread"]) for s in slices}) == 1
        call = [s for s in slices if s["name"] == "execute_engine"]
        assert len(call) == 1
        check_nesting([(round(s["ts"] * 1000), round((s["ts"] + s["dur"]) * 1000), s["name"]) for s in slices])


# -- exit paths ---------------------------------------------------------------------------------

EXIT_SCRIPT = TERMINAL_SIGNALS + """
import os, signal, sys, threading, torch, trt_trace
from trt_trace import standin
e = standin.make_engine("exit_engine")
for _ in range(20):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
trt_trace.active().drainer.drain_once()  # the drainer has written these
how = sys.argv[1]
if how == "sys.exit":
    sys.exit(3)
if how == "exception":
    raise RuntimeError("boom")
if how in ("SIGTERM", "SIGINT", "SIGKILL"):
    os.kill(os.getpid(), getattr(signal, how))
    signal.pause()  # SIGINT raises KeyboardInterrupt here; the others end the process
if how == "os._exit":
    os._exit(0)
if how == "busy worker":
    slow = standin.make_engine("slow_engine")
    gate = standin.EnqueueGate().__enter__()  # never opened: the worker stays inside its call
    threading.Thread(target=lambda: torch.ops.tensorrt.execute_engine([torch.ones(4)], slow), daemon=True).start()
    gate.wait_for(1)  # the exit comes while it is inside the call
"""


def _load(path, complete: bool = True) -> list[dict]:
    """A whole JSON file read strictly; a Perfetto one (or a cut file) by the project's reader."""
    return load_strict(path) if complete and str(path).endswith(".json") else load_events(str(path))


SUFFIXES = pytest.mark.parametrize("suffix", [".json", ".pftrace"])  # both written by the native writer thread


@SUFFIXES
@pytest.mark.parametrize("how,complete", [
    ("normal", True), ("sys.exit", True), ("exception", True), ("SIGTERM", True), ("SIGINT", True),
    ("busy worker", True), ("os._exit", True), ("SIGKILL", False),
])
def test_exit_paths_leave_a_loadable_trace(tmp_path, how, complete, suffix):
    out = tmp_path / f"t{suffix}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_OUT"] = str(out)
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", EXIT_SCRIPT, how], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert time.time() - t0 < 60, "shutdown must not hang"
    events = _load(out, complete)
    calls = [e for e in events if e.get("ph") == "X" and e["name"] == "execute_engine"
             and e["args"]["engine"] == "exit_engine"]
    assert len(calls) == 20, proc.stderr  # everything drained before the exit is there
    if complete:
        check_trace(events)
        assert any(e["ph"] == "M" and "dropped_events" in e.get("args", {}) for e in events)
        # Whichever way it ended, the process said where its trace is, and how many events of its engines
        # (the slices: the file's metadata aside) it holds.
        slices = sum(1 for e in events if e["ph"] == "X")
        said = [line for line in proc.stderr.splitlines() if line.startswith("trt_trace: trace written to ")]
        assert said == [f"trt_trace: trace written to {out} ({slices} events); open it in ui.perfetto.dev"], \
            proc.stderr
    if how == "SIGTERM":
        assert proc.returncode == -signal.SIGTERM  # the program still dies of the signal


IGNORING_SCRIPT = """
import contextlib, os, signal, sys, torch, trt_trace
from trt_trace import standin
e = standin.make_engine("ignoring_engine")
with trt_trace.tracing(sys.argv[2]) if sys.argv[1] == "api" else contextlib.nullcontext():
    for _ in range(20):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(5):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN)
"""


@pytest.mark.parametrize("start", ["TRT_TRACE_OUT", "api"])
def test_a_traced_program_keeps_ignoring_the_signals_its_user_ignored(tmp_path, start):
    # Started as a background job or under a process manager that ignores SIGINT and SIGTERM, the program
    # is not ended by them: tracing leaves both ignored, and the trace is finished at its normal exit.
    out = tmp_path / "t.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    if start == "TRT_TRACE_OUT":
        env["TRT_TRACE_OUT"] = str(out)
    proc = subprocess.run(with_signals_ignored([sys.executable, "-c", IGNORING_SCRIPT, start, str(out)]), env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "True True\n", proc.stderr
    events = load_strict(out)
    check_trace(events)
    calls = [e for e in events if e.get("ph") == "X" and e["name"] == "execute_engine"]
    assert len(calls) == 25


# -- fork ---------------------------------------------------------------------------------------

FORK_SCRIPT = """
import os, sys, torch
from trt_trace import standin
e = standin.make_engine("parent_engine")
for _ in range(10):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
pid = os.fork()
if pid == 0:
    c = standin.make_engine("child_engine")
    for _ in range(7):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], c)
    sys.exit(0)  # a normal exit of the child runs its atexit
os.waitpid(pid, 0)
for _ in range(5):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
print(pid)
"""


@pytest.mark.parametrize("template", ["t.json", "t_{pid}.json", "t.pftrace", "t_{pid}.pftrace"])
def test_fork_child_does_not_corrupt_the_parent_and_gets_its_own_trace(tmp_path, template):
    suffix = template[template.rindex("."):]
    proc = run_python(FORK_SCRIPT, {"TRT_TRACE_OUT": str(tmp_path / template)}, timeout=120)
    assert proc.returncode == 0, proc.stderr
    child_pid = int(proc.stdout.split()[-1])
    files = {p.name: p for p in tmp_path.glob(f"t*{suffix}")}
    parent_file = [p for n, p in files.items() if str(child_pid) not in n]
    assert len(parent_file) == 1
    events = _load(parent_file[0])
    check_trace(events)
    names = [e["args"]["engine"] for e in events if e["ph"] == "X" and e["name"] == "execute_engine"]
    assert names == ["parent_engine"] * 15
    if "{pid}" in template:
        child = _load(tmp_path / f"t_{child_pid}{suffix}")
        check_trace(child)
        names = [e["args"]["engine"] for e in child if e["ph"] == "X" and e["name"] == "execute_engine"]
        assert names == ["child_engine"] * 7  # the child's own calls only, none of its parent's


# -- bad input ----------------------------------------------------------------------------------

EAGER = """
import torch
from trt_trace import standin
e = standin.make_engine({name!r})
for _ in range(3):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
print("ran")
"""


@pytest.mark.parametrize("value,words", [
    ("", "empty"),
    ("{tmp}", "is a directory"),
    ("{tmp}/missing/t.json", "does not exist"),
    ("/proc/t.json", "cannot write"),
])
def test_bad_output_paths_warn_once_and_run_untraced(tmp_path, value, words):
    proc = run_python(EAGER.format(name="e"), {"TRT_TRACE_OUT": value.format(tmp=tmp_path)})
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("trt_trace:")]
    assert len(lines) == 1 and "TRT_TRACE_OUT" in lines[0] and words in lines[0], proc.stderr


@pytest.mark.parametrize("var,value", [
    ("TRT_TRACE_BUFFER", "lots"), ("TRT_TRACE_BUFFER", "-5"), ("TRT_TRACE_GPU", "maybe"),
    ("TRT_TRACE_NVTX", "2"), ("TRT_TRACE_MAX_MB", "big"), ("TRT_TRACE_ON_LIMIT", "explode"),
    ("TRT_TRACE_GPU_EVERY", "abc"),
])
def test_nonsense_settings_warn_and_fall_back(tmp_path, var, value):
    out = tmp_path / "t.json"
    proc = run_python(EAGER.format(name="e"), {"TRT_TRACE_OUT": str(out), var: value})
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("trt_trace:") and var in ln]
    assert len(lines) == 1 and repr(value) in lines[0]
    check_trace(load_strict(out))  # traced with the default


def test_non_json_suffix_warns_and_writes_json(tmp_path):
    out = tmp_path / "trace.txt"
    proc = run_python(EAGER.format(name="e"), {"TRT_TRACE_OUT": str(out)})
    assert proc.returncode == 0
    assert any("*.json" in ln for ln in proc.stderr.splitlines())
    check_trace(load_strict(out))


def test_engine_names_with_quotes_newlines_and_unicode_stay_valid_json(tmp_path):
    out = tmp_path / "t.json"
    weird = ['quo"te\\\\back', "naïve ✓ 引擎", "tab\there", "new\nline"]
    engines = [standin.make_engine(n) for n in weird]
    with trt_trace.tracing(str(out)):
        for e in engines:
            torch.ops.tensorrt.execute_engine([torch.ones(2)], e)
    events = load_strict(out)
    tracks = check_trace(events)
    # A name is the rest of its "  Name:" line, so a newline ends it.
    assert sorted(tracks.values()) == sorted(['quo"te\\\\back', "naïve ✓ 引擎", "tab\there", "new"])


# -- long runs ----------------------------------------------------------------------------------


@SUFFIXES
def test_size_limit_splits_into_numbered_complete_files(tmp_path, suffix):
    out = tmp_path / f"t{suffix}"
    engines = [standin.make_engine(f"split_engine_{i}") for i in range(2)]
    limit = 20_000 if suffix == ".json" else 8_000  # a Perfetto call takes about a third of the bytes
    with trt_trace.tracing(str(out), max_bytes=limit) as session:
        for _ in range(60):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(2)], e)
            session.drainer.drain_once()  # a batch per round: the limit is checked between batches
    files = session.writer.paths
    assert len(files) > 2 and files[1] == str(tmp_path / f"t.1{suffix}")
    total = 0
    for f in files:
        events = _load(f)
        tracks = check_trace(events)
        assert set(tracks.values()) <= {"split_engine_0", "split_engine_1"}
        total += sum(1 for e in events if e["ph"] == "X" and e["name"] == "execute_engine")
    assert total == 120


@SUFFIXES
def test_size_limit_can_stop_writing_with_a_clear_message(tmp_path, capfd, suffix):
    out = tmp_path / f"t{suffix}"
    engine = standin.make_engine("capped_engine")
    with trt_trace.tracing(str(out), max_bytes=5_000, split=False) as session:
        for _ in range(100):
            torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
            session.drainer.drain_once()
    assert session.writer.paths == [str(out)] and session.writer.events_not_written > 0
    events = _load(out)
    check_trace(events)
    end = [e for e in events if e["ph"] == "M" and e["name"] == "trt_trace_metadata"][-1]["args"]
    assert end["events_not_written"] == session.writer.events_not_written
    err = capfd.readouterr().err
    assert "TRT_TRACE_MAX_MB" in err and "not written" in err


def test_streaming_keeps_memory_flat(tmp_path):
    """RSS after 40k calls is no larger than after 10k (the trace streams to disk)."""
    code = """
import resource, torch, trt_trace
from trt_trace import standin
e = standin.make_engine("long_engine")
x = [torch.ones(2)]
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096
with trt_trace.tracing({out!r}):
    for _ in range(10000):
        torch.ops.tensorrt.execute_engine(x, e)
    first = rss()
    for _ in range(30000):
        torch.ops.tensorrt.execute_engine(x, e)
    second = rss()
print(first, second)
"""
    proc = run_python(code.format(out=str(tmp_path / "t.json")), {}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    first, second = map(int, proc.stdout.split())
    assert second - first < 16 * 2**20, (first, second)
    assert aggregate(load_events(str(tmp_path / "t.json"))).stats[0][0] == 40000


def test_untraced_calls_after_stop_leave_nothing_behind():
    engine = standin.make_engine("after_engine")
    torch.ops.tensorrt.execute_engine([torch.ones(2)], engine)
    assert len(drain_all()) == 0


def test_children_of_a_traced_command_are_traced_with_their_own_files(tmp_path):
    """`trt-trace run` sets TRT_TRACE_OUT for the command; its Python children inherit it."""
    from test_startup_and_cli import trt_trace_cmd

    child = EAGER.format(name="child_engine")
    parent = (f"import subprocess, sys\n{EAGER.format(name='parent_engine')}"
              f"subprocess.run([sys.executable, '-c', {child!r}], check=True)\n")
    script = tmp_path / "serve.py"
    script.write_text(parent)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    proc = subprocess.run(trt_trace_cmd() + ["run", "-o", str(tmp_path / "t_{pid}.json"), "--", sys.executable,
                                             str(script)], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    engines = set()
    for f in tmp_path.glob("t_*.json"):
        events = load_strict(f)
        check_trace(events)
        engines |= {tuple(sorted({e["args"]["engine"] for e in events if e["ph"] == "X"}))}
    assert engines == {("parent_engine",), ("child_engine",)}
