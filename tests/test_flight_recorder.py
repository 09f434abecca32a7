"""The flight recorder: the last SECONDS of calls in bounded memory, written only on a trigger."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import torch
from conftest import TERMINAL_SIGNALS, Child, run_python, trt_trace_cli
from pftrace_checks import check_pftrace, parse
from trace_checks import check_trace, load_strict

import trt_trace
from trt_trace.analysis.trace_summary import aggregate, load_events
from trt_trace.io.readers import read_calls


def _calls(events) -> list[dict]:
    return [e for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine"]


def _meta(events) -> list[dict]:
    return [e["args"] for e in events if e.get("ph") == "M" and e.get("name") == "trt_trace_metadata"]


def test_a_dump_holds_the_window_is_complete_and_tracing_goes_on(tmp_path, monkeypatch):
    from trt_trace import standin
    from trt_trace.native import ops

    old, new = standin.make_engine("before_window"), standin.make_engine("in_window")
    path = tmp_path / "flight.json"
    trt_trace.flight(0.6, str(path))
    for _ in range(5):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], old)
    between = ops.clock_now_ns()
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], new)
    # The window's clock, 0.6 s after the moment between the two: the old calls have fallen out of it.
    monkeypatch.setattr(ops, "clock_now_ns", lambda: between + 600_000_000)
    first = trt_trace.dump()
    assert first == str(tmp_path / "flight.dump1.json")
    assert not path.exists()  # nothing written but the dumps
    events = load_strict(first)  # a complete JSON array
    check_trace(events)
    assert [c["args"]["engine"] for c in _calls(events)] == ["in_window"] * 3
    assert len(read_calls(first, lambda calls, info: None).partial) == 0
    start, end = _meta(events)
    assert start["flight"]["window_s"] == 0.6 and start["flight"]["dump"] == 1 and end["flight"]["calls"] == 3
    # The program goes on and so does the recorder: a second dump, numbered.
    for _ in range(2):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], new)
    second = trt_trace.dump()
    assert second == str(tmp_path / "flight.dump2.json")
    assert len(_calls(load_strict(second))) == 5
    trt_trace.stop()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["flight.dump1.json", "flight.dump2.json"]


def test_a_perfetto_dump_by_suffix(tmp_path):
    from trt_trace import standin

    engine = standin.make_engine("pf_flight")
    trt_trace.flight(30, str(tmp_path / "f.pftrace"))
    for _ in range(4):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    path = trt_trace.dump()
    trt_trace.stop()
    assert path.endswith("f.dump1.pftrace")
    check_pftrace(parse(path))
    summary = aggregate(load_events(path))
    assert summary.names == ["pf_flight"] and summary.stats[0][0] == 4


def test_memory_is_capped_and_the_oldest_calls_go_first(tmp_path):
    from trt_trace import standin

    engine = standin.make_engine("capped_flight")
    session = trt_trace.flight(3600, str(tmp_path / "cap.json"), max_bytes=40 * 400)  # 400 records

    def serve() -> None:
        for i in range(600):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
            if i % 100 == 99:
                session.drainer.drain_once()  # several batches, as a long run would make

    # On a thread of its own: a thread takes call ids in blocks of 1024 (csrc/hook/tracing_state.h), so a fresh
    # thread's 600 calls have consecutive ids. This test's thread may have made calls in earlier tests, and its
    # block could run out among these 600 (ids then jump to its next block: a suite run saw 976..981, then 8144..).
    thread = threading.Thread(target=serve)
    thread.start()
    thread.join()
    path = trt_trace.dump()
    trt_trace.stop()
    events = load_strict(path)
    calls = _calls(events)
    records = sum(1 for e in events if e.get("ph") == "X")
    assert 0 < records <= 400 and len(read_calls(path, lambda calls, info: None).partial) == 0
    ids = sorted(c["args"]["call_id"] for c in calls)
    assert len(ids) < 600 and ids[-1] == max(ids)
    # The newest calls stayed: the call ids of one thread increase, so the kept ones are the last.
    all_ids = list(range(ids[-1] - 599, ids[-1] + 1))
    assert ids == all_ids[-len(ids):]
    assert _meta(events)[-1]["flight"]["records_let_go"] > 0


def test_dump_without_a_flight_recorder_is_one_clear_error(tmp_path):
    with pytest.raises(trt_trace.TraceError, match="no flight recorder"):
        trt_trace.dump()
    with trt_trace.tracing(str(tmp_path / "t.json")), pytest.raises(trt_trace.TraceError, match="not a flight"):
        trt_trace.dump()
    with pytest.raises(trt_trace.TraceError, match="positive"):
        trt_trace.flight(0, str(tmp_path / "f.json"))


PROGRAM = TERMINAL_SIGNALS + """
import os, signal, sys, torch
from trt_trace import standin
e = standin.make_engine("served")
for _ in range(4):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
if sys.argv[1] == "signal":
    import time, trt_trace
    os.kill(os.getpid(), signal.SIGUSR1)  # the native handler asks the writer thread for a dump
    if signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL:  # trt_trace took it (not the program's own handler)
        t0 = time.monotonic()
        while trt_trace.active().flight.dumps == 0 and time.monotonic() < t0 + 30:
            time.sleep(0.01)  # the thread dumps at its next wake (a status read waits for the dump's end)
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    print("still running")
elif sys.argv[1] == "raise":
    raise RuntimeError("the model broke")
"""


def _run(mode: str, tmp_path, **env) -> subprocess.CompletedProcess:
    script = tmp_path / "serve.py"
    script.write_text(PROGRAM)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    return subprocess.run([sys.executable, str(script), mode], env={**base, **env}, capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)


def test_sigusr1_dumps_and_the_program_runs_on(tmp_path):
    proc = _run("signal", tmp_path, TRT_TRACE_FLIGHT="30", TRT_TRACE_OUT=str(tmp_path / "t.json"))
    assert proc.returncode == 0 and "still running" in proc.stdout, proc.stderr
    assert "flight recorder (SIGUSR1): last 30 s written to" in proc.stderr
    assert sorted(p.name for p in tmp_path.glob("t*.json")) == ["t.dump1.json"]  # no exit dump by default
    assert len(_calls(load_strict(tmp_path / "t.dump1.json"))) == 4


def test_an_unhandled_exception_dumps_and_still_reaches_the_user(tmp_path):
    proc = _run("raise", tmp_path, TRT_TRACE_FLIGHT="30", TRT_TRACE_OUT=str(tmp_path / "t.pftrace"))
    assert proc.returncode == 1 and "RuntimeError: the model broke" in proc.stderr
    assert "flight recorder (unhandled RuntimeError)" in proc.stderr
    assert aggregate(load_events(str(tmp_path / "t.dump1.pftrace"))).stats[0][0] == 4


def test_exit_dump_when_asked_and_a_default_name_without_trt_trace_out(tmp_path):
    proc = _run("exit", tmp_path, TRT_TRACE_FLIGHT="30", TRT_TRACE_FLIGHT_ON_EXIT="1")
    assert proc.returncode == 0, proc.stderr
    dumps = list(tmp_path.glob("trt_trace_flight_*.dump1.json"))
    assert len(dumps) == 1 and len(_calls(load_strict(dumps[0]))) == 4
    assert "flight recorder (exit)" in proc.stderr


def test_the_programs_own_sigusr1_handler_is_kept(tmp_path):
    code = (TERMINAL_SIGNALS
            + "import os, signal, time; hits = []; signal.signal(signal.SIGUSR1, lambda *a: hits.append(1))\n"
            + PROGRAM.removeprefix(TERMINAL_SIGNALS).replace('sys.argv[1] == "signal"', "True")
            + "\nprint('hits', len(hits))")
    proc = run_python(code.replace("import os, signal, sys, torch", "import sys, torch"),
                      {"TRT_TRACE_FLIGHT": "30", "TRT_TRACE_OUT": str(tmp_path / "t.json")})
    assert proc.returncode == 0 and "hits 1" in proc.stdout, proc.stderr
    assert not list(tmp_path.iterdir())


def test_bad_settings_are_one_line_and_the_cli_flag(tmp_path):
    proc = _run("exit", tmp_path, TRT_TRACE_FLIGHT="soon", TRT_TRACE_OUT=str(tmp_path / "t.json"))
    assert proc.returncode == 0
    assert "TRT_TRACE_FLIGHT='soon' is not a number of seconds" in proc.stderr
    assert (tmp_path / "t.json").exists()  # an ordinary trace instead
    script = tmp_path / "serve.py"
    cli = subprocess.run([*trt_trace_cli(), "run", "--flight", "20", "-o", str(tmp_path / "r.json"),
                          "--", sys.executable, str(script), "signal"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120)
    assert cli.returncode == 0 and "still running" in cli.stdout, cli.stderr
    assert (tmp_path / "r.dump1.json").exists() and not (tmp_path / "r.json").exists()
    cli = subprocess.run([*trt_trace_cli(), "run", "--flight", "-1", "--", "true"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert cli.returncode == 2 and "positive number of seconds" in cli.stderr


# The main thread makes its calls, says so, then keeps the GIL in a pure Python loop for HOLD_S (a switch interval
# of 1000 s: no other Python thread runs meanwhile). Prints the hold's bounds.
GIL_HOLDER = TERMINAL_SIGNALS + """
import sys, time, torch
from trt_trace import standin
e = standin.make_engine("gil_flight")
x = [torch.ones(4)]
for _ in range(int(sys.argv[1])):
    torch.ops.tensorrt.execute_engine(x, e)
sys.setswitchinterval(1000)
t0 = time.monotonic_ns()
print("holding", flush=True)
while time.monotonic_ns() < t0 + %d:
    pass
print(t0, time.monotonic_ns(), flush=True)
"""
HOLD_S = 4


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_sigusr1_dumps_every_call_while_the_main_thread_holds_the_gil(tmp_path, suffix):
    # The window is drained and the dump written on the native writer thread: while the program's thread keeps the
    # GIL, SIGUSR1's dump is on disk, whole, with every call of the window, and its line on stderr. A recorder that
    # needs Python (a Python drainer, a Python signal handler's dump thread) would write nothing until the hold ends.
    import signal
    import time

    calls = 2000
    script = tmp_path / "hold.py"
    script.write_text(GIL_HOLDER % (HOLD_S * 10**9))
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    out = tmp_path / f"t{suffix}"
    dump = tmp_path / f"t.dump1{suffix}"
    proc = Child([sys.executable, str(script), str(calls)], cwd=tmp_path, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True,
                 env={**base, "TRT_TRACE_FLIGHT": "60", "TRT_TRACE_OUT": str(out)})
    try:
        assert proc.stdout.readline().strip() == "holding"
        proc.send_signal(signal.SIGUSR1)
        seen_ns = 0  # when the dump was whole on disk
        while proc.poll() is None and not seen_ns:
            time.sleep(0.02)
            try:  # (a file the writer thread is still writing may not read yet)
                read = read_calls(str(dump), lambda part, info: None) if dump.exists() else None
            except Exception:
                read = None
            if read is not None and read.info.ended == "closed":
                assert read.calls == calls and len(read.partial) == 0
                seen_ns = time.monotonic_ns()
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    held_from, held_to = map(int, stdout.split())
    assert seen_ns and seen_ns < held_to, (seen_ns, held_from, held_to, stderr)  # while the GIL was still held
    assert f"flight recorder (SIGUSR1): last 60 s written to {dump} ({calls} calls)" in stderr, stderr
    assert not out.exists() and aggregate(load_events(str(dump))).stats[0][0] == calls
