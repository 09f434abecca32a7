"""The native writer thread (csrc/session): the same bytes as the Python writer for the same records,
whatever the batching, names, layers and size limit, in both formats (Chrome JSON and native Perfetto,
clocks pinned); and, in real processes, what it was built for: a busy package loop drained while it runs
(nothing dropped, the file growing), all but the last moments kept after SIGKILL, and one file per writer
when processes share a TRT_TRACE_OUT."""

from __future__ import annotations

import os
import platform
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson
import pytest
import torch
from conftest import Child, run_python
from trace_checks import check_trace, load_strict

from trt_trace.analysis.trace_summary import load_events
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.io.writers.perfetto_trace import metadata_annotations
from trt_trace.native import ops
from trt_trace.runtime.native_trace import process_head
from trt_trace.schema.records import RECORD_DTYPE

ODD_NAMES = ["", "plain", 'q"uo\\te', "ctl\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f end", "naïve ✓ 引擎 \u2028\u2029 😀",
             "</script>"]
LAYER_NAMES = ["conv1", 'la"yer\\2', "rel\x1fu ✓", "fc"]
PID = 31337


def random_records(seed: int, n_calls: int = 300) -> np.ndarray:
    """Calls of several engines, some overlapping (lanes past the first), with their phases, GPU spans with and
    without caller-stream waits, and layer records of profiled calls; in end order, as the rings hand them over."""
    rng = random.Random(seed)
    rows = []
    for call in range(1, n_calls + 1):
        engine = rng.randrange(1, len(ODD_NAMES))
        begin = 1_000_000 + call * 20_000 + rng.randrange(-60_000, 1_000)
        dur = rng.randrange(1_000, 50_000)
        flags = rng.choice((0, 0, 0, 1, 2, 4))
        device = rng.choice((0, 0, 1, 0xFFFF))
        rows.append((begin, begin + dur, call, engine, 7 + call % 3, 0, flags, device, 0))
        t = begin
        for phase in range(1, 5):
            step = dur // 5
            rows.append((t, t + step, call, engine, 7, phase, flags, device, 0))
            t += step
        if device != 0xFFFF and rng.random() < 0.7:
            g0 = begin + dur // 3
            if rng.random() < 0.4:  # the engine's own stream, the caller's wait around it
                rows.append((g0 - 200, g0 + dur + 300, call, engine, 7, 6, flags | 8, device, 5))
                rows.append((g0, g0 + dur, call, engine, 7, 5, flags | 8, device, 9))
            else:
                rows.append((g0, g0 + rng.randrange(500, 90_000), call, engine, 7, 5, flags, device, 3))
        if rng.random() < 0.1:  # profiled layer by layer
            t = begin
            for layer in range(rng.randrange(1, 4)):
                rows.append((t, t + 700, call, engine, 7, 10, 0, device, (layer + call) % len(LAYER_NAMES)))
                t += 700
    # Whole inferences (docs/inference.md) around some calls, on their own tracks: a generator of their own, so
    # that the calls above stay what they were.
    inf = random.Random(seed + 1000)
    for k in range(n_calls // 4):
        begin = 1_000_000 + k * 80_000 + inf.randrange(-5_000, 5_000)
        rows.append((begin, begin + inf.randrange(10_000, 120_000), n_calls + 1 + k, 0, inf.choice((7, 8, 9, 123456)),
                     11, inf.choice((0, 0, 1)), 0xFFFF, inf.choice((1, 2, 3))))
    out = np.array(rows, dtype=RECORD_DTYPE)
    return out[np.argsort(out["end_ns"], kind="stable")]


def python_trace(folder: Path, recs: np.ndarray, batch: int, max_bytes: int, split: bool,
                 flows: bool) -> tuple[dict[str, bytes], dict]:
    folder.mkdir()
    here = os.getcwd()
    os.chdir(folder)
    try:
        writer = ChromeJsonWriter("t.json", lambda: list(ODD_NAMES), max_bytes=max_bytes, split=split)
        writer._pid = PID
        writer._book._layer_names = lambda: list(LAYER_NAMES)
        writer.gpu_flows = flows
        writer.begin("prog ✓", {"tool": "trt_trace", "pid": PID, "argv": ["a\"b", "\x01"]})
        for i in range(0, len(recs), batch):
            writer.write(recs[i:i + batch])
        end = writer.end_record({"records_drained": len(recs), "dropped_events": 0})
        writer.finish({"records_drained": len(recs), "dropped_events": 0})
    finally:
        os.chdir(here)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}, end


def native_trace(folder: Path, recs: np.ndarray, batch: int, max_bytes: int, split: bool, flows: bool,
                 end: dict) -> tuple[dict[str, bytes], tuple]:
    folder.mkdir()
    here = os.getcwd()
    os.chdir(folder)
    try:
        head = process_head(PID, "prog ✓", {"tool": "trt_trace", "pid": PID, "argv": ["a\"b", "\x01"]})
        counts = ops.json_trace_from_records("t.json", torch.from_numpy(recs.view(np.uint8).copy()), batch, PID,
                                             flows, head, ODD_NAMES, LAYER_NAMES, max_bytes, split, orjson.dumps(end))
    finally:
        os.chdir(here)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}, counts


@pytest.mark.parametrize(("seed", "batch", "max_bytes", "split", "flows"), [
    (1, 7, 0, True, True), (2, 1, 0, True, False), (3, 64, 0, True, True), (4, 5000, 0, True, True),
    (5, 50, 20_000, True, True), (6, 13, 30_000, False, True), (7, 200, 10_000, True, False),
])
def test_the_native_writer_writes_the_python_writers_bytes(tmp_path, seed, batch, max_bytes, split, flows):
    recs = random_records(seed)
    expected, end = python_trace(tmp_path / "py", recs, batch, max_bytes, split, flows)
    written, (events, not_written, paths) = native_trace(tmp_path / "native", recs, batch, max_bytes, split, flows,
                                                         end)
    assert written.keys() == expected.keys()
    for name in expected:
        assert written[name] == expected[name], name
    assert (events, not_written, paths) == (end["records_written"], end["events_not_written"], end["files"])
    if max_bytes and split:
        assert len(paths) > 1  # the limit was reached: parts with their split end records
    for name in written:  # every part a whole JSON array, names as given (orjson's escaping)
        assert load_strict(tmp_path / "native" / name)
    names = {e["args"]["name"] for e in load_strict(tmp_path / "native" / "t.json") if e.get("name") == "thread_name"}
    assert any(ODD_NAMES[3] in n for n in names) or any(ODD_NAMES[4] in n for n in names)


# The Python writer's clock readings, pinned (time.clock_gettime_ns(clock) = CLOCK_NS + clock id, time.time_ns() =
# CLOCK_NS), and the native writer's clock snapshots pinned to the same (boottime, monotonic, realtime).
CLOCK_NS = 1_700_000_000_123_456_789
PINNED_CLOCKS = [CLOCK_NS + time.CLOCK_BOOTTIME, CLOCK_NS + time.CLOCK_MONOTONIC, CLOCK_NS]


def python_perfetto(folder: Path, recs: np.ndarray, batch: int, max_bytes: int, split: bool, flows: bool,
                    start: dict, end_metadata: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, bytes], dict]:
    folder.mkdir()
    with monkeypatch.context() as m:
        m.chdir(folder)
        m.setattr(time, "clock_gettime_ns", lambda clock: CLOCK_NS + int(clock))
        m.setattr(time, "time_ns", lambda: CLOCK_NS)
        writer = PerfettoTraceWriter("t.pftrace", lambda: list(ODD_NAMES), max_bytes=max_bytes, split=split)
        writer._pid = PID
        writer._book._layer_names = lambda: list(LAYER_NAMES)
        writer.gpu_flows = flows
        writer.begin("prog ✓ \udcff", start)
        for i in range(0, len(recs), batch):
            writer.write(recs[i:i + batch])
        end = writer.end_record(end_metadata)
        writer.finish(end_metadata)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}, end


def native_perfetto(folder: Path, recs: np.ndarray, batch: int, max_bytes: int, split: bool, flows: bool,
                    start: dict, end: dict, end_ns: int) -> tuple[dict[str, bytes], tuple]:
    from trt_trace.io.writers.perfetto_trace import _text, start_metadata

    folder.mkdir()
    here = os.getcwd()
    os.chdir(folder)
    try:  # what NativeTrace hands the writer thread (begin(), finish())
        start = start_metadata(start)
        counts = ops.perfetto_trace_from_records(
            "t.pftrace", torch.from_numpy(recs.view(np.uint8).copy()), batch, PID, flows, _text("prog ✓ \udcff"),
            metadata_annotations(start), int(start.get("monotonic_ns") or 0), ODD_NAMES, LAYER_NAMES, max_bytes,
            split, metadata_annotations(end), end_ns, PINNED_CLOCKS)
    finally:
        os.chdir(here)
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}, counts


@pytest.mark.parametrize(("seed", "batch", "max_bytes", "split", "flows", "stamped"), [
    (1, 7, 0, True, True, True), (2, 1, 0, True, False, True), (3, 64, 0, True, True, False),
    (4, 5000, 0, True, True, True), (5, 50, 8_000, True, True, True), (6, 13, 12_000, False, True, True),
    (7, 200, 4_000, True, False, False), (8, 100, 0, True, True, True),
])
def test_the_native_writer_writes_the_python_perfetto_writers_bytes(tmp_path, monkeypatch, seed, batch, max_bytes,
                                                                     split, flows, stamped):
    # Byte for byte, clock snapshots included (pinned on both sides): the same tracks, uuids, interned names,
    # slices, layer tracks, split parts with their end records, start and end metadata instants and stamps.
    # stamped=False: metadata without monotonic_ns (each side then reads the pinned clock). Seed 8: no records.
    recs = random_records(seed) if seed != 8 else random_records(1)[:0]
    start = {"tool": "trt_trace", "pid": PID, "argv": ["a\"b", "\x01", "\udcff"], "none": None, "big": 1 << 64,
             "clock_domain": "x", "nested": {"a": [1, 2.5, {"b": True}], "e": []}}
    end_metadata = {"records_drained": len(recs), "dropped_events": 0, "threads": [{"thread": 7, "dropped": 0}]}
    if stamped:
        start["monotonic_ns"] = 900_000
        end_metadata["monotonic_ns"] = 10**12
    expected, end = python_perfetto(tmp_path / "py", recs, batch, max_bytes, split, flows, start, end_metadata,
                                    monkeypatch)
    # NativeTrace hands over the end's monotonic_ns, 0 where it has none (the thread then reads the clock): the
    # Python writer read the pinned clock, so the native one is handed that reading.
    end_ns = end_metadata["monotonic_ns"] if stamped else CLOCK_NS + time.CLOCK_MONOTONIC
    written, (events, not_written, paths) = native_perfetto(tmp_path / "native", recs, batch, max_bytes, split,
                                                            flows, start, end, end_ns)
    assert written.keys() == expected.keys()
    for name in expected:
        assert written[name] == expected[name], name
    assert (events, not_written, paths) == (end["records_written"], end["events_not_written"], end["files"])
    if max_bytes and split:
        assert len(paths) > 1  # the limit was reached: parts with their split end records
    if max_bytes and not split:
        assert not_written > 0
    else:  # every record, the inferences included (docs/inference.md)
        assert events == len(recs)


# -- real processes ------------------------------------------------------------------------------------------

BUSY_LOOP = """
import os, sys, time, torch
from trt_trace.standin import model
package = model.package_model(model.demo_specs(6), torch.randn(8, 64))
runner = model.load_package(package)
x = torch.randn(8, 64)
seconds, counter = float(sys.argv[1]), sys.argv[2]
runner(x)  # warm
fd = os.open(counter, os.O_WRONLY | os.O_CREAT, 0o644)
print("start", flush=True)
end, n = time.monotonic() + seconds, 1
while time.monotonic() < end:
    runner(x)
    n += 1
    os.pwrite(fd, b"%12d" % n, 0)  # runner calls executed so far (the warm one included)
print("calls", n, flush=True)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")
           or k in ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")}
    env.update(extra)
    return env


def _load(path: Path) -> list[dict]:
    """Every event of the file: a JSON one read strictly (a whole array), a Perfetto one by the project's reader."""
    return load_strict(path) if path.suffix == ".json" else load_events(str(path))


SUFFIXES = pytest.mark.parametrize("suffix", [".json", ".pftrace"])


def _engine_calls(events: list[dict]) -> int:
    return sum(1 for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine")


def _end(events: list[dict]) -> dict | None:
    ends = [e["args"] for e in events if e.get("name") == "trt_trace_metadata" and "ended" in e.get("args", {})]
    return ends[-1] if ends else None


def _busy_loop_drained(tmp_path: Path, out: Path, seconds: int, on_cpu: int | None = None,
                       burners: int = 0) -> None:
    """BUSY_LOOP for `seconds` with TRT_TRACE_OUT=out (pinned to CPU `on_cpu` where given, with `burners` busy
    processes on that CPU once the loop begins), checked: at every half-second sample the file holds (in bytes)
    the calls made by the sample before, drops nothing, holds every call at the end, and the end line is true."""
    script = tmp_path / "serve.py"
    script.write_text(BUSY_LOOP)
    pin = (lambda: os.sched_setaffinity(0, {on_cpu})) if on_cpu is not None else None
    proc = Child([sys.executable, str(script), str(seconds), str(tmp_path / "n")], cwd=tmp_path,
                 env=_env(TRT_TRACE_OUT=str(out)), stdout=subprocess.PIPE, text=True, preexec_fn=pin)
    busy = []
    try:
        assert proc.stdout.readline().strip() == "start", proc.err_text()
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin) for _ in range(burners)]
        samples = []  # (runner calls so far, file size) every 0.5 s
        while proc.poll() is None:
            time.sleep(0.5)
            samples.append((int((tmp_path / "n").read_bytes() or b"0"), out.stat().st_size if out.exists() else 0))
        stdout, stderr = proc.communicate()
    finally:
        for b in busy:
            b.kill()
            b.wait()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    calls = int(stdout.split()[-1])
    # Half a second behind at most: by each sample the file holds the calls made by the one before (in bytes, at
    # the file's bytes per call, with 10% to spare). The writer thread drains every 50 ms.
    per_call = out.stat().st_size / calls
    running = [(a, b) for a, b in zip(samples[:-1], samples[1:], strict=True) if b[0] > a[0] and a[0] > 0]
    assert len(running) >= seconds and all(b[1] >= 0.9 * a[0] * per_call for a, b in running), (per_call, samples)
    events = _load(out)
    end = _end(events)
    assert end["dropped_events"] == 0 and "dropped" not in stderr, stderr
    assert _engine_calls(events) == 6 * calls  # every call in the file
    assert f"trace written to {out.name} ({end['records_written']} events)" in stderr or \
        f"trace written to {out} ({end['records_written']} events)" in stderr, stderr


@SUFFIXES
def test_a_busy_package_loop_is_drained_while_it_runs_and_drops_nothing(tmp_path, suffix):
    # Both formats are written by the native thread: a loop that holds the GIL between calls starves no drain.
    _busy_loop_drained(tmp_path, tmp_path / f"busy{suffix}", 6)


@SUFFIXES
def test_with_no_spare_cpu_the_writer_keeps_up(tmp_path, suffix):
    # The loop shares one CPU with four busy processes of normal priority: the writer thread, of normal priority
    # too, still drains every 50 ms, so the file stays within half a second of the loop and holds every call.
    # (A writer of lower priority, SCHED_IDLE, stood still for half a second and more here: BENCHMARKS.md, "A writer
    # in spare time, tried".)
    _busy_loop_drained(tmp_path, tmp_path / f"starved{suffix}", 4, on_cpu=min(os.sched_getaffinity(0)), burners=4)


# Starts a session (t.json in the working directory) from a thread of the scheduling WRITER_MODE names and prints the
# writer thread's: its policy, nice value and time slice (/proc's se.slice, where the kernel shows it), once the
# thread has begun.
WRITER_SCHED = """
import json, os, time
import trt_trace
from trt_trace.native import ops
mode, path = os.environ["WRITER_MODE"], "t.json"
if mode == "nice":
    os.nice(7)  # Linux: this thread's nice value, which the threads it starts inherit
elif mode in ("batch", "idle"):
    os.sched_setscheduler(0, os.SCHED_BATCH if mode == "batch" else os.SCHED_IDLE, os.sched_param(0))
trt_trace.start(path)
deadline = time.monotonic() + 10
while ops.writer_status()["wakes"] == 0 and time.monotonic() < deadline:  # the slice is asked for before a wake
    time.sleep(0.01)
tid = next(int(t) for t in os.listdir("/proc/self/task")
           if open(f"/proc/self/task/{t}/comm").read().strip() == "trt_trace-write")
slice_ns = None
for line in open(f"/proc/self/task/{tid}/sched"):
    if line.startswith("se.slice"):
        slice_ns = int(line.split(":")[1])
print(json.dumps({"policy": os.sched_getscheduler(tid), "nice": os.getpriority(os.PRIO_PROCESS, tid),
                  "starter_nice": os.getpriority(os.PRIO_PROCESS, 0), "slice_ns": slice_ns}))
trt_trace.stop()
"""
WRITER_SLICE_NS = 20_000_000  # csrc/session/writer_slice.h


def _kernel_takes_custom_slices() -> bool:
    """Linux 6.12 and later: a SCHED_OTHER thread's sched_runtime sets its EEVDF slice."""
    try:
        major, minor = (int(p) for p in platform.release().split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (6, 12)


@pytest.mark.parametrize("mode", ["normal", "nice", "batch", "idle"])
def test_the_writer_asks_for_a_long_slice_and_keeps_its_priority(tmp_path, mode):
    # The writer asks for a long time slice, so that serving threads woken beside it run first (BENCHMARKS.md, "The
    # writer's time slice"), and changes nothing else: the policy and nice value it inherits stay (a niced or batch
    # server's writer is not raised back), and an idle-policy writer is left as it is.
    out = run_python(WRITER_SCHED, env_extra={"WRITER_MODE": mode}, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    got = orjson.loads(out.stdout.strip().splitlines()[-1])
    policy = {"normal": os.SCHED_OTHER, "nice": os.SCHED_OTHER, "batch": os.SCHED_BATCH, "idle": os.SCHED_IDLE}[mode]
    assert got["policy"] == policy
    assert got["nice"] == got["starter_nice"]  # "nice": raised by 7 (to at most 19), and kept
    if got["slice_ns"] is not None and _kernel_takes_custom_slices():
        if mode == "idle":
            assert got["slice_ns"] != WRITER_SLICE_NS
        else:
            assert got["slice_ns"] == WRITER_SLICE_NS


# The main thread makes its calls and then keeps the GIL for HOLD_S: with a switch interval of 1000 s no other Python
# thread runs until it blocks, which it does not (a pure Python loop). argv: calls, flag file. Prints the hold's
# bounds. The hold ends early once the test has seen every call in the file (it sets the flag file's byte, read
# through a shared mapping: no system call, the GIL never released), not HOLD_S of a busy core later.
GIL_HOLDER = """
import mmap, os, sys, time, torch
from trt_trace import standin
e = standin.make_engine("gil_engine")
x = [torch.ones(4)]
seen = mmap.mmap(os.open(sys.argv[2], os.O_RDWR), 1)
sys.setswitchinterval(1000)
for _ in range(int(sys.argv[1])):
    torch.ops.tensorrt.execute_engine(x, e)
t0 = time.monotonic_ns()
while time.monotonic_ns() < t0 + %d and not seen[0]:
    pass
print(t0, time.monotonic_ns(), flush=True)
"""
HOLD_S = 4


@SUFFIXES
def test_every_call_reaches_the_file_while_the_gil_is_held(tmp_path, suffix):
    # The drain never waits for the GIL: while the program's thread keeps it (after its last call), the file
    # already holds every call. A drainer that needs the GIL (the Python drainer) writes the last calls only once
    # the hold ends.
    from trt_trace.io.readers.calls import read_calls

    out, calls = tmp_path / f"held{suffix}", 3000
    script = tmp_path / "hold.py"
    script.write_text(GIL_HOLDER % (HOLD_S * 10**9))
    flag = tmp_path / "seen"
    flag.write_bytes(b"\0")
    proc = Child([sys.executable, str(script), str(calls), str(flag)], cwd=tmp_path,
                 env=_env(TRT_TRACE_OUT=str(out)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen_ns = 0  # when the file first held every call
    while proc.poll() is None and not seen_ns:
        time.sleep(0.02)
        # (The file is made empty at the start; its first bytes come with the first drain.)
        if out.exists() and out.stat().st_size > 0 and read_calls(str(out), lambda part, info: None).calls == calls:
            seen_ns = time.monotonic_ns()
            # After seen_ns: the hold ends later than it, as a hold of HOLD_S would. Written in place: truncating
            # the file (write_bytes) would leave the child's mapping past its end for a moment (SIGBUS).
            fd = os.open(flag, os.O_WRONLY)
            try:
                os.pwrite(fd, b"\1", 0)
            finally:
                os.close(fd)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    held_from, held_to = map(int, stdout.split())
    assert seen_ns and seen_ns < held_to, (seen_ns, held_from, held_to)  # while the GIL was still held
    end = _end(_load(out))
    assert end["dropped_events"] == 0 and _engine_calls(_load(out)) == calls


@SUFFIXES
def test_after_sigkill_the_file_holds_all_but_the_last_moments(tmp_path, suffix):
    script = tmp_path / "serve.py"
    script.write_text(BUSY_LOOP)
    out = tmp_path / f"killed{suffix}"
    counter = tmp_path / "n"
    proc = Child([sys.executable, str(script), "60", str(counter)], cwd=tmp_path,
                 env=_env(TRT_TRACE_OUT=str(out)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 text=True)
    try:
        assert proc.stdout.readline().strip() == "start"
        time.sleep(4)
        before = int(counter.read_bytes() or b"0")
        time.sleep(1)
        rate = (int(counter.read_bytes()) - before) / 1.0  # runner calls per second
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
        proc.communicate()
    executed = int(counter.read_bytes())
    in_file = _engine_calls(load_events(str(out))) // 6
    missing_s = (executed - in_file) / rate
    # The writer wakes every 50 ms: what is missing is the last wake's worth, with room for a slow machine.
    assert 0 <= executed - in_file and missing_s < 0.25, (executed, in_file, rate)


TWO_WRITERS = """
import os, sys, time, torch
from trt_trace import standin
e = standin.make_engine("shared_" + sys.argv[1])
torch.ops.tensorrt.execute_engine([torch.ones(4)], e)  # the file is created (or found in use) now
open(sys.argv[1] + ".ready", "w").close()
while not all(os.path.exists(n + ".ready") for n in ("a", "b")):
    time.sleep(0.01)
for _ in range(int(sys.argv[2]) - 1):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
time.sleep(0.3)  # both still running, both files open
"""


@SUFFIXES
def test_two_processes_on_one_path_write_one_file_each(tmp_path, suffix):
    script = tmp_path / "two.py"
    script.write_text(TWO_WRITERS)
    procs = [Child([sys.executable, str(script), name, "400"], cwd=tmp_path,
                   env=_env(TRT_TRACE_OUT=f"same{suffix}"), stderr=subprocess.PIPE, text=True)
             for name in ("a", "b")]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    files = sorted(p.name for p in tmp_path.glob(f"same*{suffix}"))
    assert len(files) == 2 and f"same{suffix}" in files, files
    for name in files:
        events = _load(tmp_path / name)  # whole: one writer each
        check_trace(events)
        assert _engine_calls(events) == 400
        assert _end(events)["ended"] == "closed"
    lines = [ln for err in errs for ln in err.splitlines() if "trace written to" in ln]
    assert len(lines) == 2
    other = next(f for f in files if f != f"same{suffix}")
    pid = other.split(".")[1]
    assert any(ln.startswith(f"trt_trace: trace written to {other} (") and
               f"same{suffix} was in use by another process" in ln for ln in lines), lines
    assert any(ln.startswith(f"trt_trace: trace written to same{suffix} (") and "in use" not in ln for ln in lines)
    assert pid in {str(p.pid) for p in procs}


SPAWN_POOL = """
import multiprocessing as mp, os, sys, torch
from trt_trace import standin

def calls(n):
    e = standin.make_engine("pool_engine")
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    return os.getpid(), n

if __name__ == "__main__":
    calls(50)  # the parent's own calls: it holds pool.json from here on
    pool = mp.get_context("spawn").Pool(2)
    done = pool.map(calls, [100] * 4)
    pool.close()
    pool.join()
    print(" ".join(f"{pid}:{n}" for pid, n in done))
"""


@SUFFIXES
def test_a_spawn_pool_without_pid_never_shares_a_file(tmp_path, suffix):
    script = tmp_path / "pool.py"
    script.write_text(SPAWN_POOL)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(TRT_TRACE_OUT=f"pool{suffix}"),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    per_worker: dict[str, int] = {}
    for item in proc.stdout.split():
        pid, n = item.split(":")
        per_worker[pid] = per_worker.get(pid, 0) + int(n)
    files = sorted(p.name for p in tmp_path.glob(f"pool*{suffix}"))
    assert files == sorted([f"pool{suffix}"] + [f"pool.{pid}{suffix}" for pid in per_worker]), (files, proc.stderr)
    total = 0
    for name in files:
        events = _load(tmp_path / name)
        check_trace(events)
        assert _end(events)["ended"] == "closed"
        total += _engine_calls(events)
    assert total == 50 + 400  # every call in a whole file of its own process


STATUS_DURING_A_BLOCKED_DRAIN = """
import json, os, threading, time, torch, trt_trace
from trt_trace import standin
from trt_trace.native import ops
fifo = {fifo!r}
reader_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader that reads nothing yet: the pipe fills
engine = standin.make_engine("status_probe")
trt_trace.start(fifo)
for _ in range(5000):
    torch.ops.tensorrt.execute_engine([torch.ones(8)], engine)
deadline = time.monotonic() + 30
while ops.writer_status()["wakes"] == 0 and time.monotonic() < deadline:
    time.sleep(0.01)
time.sleep(0.3)  # the thread woke and took its batch: it is now blocked in write() on the full pipe
asked = {{}}
asker = threading.Thread(target=lambda: asked.setdefault("status", ops.writer_status()), daemon=True)
t0 = time.monotonic()
asker.start()
asker.join(3)
answered_s = time.monotonic() - t0 if "status" in asked else None
data = bytearray()
def read_all():
    os.set_blocking(reader_end, True)
    while chunk := os.read(reader_end, 1 << 16):
        data.extend(chunk)
reading = threading.Thread(target=read_all)
reading.start()
trt_trace.stop()
reading.join(30)
events = json.loads(bytes(data))
print(json.dumps({{"answered_s": answered_s,
                  "calls": sum(e.get("name") == "execute_engine" and e.get("ph") == "X" for e in events)}}))
"""


STATUS_DURING_A_LONG_DRAIN = """
import json, os, select, threading, time, torch, trt_trace
from trt_trace import standin
from trt_trace.native import ops
fifo = {fifo!r}
reader_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
engine = standin.make_engine("status_probe")
session = trt_trace.start(fifo, buffer_events=1 << 18)
with session.drainer.held():  # a backlog of several drains' batches, drained in one hold of the writer's lock
    total = ops.writer_status()["records_drained"] + 5 * {calls}  # read while nothing drains
    for _ in range({calls}):
        torch.ops.tensorrt.execute_engine([torch.ones(8)], engine)
seen = []  # records_drained as the status gives it while the pipe is read, 64 KiB at a time
data = bytearray()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    # Never a read that blocks: the last batch's status is published just after its last bytes are written, so a
    # reader that has them all may ask a moment too early, and then no more bytes come to wake a blocked read.
    if select.select([reader_end], [], [], 0.05)[0]:
        data.extend(os.read(reader_end, 1 << 16))
    drained = ops.writer_status()["records_drained"]
    if not seen or seen[-1] != drained:
        seen.append(drained)
    if drained >= total:
        break
os.set_blocking(reader_end, True)
reading = threading.Thread(target=lambda: [data.extend(c) for c in iter(lambda: os.read(reader_end, 1 << 16), b"")])
reading.start()
trt_trace.stop()
reading.join(30)
events = json.loads(bytes(data))
print(json.dumps({{"seen": seen, "total": total,
                  "calls": sum(e.get("name") == "execute_engine" and e.get("ph") == "X" for e in events)}}))
"""


def test_the_writers_status_moves_batch_by_batch_during_a_long_drain(tmp_path):
    # A busy loop keeps the rings from ever being empty, so the writer's drain loop can run for seconds in one
    # hold of its lock. The status read meanwhile (records drained: bench_serving's drain lag, the metrics)
    # must move with each batch, not jump once at the end. Here a backlog of 20,000 calls (100,000 records,
    # 7 batches of 16,384) drains into a pipe that the child reads at its own pace.
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    r = run_python(STATUS_DURING_A_LONG_DRAIN.format(fifo=str(fifo), calls=20000), timeout=120)
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout.splitlines()[-1])
    seen, total = out["seen"], out["total"]
    assert seen[-1] == total, out
    between = [v for v in seen if seen[0] < v < total]
    assert len(between) >= 3, out  # before: the first value, then the total (published only as the lock was left)
    assert out["calls"] == 20000


def test_the_writers_status_never_waits_for_a_batch_under_way(tmp_path):
    # A Python thread asking for the writer's status (session.records_drained, paths, ...) holds the GIL that
    # the serving threads need: it must not wait for the writer's batch, however long that batch takes. Here
    # the batch never ends by itself: the trace goes to a pipe nobody reads until the status has come back.
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    r = run_python(STATUS_DURING_A_BLOCKED_DRAIN.format(fifo=str(fifo)), timeout=60)  # before: it hung here
    assert r.returncode == 0, r.stderr
    out = orjson.loads(r.stdout.splitlines()[-1])
    assert out["answered_s"] is not None and out["answered_s"] < 2.0, out
    assert out["calls"] == 5000  # and the trace, read at last, is whole
