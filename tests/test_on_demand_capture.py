"""`trt-trace capture`: a window of a running process, started from outside (runtime/on_demand.py, the armed
process's side; runtime/capture_request.py, the command's). Real processes throughout: a target calling
engines from a C++ loop of torch ops, one whose main thread spins in Python holding the GIL, one stuck in a
single C call, a forked child, a group of rank workers captured with --all, and each failure's one line."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TERMINAL_SIGNALS, Child, terminal_signals, trt_trace_cli
from trace_checks import load_strict

from trt_trace.analysis.trace_summary import aggregate_file

# A target: arms by importing trt_trace, makes a stand-in engine, says "ready", then runs BODY. The calls
# it makes while a session is active are counted (`inside`), and the calls a session's start or end may
# have cut (`edge`: active before the call and not after, or the other way round), for the accounting.
TARGET = TERMINAL_SIGNALS + """
import os, sys, threading, time, torch
import trt_trace
from trt_trace import standin
engine = standin.make_engine("capture_engine")
counts = {"inside": 0, "edge": 0}

def call():
    before = trt_trace.active() is not None
    torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    after = trt_trace.active() is not None
    if before and after:
        counts["inside"] += 1
    elif before or after:
        counts["edge"] += 1

def call_for(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        call()

# Armed is not tracing: no session, the live counters' switch as the program left it (off).
assert trt_trace.active() is None and not trt_trace.get_profile_execution()
print("ready", os.getpid(), flush=True)
"""


def _env(control: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env.update(TRT_TRACE_CONTROL_DIR=str(control), **extra)
    return env


def _start(body: str, control: Path, tmp_path: Path, **env: str) -> subprocess.Popen:
    """A target process, once it is ready (armed: its socket is there)."""
    proc = Child([sys.executable, "-c", TARGET + body], env=_env(control, **env), cwd=tmp_path,
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    assert line.startswith("ready"), (line, proc.err_text() if proc.poll() is not None else "")
    assert (control / f"{proc.pid}.sock").exists()
    return proc


def _capture(control: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*trt_trace_cli(), "capture", *args], env=_env(control), capture_output=True, text=True,
                          timeout=timeout)


def _calls(path: Path) -> int:
    return int(aggregate_file(str(path), ("total",)).stats[:, 0].sum())


def _line_counts(stdout: str, pid: int) -> tuple[int, int]:
    """(calls in the file, dropped) as the command's line for `pid` says them."""
    m = re.search(rf"^process {pid}: .*; (\d+) call\(s\) in the file, (\d+) dropped", stdout, re.M)
    assert m, stdout
    return int(m.group(1)), int(m.group(2))


def _finish(proc: subprocess.Popen) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    return out, err


def test_a_window_of_a_busy_process_holds_every_call_it_made_in_the_window(tmp_path: Path) -> None:
    """Engine calls back to back on two threads, a ring of 64 records per thread (so calls may be dropped):
    the file's calls + the dropped calls the command reports = the calls the target made while the session
    was on (up to the calls the start and the end cut, which the target counts apart)."""
    control = tmp_path / "ctl"
    body = """
workers = [threading.Thread(target=call_for, args=(8,)) for _ in range(2)]
for w in workers: w.start()
for w in workers: w.join()
assert trt_trace.active() is None and not trt_trace.get_profile_execution()  # back to tracing off
print(counts["inside"], counts["edge"], flush=True)
"""
    proc = _start(body, control, tmp_path, TRT_TRACE_BUFFER="64")
    try:
        time.sleep(1)
        out = tmp_path / "window.json"
        r = _capture(control, str(proc.pid), "--seconds", "2", "-o", str(out))
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        assert str(out) in r.stdout
        # The window held the 2 s asked (more on a loaded machine: the target's capture thread, woken at its
        # end, waits for the GIL behind the two calling threads; 2.1 s was seen under a busy CPU).
        held = float(re.search(r": ([\d.]+) s captured", r.stdout).group(1))
        assert 2.0 <= held < 4.0, r.stdout
        in_file, dropped = _line_counts(r.stdout, proc.pid)
    finally:
        stdout, stderr = _finish(proc)
    assert proc.returncode == 0, stderr
    inside, edge = (int(v) for v in stdout.split()[-2:])
    assert in_file == _calls(out) > 0
    end = load_strict(out)[-1]  # a complete trace: its end record says how it ended
    assert end["args"]["ended"] == "closed" and end["args"]["dropped_calls"] == dropped
    assert inside <= in_file + dropped <= inside + edge, (in_file, dropped, inside, edge)
    assert edge <= 4  # at most one cut call per thread at each end


def test_the_main_thread_spinning_in_python_with_the_gil_does_not_stop_a_capture(tmp_path: Path) -> None:
    """The main thread never leaves the interpreter loop (no call, no sleep); engine calls come from a thread.
    The request is served by the armed process's own thread within the interpreter's switch interval."""
    control = tmp_path / "ctl"
    body = """
threading.Thread(target=call_for, args=(60,), daemon=True).start()
x = 0
while True:
    x += 1
"""
    proc = _start(body, control, tmp_path)
    try:
        out = tmp_path / "spin.json"
        t0 = time.monotonic()
        r = _capture(control, str(proc.pid), "--seconds", "1", "--timeout", "5", "-o", str(out))
        took = time.monotonic() - t0
        assert r.returncode == 0, r.stderr
        in_file, _ = _line_counts(r.stdout, proc.pid)
        assert in_file == _calls(out) > 0
        assert took < 1 + 5
    finally:
        proc.kill()
        _finish(proc)


def test_a_single_c_call_holding_the_gil_answers_timed_out_in_one_line(tmp_path: Path) -> None:
    """sum() over a range runs in C and never lets the GIL go: no Python thread can run until it returns, so
    the capture cannot start; the command says so in one line after --timeout."""
    control = tmp_path / "ctl"
    proc = _start("sum(range(10**11))\n", control, tmp_path)
    try:
        time.sleep(0.5)
        r = _capture(control, str(proc.pid), "--seconds", "1", "--timeout", "1", "-o", str(tmp_path / "t.json"))
        assert r.returncode == 1
        assert r.stdout == ""
        assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith("trt-trace capture: timed out: "), r.stderr
        assert proc.poll() is None  # the target is untouched
    finally:
        proc.kill()
        _finish(proc)


def test_a_forked_child_is_an_armed_process_of_its_own(tmp_path: Path) -> None:
    """The child gets its own socket (the parent keeps its own); a capture of the child holds the child's calls
    under the child's pid; the parent can be captured too. A child that subprocess forks to exec another program
    (with a preexec_fn, the one case where the fork handlers run) is not armed."""
    control = tmp_path / "ctl"
    body = """
child = os.fork()
if child == 0:
    call_for(30)
    os._exit(0)
import subprocess
sleeper = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: None)
print("child", child, sleeper.pid, flush=True)
call_for(30)
"""
    proc = _start(body, control, tmp_path)
    child = sleeper = 0
    try:
        child, sleeper = (int(v) for v in proc.stdout.readline().split()[1:])
        deadline = time.monotonic() + 30
        while not (control / f"{child}.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (control / f"{child}.sock").exists() and (control / f"{proc.pid}.sock").exists()
        assert not (control / f"{sleeper}.sock").exists()
        r = _capture(control, str(child), "--seconds", "1", "-o", str(tmp_path / "child.json"))
        assert r.returncode == 0, r.stderr
        in_file, _ = _line_counts(r.stdout, child)
        events = load_strict(tmp_path / "child.json")
        assert {e["pid"] for e in events if e.get("ph") == "X"} == {child}
        assert in_file == _calls(tmp_path / "child.json") > 0
        r = _capture(control, str(proc.pid), "--seconds", "1", "-o", str(tmp_path / "parent.json"))
        assert r.returncode == 0, r.stderr
        assert _line_counts(r.stdout, proc.pid)[0] > 0
    finally:
        proc.kill()
        # The forked child and `sleep 60` hold the target's stdout and stderr too: they end first, or reading
        # the target's pipes to their end waits a minute for the sleeper.
        for pid in (child, sleeper):
            try:
                if pid > 0:
                    os.kill(pid, 9)
            except ProcessLookupError:
                pass
        _finish(proc)


def test_all_captures_every_worker_of_a_group_into_a_file_each(tmp_path: Path) -> None:
    """Three rank workers as torchrun starts them (RANK, LOCAL_RANK, WORLD_SIZE), armed from start-up by
    TRT_TRACE_ARM=1 (the workers import torch, never trt_trace themselves): --all captures them at once,
    one file per rank, and the numbers of each line are its file's."""
    control = tmp_path / "ctl"
    worker = TERMINAL_SIGNALS + """
import os, sys, time, torch
assert "trt_trace" in sys.modules  # armed by the start-up hook (TRT_TRACE_ARM=1), after torch's import
from trt_trace import standin
engine = standin.make_engine(f"rank{os.environ['RANK']}_engine")
print("ready", flush=True)
end = time.monotonic() + 30
while time.monotonic() < end:
    torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    time.sleep(0.001)
"""
    procs = []
    try:
        for rank in range(3):
            env = _env(control, TRT_TRACE_ARM="1", RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="3")
            p = Child([sys.executable, "-c", worker], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True)
            procs.append(p)
        for p in procs:
            assert p.stdout.readline().startswith("ready"), p.err_text()
        # A process of this user that is not armed is no part of --all (only armed processes have sockets).
        r = _capture(control, "--all", "--seconds", "1.5", "-o", str(tmp_path / "rank{rank}.json"))
        assert r.returncode == 0, r.stderr
        assert r.stderr == ""
        assert len(r.stdout.splitlines()) == 3
        for rank, p in enumerate(procs):
            path = tmp_path / f"rank{rank}.json"
            in_file, dropped = _line_counts(r.stdout, p.pid)
            assert in_file == _calls(path) > 0 and dropped == 0
            meta = next(e for e in load_strict(path) if e.get("name") == "trt_trace_metadata")["args"]
            assert (meta["rank"], meta["pid"]) == (rank, p.pid)
            assert aggregate_file(str(path), ("total",)).names == [f"rank{rank}_engine"]
        # No {pid} or {rank} in -o: each process's pid goes before the suffix.
        r = _capture(control, "--all", "--seconds", "0.5", "-o", str(tmp_path / "each.json"))
        assert r.returncode == 0, r.stderr
        assert sorted(tmp_path.glob("each.*.json")) == sorted(tmp_path / f"each.{p.pid}.json" for p in procs)
    finally:
        for p in procs:
            p.kill()
            _finish(p)


def test_each_failure_is_one_line(tmp_path: Path) -> None:
    """no such process, not permitted (another user's process), not armed (a process of ours that never
    imported trt_trace; one with TRT_TRACE_ARM=0), already capturing, a bad flag: one line, no traceback."""
    control = tmp_path / "ctl"

    def one_line(r: subprocess.CompletedProcess, start: str) -> None:
        assert r.returncode != 0 and r.stdout == ""
        assert len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"trt-trace capture: {start}"), r.stderr

    gone = subprocess.Popen(["true"])
    gone.wait()
    one_line(_capture(control, str(gone.pid), "--seconds", "1"), f"no such process: {gone.pid}")
    sleeper = subprocess.Popen(["sleep", "60"])
    other = None
    armed_not = None
    target = None
    try:
        one_line(_capture(control, str(sleeper.pid), "--seconds", "1"), f"not armed: process {sleeper.pid}")
        # Another user's process: as root, a child that runs as nobody; else init's.
        if os.getuid() == 0:
            other = subprocess.Popen(["sleep", "60"], user=65534)
            other_pid = other.pid
        else:
            other_pid = 1
        one_line(_capture(control, str(other_pid), "--seconds", "1"), f"not permitted: process {other_pid}")
        # TRT_TRACE_ARM=0: importing trt_trace does not arm.
        armed_not = subprocess.Popen([sys.executable, "-c", TARGET + "time.sleep(60)\n"], env=_env(control,
                                     TRT_TRACE_ARM="0"), cwd=tmp_path, stdout=subprocess.PIPE, text=True)
        assert armed_not.stdout.readline().startswith("ready")
        one_line(_capture(control, str(armed_not.pid), "--seconds", "1"), f"not armed: process {armed_not.pid}")
        target = _start("call_for(60)\n", control, tmp_path)
        # A window far longer than the second command's start-up on a loaded machine (seconds each), ended
        # by Ctrl-C once the second has been refused.
        first = Child([*trt_trace_cli(), "capture", str(target.pid), "--seconds", "120", "-o",
                       str(tmp_path / "first.json")], env=_env(control), stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE, text=True, preexec_fn=terminal_signals)
        deadline = time.monotonic() + 30
        while not (tmp_path / "first.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        one_line(_capture(control, str(target.pid), "--seconds", "1", "-o", str(tmp_path / "second.json")),
                 f"process {target.pid}: already capturing (tracing into {tmp_path / 'first.json'})")
        first.send_signal(signal.SIGINT)
        out, err = first.communicate(timeout=60)
        assert first.returncode == 0 and err == "", err
        assert not (tmp_path / "second.json").exists()
        one_line(_capture(control, str(target.pid), "--seconds", "-1"), "--seconds and --timeout")
        one_line(_capture(control, "--seconds", "1"), "give one PID, or --all")
        one_line(_capture(control, str(target.pid), "-o", str(tmp_path / "no" / "t.json")), "cannot write")
    finally:
        for p in (sleeper, other, armed_not, target):
            if p is not None:
                p.kill()
                p.communicate()


def test_a_process_that_exits_during_the_window_leaves_a_finished_file(tmp_path: Path) -> None:
    """The process ends (normally) 1.5 s into a 30 s window: its exit finishes the file, and the command says,
    in one line, that it ended and where what it recorded is."""
    control = tmp_path / "ctl"
    proc = _start("time.sleep(1); call_for(1.5)\n", control, tmp_path)
    try:
        out = tmp_path / "short.json"
        r = _capture(control, str(proc.pid), "--seconds", "30", "-o", str(out))
    finally:
        _finish(proc)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [f"trt-trace capture: process {proc.pid} ended during the window; {out} holds "
                                     "what it recorded until then (finished at its exit)"]
    assert load_strict(out)[-1]["args"]["ended"] == "closed"
    assert _calls(out) > 0


def test_ctrl_c_on_the_command_ends_the_window_and_the_file_is_finished(tmp_path: Path) -> None:
    control = tmp_path / "ctl"
    proc = _start("call_for(120)\n", control, tmp_path)
    try:
        out = tmp_path / "short.json"
        command = Child([*trt_trace_cli(), "capture", str(proc.pid), "--seconds", "60", "-o", str(out)],
                        env=_env(control), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        preexec_fn=terminal_signals)
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:  # the process creates it as the window opens
            time.sleep(0.05)
        time.sleep(0.5)
        command.send_signal(signal.SIGINT)
        stdout, stderr = command.communicate(timeout=60)
    finally:
        proc.kill()
        _finish(proc)
    assert command.returncode == 0 and stderr == "", stderr
    in_file, _ = _line_counts(stdout, proc.pid)
    seconds = float(re.search(r": ([\d.]+) s captured", stdout).group(1))
    assert 0 < seconds < 60
    assert load_strict(out)[-1]["args"]["ended"] == "closed" and in_file == _calls(out) > 0


def test_all_with_no_armed_process_says_so(tmp_path: Path) -> None:
    r = _capture(tmp_path / "ctl", "--all", "--seconds", "1")
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("trt-trace capture: no armed process of this user") and len(r.stderr.splitlines()) == 1


@pytest.mark.parametrize("mode", ["0755"])
def test_a_control_folder_open_to_others_is_refused(tmp_path: Path, mode: str) -> None:
    """Another user could connect to (or plant) sockets in a folder open to them: the process stays unarmed
    with one line, and the command refuses the folder too."""
    control = tmp_path / "open"
    control.mkdir(mode=int(mode, 8))
    control.chmod(int(mode, 8))
    proc = subprocess.run([sys.executable, "-c", "import torch, trt_trace"], env=_env(control), capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr.splitlines() == [f"trt_trace: on-demand capture is off in this process: control folder "
                                        f"{control} is open to other users (mode {mode[1:]}; it must be 700)"]
    assert list(control.iterdir()) == []


@pytest.mark.parametrize(("raw", "expected", "warns"), [
    (None, None, False), ("", None, False), ("1", True, False), ("yes", True, False), ("0", False, False),
    ("off", False, False), ("maybe", True, True),
])
def test_trt_trace_arm_reads_as_documented(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                           raw: str | None, expected: bool | None, warns: bool) -> None:
    from trt_trace.runtime import config

    if raw is None:
        monkeypatch.delenv("TRT_TRACE_ARM", raising=False)
    else:
        monkeypatch.setenv("TRT_TRACE_ARM", raw)
    assert config.arm_from_env() is expected
    assert (capsys.readouterr().err != "") is warns


def test_the_control_folder_is_the_variable_else_the_users_runtime_folder_else_tmp(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from trt_trace.runtime import config

    monkeypatch.setenv("TRT_TRACE_CONTROL_DIR", str(tmp_path / "c"))
    assert config.control_dir_from_env() == str(tmp_path / "c")
    monkeypatch.delenv("TRT_TRACE_CONTROL_DIR")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert config.control_dir_from_env() == str(tmp_path / "trt_trace")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert config.control_dir_from_env() == f"/tmp/trt_trace-{os.getuid()}"
