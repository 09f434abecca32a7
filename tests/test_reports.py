"""Every report says only what is there: the exit line gives the events in the file and what the size
limit left out, names every part of a split trace, tells a failed write from a written trace; every
file's end record says why it ended (closed, size limit, split, write failed), in both formats; the
flight recorder's line gives the window its dump really holds, for every trigger."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from trace_checks import check_trace, load_strict

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import load_events

CALLS = """
import os, sys, torch
from trt_trace import standin
e = standin.make_engine("reported_engine")
for _ in range(int(sys.argv[1])):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
"""


def run(code: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    script = tmp_path / "serve.py"
    script.write_text(code)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    return subprocess.run([sys.executable, str(script), *args], env={**base, **env}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


def trt_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("trt_trace: ")]


def metadata(events: list[dict]) -> list[dict]:
    return [e["args"] for e in events if e.get("ph") == "M" and e.get("name") == "trt_trace_metadata"]


def slices(events: list[dict]) -> int:
    return sum(1 for e in events if e.get("ph") == "X")


@pytest.mark.parametrize("suffix", ["json", "pftrace"])
def test_a_stop_at_the_size_limit_says_what_the_file_holds_and_what_it_left_out(tmp_path, suffix):
    out = f"t.{suffix}"
    proc = run(CALLS, tmp_path, "4000", TRT_TRACE_OUT=out, TRT_TRACE_MAX_MB="0.05", TRT_TRACE_ON_LIMIT="stop")
    assert proc.returncode == 0, proc.stderr
    events = load_strict(tmp_path / out) if suffix == "json" else load_events(str(tmp_path / out))
    written = slices(events)
    (line,) = trt_lines(proc.stderr)
    match = re.fullmatch(r"trt_trace: trace written to (\S+) \((\d+) events\); stopped at the size limit of 0.05 MiB "
                         r"\(TRT_TRACE_MAX_MB\): (\d+) more events not written \(TRT_TRACE_ON_LIMIT=split keeps "
                         r"them\); open it in ui\.perfetto\.dev", line)
    assert match, line
    assert match.group(1) == out and int(match.group(2)) == written and int(match.group(3)) == 4000 * 5 - written
    end = metadata(events)[-1]
    assert end["ended"] == "size limit" and end["events_not_written"] == 4000 * 5 - written
    assert end["records_written"] == written and end["limit_bytes"] == int(0.05 * 2**20)
    assert end["files"] == [out]


@pytest.mark.parametrize("suffix", ["json", "pftrace"])
def test_a_split_trace_names_every_part_and_each_part_says_where_it_goes_on(tmp_path, suffix):
    out = f"t.{suffix}"
    code = CALLS.replace("for _ in range", "import trt_trace\nfor i in range").replace(
        "[torch.ones(4)], e)", "[torch.ones(4)], e)\n    if i % 200 == 199: trt_trace.active().drainer.drain_once()")
    proc = run(code, tmp_path, "2000", TRT_TRACE_OUT=out, TRT_TRACE_MAX_MB="0.05")
    assert proc.returncode == 0, proc.stderr
    parts = sorted(tmp_path.glob(f"t*.{suffix}"), key=lambda p: (len(p.name), p.name))
    assert len(parts) >= 3
    names = [p.name for p in parts]
    (line,) = trt_lines(proc.stderr)
    expected = (f"trt_trace: trace written to {', '.join(names)} (10000 events in {len(parts)} files split at the "
                "size limit of 0.05 MiB; trt-trace merge joins them); open it in ui.perfetto.dev")
    assert line == expected
    total = 0
    for k, part in enumerate(parts):
        events = load_strict(part) if suffix == "json" else load_events(str(part))
        if suffix == "json":
            check_trace(events)
        end = metadata(events)[-1]
        total += slices(events)
        if k < len(parts) - 1:
            assert end == {"ended": "split", "next_part": names[k + 1], "part": k, "events": slices(events)}
        else:
            assert end["ended"] == "closed" and end["files"] == names and end["records_written"] == 10000
    assert total == 10000


def test_output_to_a_full_device_never_says_it_was_written(tmp_path):
    proc = run(CALLS, tmp_path, "50", TRT_TRACE_OUT="/dev/full")
    assert proc.returncode == 0, proc.stderr
    lines = trt_lines(proc.stderr)
    assert not any("trace written" in ln for ln in lines), lines
    if os.access("/dev", os.W_OK):  # as root: the device opens, every write fails
        assert any(ln.startswith("trt_trace: could not write the trace ([Errno 28] No space left on device)")
                   for ln in lines), lines
        assert lines[-1] == ("trt_trace: writing /dev/full failed (No space left on device) after 0 events; it has "
                             "no end record (readers take it as cut short); 250 events drained since are not in it")
    else:  # the start-up check finds the directory unwritable
        assert len(lines) == 1 and "cannot write into /dev" in lines[0] and "running untraced" in lines[0]


FILLS_UP = """
import os, resource, signal, sys, torch, trt_trace
from trt_trace import standin
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
e = standin.make_engine("filling_engine")
session = trt_trace.active()
for _ in range(20):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
session.drainer.drain_once()
size = os.path.getsize(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 8192, resource.RLIM_INFINITY))  # the disk is full from here
with session.drainer.held():  # one batch, far larger than the room left
    for _ in range(1000):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
"""


@pytest.mark.parametrize("suffix", ["json", "pftrace"])
def test_a_disk_that_fills_up_leaves_a_file_that_says_so_and_a_line_that_says_what_it_holds(tmp_path, suffix):
    out = f"t.{suffix}"
    proc = run(FILLS_UP, tmp_path, out, TRT_TRACE_OUT=out)
    assert proc.returncode == 0, proc.stderr
    lines = trt_lines(proc.stderr)
    assert lines[0].startswith("trt_trace: could not write the trace ([Errno 27] File too large)"), lines
    assert lines[-1] == (f"trt_trace: writing {out} failed (File too large) after 100 events; its end record says "
                         "so and it loads; 5000 events drained since are not in it")
    events = load_strict(tmp_path / out) if suffix == "json" else load_events(str(tmp_path / out))
    assert slices(events) == 100  # the 20 calls before the disk filled, whole
    end = metadata(events)[-1]
    assert end["ended"] == "write failed" and end["error"] == "File too large" and end["records_written"] == 100


FILLS_UP_THEN_GOES_ON = """
import os, resource, signal, sys, torch, trt_trace
from trt_trace import standin
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
e = standin.make_engine("still_serving")
session = trt_trace.active()
for _ in range(20):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
session.drainer.drain_once()
resource.setrlimit(resource.RLIMIT_FSIZE, (os.path.getsize(sys.argv[1]), resource.RLIM_INFINITY))  # full now
for _ in range(20):  # 20 drains after the failure, each after 100 calls (200 ring slots): 8 rings' worth in all
    for _ in range(100):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    session.drainer.drain_once()
"""


@pytest.mark.parametrize("suffix", ["json", "pftrace"])
def test_after_a_failed_write_every_later_event_is_counted_and_none_is_dropped(tmp_path, suffix):
    # The rings are still emptied after the file failed: the end line counts every event recorded after its last
    # whole batch, however many drains came after the failure, and no call is dropped into a full ring.
    out = f"t.{suffix}"
    proc = run(FILLS_UP_THEN_GOES_ON, tmp_path, out, TRT_TRACE_OUT=out, TRT_TRACE_BUFFER="256")
    assert proc.returncode == 0, proc.stderr
    lines = trt_lines(proc.stderr)
    assert lines[0].startswith("trt_trace: could not write the trace ([Errno 27] File too large)"), lines
    assert not any("dropped" in ln for ln in lines), lines
    assert lines[-1] == (f"trt_trace: writing {out} failed (File too large) after 100 events; it has no end record "
                         "(readers take it as cut short); 10000 events drained since are not in it"), lines
    events = load_events(str(tmp_path / out))
    assert slices(events) == 100


@pytest.mark.parametrize("suffix", ["json", "pftrace"])
def test_a_normal_end_says_closed(tmp_path, suffix):
    out = tmp_path / f"t.{suffix}"
    engine = standin.make_engine("closed_engine")
    with trt_trace.tracing(str(out)):
        for _ in range(3):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    events = load_strict(out) if suffix == "json" else load_events(str(out))
    end = metadata(events)[-1]
    assert end["ended"] == "closed" and end["records_written"] == slices(events) == 15
    assert end["events_not_written"] == 0 and "limit_bytes" not in end


def test_the_flight_recorder_says_the_window_its_dump_holds(tmp_path, capfd):
    engine = standin.make_engine("held_flight")
    session = trt_trace.flight(2, str(tmp_path / "f.json"), max_bytes=40 * 400)  # 400 records: 80 calls
    for i in range(600):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
        if i % 100 == 99:
            session.drainer.drain_once()
    path = trt_trace.dump()
    trt_trace.stop()
    events = load_strict(path)
    calls = [e for e in events if e.get("ph") == "X" and e.get("name") == "execute_engine"]
    flight = metadata(events)[-1]["flight"]
    assert flight["capped"] is True and 0 < flight["held_s"] < 2
    first = min(c["ts"] for c in calls)
    last = max(c["ts"] + c["dur"] for c in calls)
    assert flight["held_s"] * 1e6 >= last - first  # it covers its calls, and says it is less than asked
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "flight recorder" in ln]
    assert lines == [f"trt_trace: flight recorder (dump()): {flight['held_s']:.3g} s of the last 2 s written to "
                     f"{path} ({len(calls)} calls; the memory cap of 0.015 MiB let older calls go: "
                     "raise TRT_TRACE_FLIGHT_MAX_MB or flight(max_bytes=) for the whole window)"]


def test_an_uncapped_dump_says_the_window_asked_and_its_calls(tmp_path, capfd):
    engine = standin.make_engine("whole_flight")
    trt_trace.flight(30, str(tmp_path / "f.json"))
    for _ in range(7):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    path = trt_trace.dump()
    trt_trace.stop()
    flight = metadata(load_strict(path))[-1]["flight"]
    assert flight["capped"] is False and flight["held_s"] == 30 and flight["calls"] == 7
    err = capfd.readouterr().err
    assert err == f"trt_trace: flight recorder (dump()): last 30 s written to {path} (7 calls)\n"
