"""The flight recorder's window (csrc/session/flight_window.h, kept by the native writer thread) on records
made up here, to the record: what it keeps by age and by memory, what a dump holds and says, and that a dump
is the file the Python writers make of the same records and metadata (the path dumps took before the window
moved to the native side). The recorder end to end, with engines and triggers: tests/test_flight_recorder.py."""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import orjson
import pytest
import torch
from trace_checks import load_strict

import trt_trace
from trt_trace.analysis.trace_summary import load_events
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.native import ops
from trt_trace.runtime import config, session
from trt_trace.runtime.flight import Dump
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase

S = 1_000_000_000  # ns
FLIGHT_KEYS = ["window_s", "held_s", "capped", "dump", "trigger", "calls", "records_let_go", "max_records"]


def calls(first_id: int, begins_ns: list[int], length_ns: int = 1000) -> np.ndarray:
    """A batch as a drain hands it over: per call its record and one phase (two records)."""
    rows = []
    for k, begin in enumerate(begins_ns):
        cid = first_id + k
        rows.append((begin, begin + length_ns, cid, 1, 7, Phase.CALL, 0, 0xFFFF, 0))
        rows.append((begin, begin + length_ns, cid, 1, 7, Phase.ENQUEUE, 0, 0xFFFF, 0))
    return np.array(rows, dtype=RECORD_DTYPE)


def add(batch: np.ndarray, now_ns: int = 100 * S) -> None:
    """The batch into the running recorder's window, as a drain at now_ns adds it."""
    ops.writer_flight_add(torch.frombuffer(bytearray(batch.tobytes()), dtype=torch.uint8), now_ns)


@pytest.fixture
def recorder(tmp_path):
    """A flight recorder with no engine calls of its own: its window holds what the test adds."""

    def start(seconds: float = 2.0, max_records: int = 1000, on_exit: bool = False, **settings) -> session.Session:
        base = config.from_keywords(str(tmp_path / "f.json"), {})
        return session.start_session(dataclasses.replace(
            base, flight_s=float(seconds), flight_max_bytes=max_records * 40, flight_on_exit=on_exit, **settings))

    yield start
    trt_trace.stop()


def dumped_calls(path: str) -> list[int]:
    """The call ids of a JSON dump's records, in file order."""
    return [e["args"]["call_id"] for e in load_strict(path) if e.get("ph") == "X"]


def metadata(path: str) -> list[dict]:
    return [e["args"] for e in load_strict(path) if e.get("ph") == "M" and e.get("name") == "trt_trace_metadata"]


def test_batches_older_than_the_window_go_and_one_ending_at_its_edge_stays(recorder):
    s = recorder(seconds=2)
    add(calls(1, [90 * S]))            # ends long before the window
    add(calls(2, [98 * S - 1000]))     # ends exactly at the window's edge (now - 2 s)
    add(calls(3, [99 * S]))
    add(calls(4, [100 * S - 10]))      # the add trims by age
    assert s.flight.records_held == 6 and s.flight.records_let_go == 0  # the first batch went (by age, not counted)
    kept = s.flight.dump("dump()", 100 * S)
    assert sorted(set(dumped_calls(kept.path))) == [3, 4]  # call 2 began before the window: not in it
    assert kept.calls == 2 and not kept.capped
    earlier = s.flight.dump("dump()", 99 * S + 500)  # an explicit clock: calls 2 (at the edge), 3, 4
    assert len(dumped_calls(earlier.path)) == 6 and earlier.calls == 3


def test_the_memory_cap_lets_the_oldest_go_exactly(recorder):
    s = recorder(seconds=3600, max_records=6)
    add(calls(1, [99 * S, 99 * S + 10]))   # 4 records
    add(calls(3, [99 * S + 20]))           # 6: exactly the cap, nothing goes
    assert (s.flight.records_held, s.flight.records_let_go) == (6, 0)
    add(calls(4, [99 * S + 30, 99 * S + 40]))  # 10: the first batch (4) goes
    assert (s.flight.records_held, s.flight.records_let_go) == (6, 4)
    add(calls(6, [99 * S + 50, 99 * S + 60, 99 * S + 70, 99 * S + 80]))  # one batch larger than the cap
    assert (s.flight.records_held, s.flight.records_let_go) == (6, 12)  # 4, 6 (two batches), 2 of its 8
    done = s.flight.dump("dump()", 100 * S)
    assert dumped_calls(done.path) == [7, 7, 8, 8, 9, 9]  # the newest, whole calls
    assert metadata(done.path)[-1]["flight"]["records_let_go"] == 12 and done.capped


def test_a_one_record_batch_is_kept_and_an_empty_window_is_an_empty_trace(recorder):
    s = recorder()
    empty = s.flight.dump("dump()", 1000)  # nothing added: no record, whatever the clock
    assert empty.calls == 0 and dumped_calls(empty.path) == [] and metadata(empty.path)[-1]["flight"]["calls"] == 0
    add(calls(1, [99 * S])[:1])  # a batch of one record: a call whose phase comes in the next
    assert s.flight.records_held == 1
    assert dumped_calls(s.flight.dump("dump()", 100 * S).path) == [1]


def test_a_dump_holds_the_calls_that_began_in_the_window_and_says_so(recorder, tmp_path):
    s = recorder(seconds=2)
    assert not s.writer.created and s.flight.last_dump is None
    add(calls(1, [97 * S, 98 * S, 99 * S]))
    done = s.flight.dump("dump()", 100 * S)
    path = str(tmp_path / "f.dump1.json")
    assert done.path == path and s.writer.created and s.writer.paths == [path]
    assert sorted(set(dumped_calls(path))) == [2, 3]  # 98 s is the window's first ns
    flight = {"window_s": 2.0, "held_s": 2.0, "capped": False, "dump": 1, "trigger": "dump()", "calls": 2,
              "records_let_go": 0, "max_records": 1000}
    start, end = metadata(path)
    assert start["tool"] == "trt_trace" and start["flight"] == flight and list(start)[-1] == "flight"
    assert end["flight"] == flight and end["monotonic_ns"] == 100 * S and end["records_written"] == 4
    assert (end["ended"], end["files"], end["events_not_written"]) == ("closed", [path], 0)
    assert done == Dump(path, "dump()", 2, 2.0, 2.0, False, 1000 * 40) and s.flight.last_dump == done
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.calls = 3  # type: ignore[misc]
    assert done.line() == f"flight recorder (dump()): last 2 s written to {path} (2 calls)"


def test_a_capped_dump_says_the_window_it_holds(recorder, tmp_path):
    s = recorder(seconds=10, max_records=4)
    add(calls(1, [95 * S, 96 * S]))
    add(calls(3, [97 * S + 123_456_789, 98 * S]))  # the cap lets calls 1 and 2 go
    done = s.flight.dump("SIGUSR1", 100 * S)
    assert done.capped and done.calls == 2 and done.held_s == 2.876543  # rounded once, to the µs
    assert metadata(done.path)[-1]["flight"]["held_s"] == done.held_s  # the line and the file agree
    assert done.line() == (f"flight recorder (SIGUSR1): 2.88 s of the last 10 s written to {done.path} (2 calls; the "
                           "memory cap of 0.000153 MiB let older calls go: raise TRT_TRACE_FLIGHT_MAX_MB or "
                           "flight(max_bytes=) for the whole window)")


def test_a_cap_that_let_go_only_calls_before_the_window_is_no_cut(recorder):
    s = recorder(seconds=2, max_records=2)
    add(calls(1, [90 * S]))   # let go by age first, long out of the window anyway
    add(calls(2, [99 * S]))
    done = s.flight.dump("dump()", 100 * S)
    assert not done.capped and done.held_s == 2.0 and s.flight.records_let_go == 0


def test_the_cap_at_the_windows_very_edge_and_a_capped_window_with_no_call(recorder):
    s = recorder(seconds=2, max_records=2)
    add(calls(1, [98 * S - 1000]))  # ends exactly at the edge of the window at 100 s
    add(calls(2, [98 * S - 500]))   # the cap lets call 1 go
    only = s.flight.dump("dump()", 100 * S)
    assert only.capped and only.calls == 0 and only.held_s == 0.0  # cut at the edge: nothing of it left


def test_one_call_is_one_call_and_dumps_add_up_past_the_size_limit(recorder, tmp_path):
    s = recorder(seconds=3600)
    add(calls(1, [99 * S]))
    assert s.flight.dump("dump()", 100 * S).line().endswith("(1 call)")
    add(calls(2, [99 * S + 1]))
    assert s.flight.dump("dump()", 100 * S).line().endswith("(2 calls)")
    trt_trace.stop()
    # A dump is written in pieces of 512 records (csrc/session/native_writer.cpp, kWriteRecords: here 256 calls
    # of two records each, cut at a call's start), so a file's size limit stops a large one
    # between them, as it stops a session's file: each dump counts what it left out, and the recorder adds up.
    n = 9000
    s = recorder(seconds=3600, max_records=2 * n, max_bytes=1, split=False)
    add(calls(1, [99 * S + k for k in range(n)]))
    first = s.flight.dump("dump()", 100 * S)
    second = s.flight.dump("exit", 100 * S)
    assert first.calls == second.calls == n and second.trigger == "exit"
    assert s.writer.paths == [str(tmp_path / "f.dump1.json"), str(tmp_path / "f.dump2.json")] and s.flight.dumps == 2
    piece = 512
    left_out = 2 * n - piece
    assert s.writer.events_not_written == 2 * left_out
    end = metadata(second.path)[-1]
    assert (end["ended"], end["events_not_written"], end["limit_bytes"]) == ("size limit", left_out, 1)
    assert len(dumped_calls(second.path)) == piece


def test_stop_dumps_only_when_asked(recorder, tmp_path):
    recorder()
    add(calls(1, [99 * S]))
    trt_trace.stop()
    assert not list(tmp_path.iterdir())
    s = recorder(on_exit=True, seconds=3600)
    add(calls(1, [ops.clock_now_ns() - S]))
    trt_trace.stop()
    assert s.writer.paths == [str(tmp_path / "f.dump1.json")] and s.flight.last_dump.trigger == "exit"
    assert dumped_calls(s.flight.last_dump.path) == [1, 1]


# -- the same file as the Python writers make of the same records (the path dumps took before) ----------------


def window_records(batches: list[np.ndarray], now_ns: int, seconds: float) -> np.ndarray:
    """The whole calls that began in the window, in drain order: what the Python window handed its writer."""
    records = np.concatenate(batches)
    cutoff = now_ns - int(seconds * 1e9)
    began = records[(records["phase"] == Phase.CALL) & (records["begin_ns"] >= cutoff)]
    return records[np.isin(records["call_id"], began["call_id"])]


def random_batches(seed: int, engines: int, now_ns: int) -> list[np.ndarray]:
    """Calls of a few engines on a few threads, some overlapping, each with phases, in drain-sized batches."""
    rng = random.Random(seed)
    rows, t = [], now_ns - 3 * S
    for cid in range(1, 400):
        t += rng.randrange(1000, 12_000_000)
        length = rng.randrange(2000, 30_000_000)
        engine, thread = rng.randrange(1, engines + 1), rng.choice([101, 102, 103])
        rows.append((t, t + length, cid, engine, thread, Phase.CALL, 0, 0xFFFF, 0))
        rows.append((t + 500, t + length - 500, cid, engine, thread, Phase.ENQUEUE, 0, 0xFFFF, 0))
    records = np.array(rows, dtype=RECORD_DTYPE)
    cuts = sorted(rng.sample(range(1, len(records)), 5))
    return np.split(records, cuts)


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_dump_is_the_python_writers_file_of_the_same_records(recorder, tmp_path, suffix):
    engines = 3  # named as the registry names them (or engine_N past it), by both writers alike
    now = ops.clock_now_ns()
    seconds = 1.6
    s = recorder(seconds=seconds, out=str(tmp_path / f"f{suffix}"), gpu=False)
    batches = random_batches(7, engines, now)
    for b in batches:
        add(b, now - 2 * S)  # nothing trimmed by age before the dump
    done = s.flight.dump("dump()", now)
    assert 0 < done.calls < 399 and not done.capped
    native = tmp_path / f"native{suffix}"
    os.rename(done.path, native)
    # The Python writer, given the same records and the metadata the dump wrote, into the same path.
    events = load_events(str(native))
    start, end = (e["args"] for e in events if e.get("name") == "trt_trace_metadata")
    name = start["program"] + ("" if start.get("rank") is None else f" rank {start['rank']}")  # as the session names it
    writer = (ChromeJsonWriter if suffix == ".json" else PerfettoTraceWriter)(done.path, ops.engine_names)
    writer.gpu_flows = False
    writer.begin(name, start)
    writer.write(window_records(batches, now, seconds))
    session_end = {k: v for k, v in end.items() if k not in ("ended", "files", "records_written", "events_not_written")}
    writer.finish(session_end)
    if suffix == ".json":
        assert native.read_bytes() == open(done.path, "rb").read()  # byte for byte
    else:  # the clock snapshots are read as each file is written: the same trace, read back
        assert load_events(str(native)) == load_events(done.path)


def random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 3 else 6)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice([0, -1, 1, rng.randrange(-(1 << 63), 1 << 63), rng.randrange(1 << 63, 1 << 64)])
    if kind in (2, 3):  # doubles of every magnitude, the layouts' edges among them
        return rng.choice([0.0, -0.0, 2.0, 0.6, 2.876543, 1e15, 1e16, 1.5e16, 1e-4, 1e-5, 1.25e-5, 1e-6, 5e-324,
                           1.7976931348623157e308, rng.uniform(-1e3, 1e3), 10 ** rng.uniform(-30, 30),
                           float(rng.randrange(1 << 53))])
    if kind == 4:
        return "".join(rng.choice(['a', '"', "\\", "\n", "\x01", "\x7f", "é", "引", "😀", "/"])
                       for _ in range(rng.randrange(6)))
    if kind == 5:
        return rng.randrange(-1000, 1000)
    if kind == 6:
        return [random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": random_value(rng, depth + 1) for i in range(rng.randrange(4))}


def test_the_native_metadata_json_is_orjsons():
    # A dump's metadata is written by the native side (format/json_value.h) as orjson writes the same values:
    # read back and written again, every orjson text comes out byte for byte.
    rng = random.Random(5)
    for _ in range(3000):
        text = orjson.dumps(random_value(rng)).decode()
        assert ops._op("_json_value_roundtrip")(text) == text
    for bad in ["", "{", "[1,]", '{"a" 1}', "01", "1.", "nul", '"\\x"', "[1] 2", '"\\ud800"']:
        assert ops._op("_json_value_roundtrip")(bad) is None, bad
