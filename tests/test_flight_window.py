"""The flight recorder's window (trt_trace/runtime/flight.py) on records made up here, to the record: what it
keeps by age and by memory, what a dump holds and says. The recorder end to end, with engines and
triggers: tests/test_flight_recorder.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from trt_trace.native import ops
from trt_trace.runtime.flight import Dump, FlightWindow, dump_path
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase

S = 1_000_000_000  # ns


def calls(first_id: int, begins_ns: list[int], length_ns: int = 1000) -> np.ndarray:
    """A batch as the drainer hands it over: per call its record and one phase (two records)."""
    rows = []
    for k, begin in enumerate(begins_ns):
        cid = first_id + k
        rows.append((begin, begin + length_ns, cid, 1, 7, Phase.CALL, 0, 0xFFFF, 0))
        rows.append((begin, begin + length_ns, cid, 1, 7, Phase.ENQUEUE, 0, 0xFFFF, 0))
    return np.array(rows, dtype=RECORD_DTYPE)


class StubWriter:
    """A dump's writer that keeps what it is given (and says it left `not_written` events out)."""

    made: list[StubWriter] = []

    def __init__(self, path: str, not_written: int = 0) -> None:
        self.path, self.paths, self.created, self.gpu_flows = path, [path], True, None
        self.events_not_written = not_written
        self.begun = self.written = self.finished = None
        StubWriter.made.append(self)

    def begin(self, process_name, metadata):  # noqa: ANN001
        self.begun = (process_name, metadata)

    def write(self, records):  # noqa: ANN001
        self.written = records.copy()

    def finish(self, end_metadata):  # noqa: ANN001
        self.finished = end_metadata

    def abandon(self) -> None:
        pass


@pytest.fixture
def clock(monkeypatch):
    """The window's clock, set by the test (ns)."""
    now = {"ns": 100 * S}
    monkeypatch.setattr(ops, "clock_now_ns", lambda: now["ns"])
    StubWriter.made = []
    return now


def window(seconds: float = 2.0, max_records: int = 1000, not_written: int = 0, **kwargs) -> FlightWindow:
    w = FlightWindow("f.json", lambda path: StubWriter(path, not_written), seconds, max_records * 40, **kwargs)
    w.begin("serve.py", {"tool": "trt_trace"})
    return w


def test_batches_older_than_the_window_go_and_one_ending_at_its_edge_stays(clock):
    w = window(seconds=2)
    w.write(calls(1, [90 * S]))            # ends long before the window
    w.write(calls(2, [98 * S - 1000]))     # ends exactly at the window's edge (now - 2 s)
    w.write(calls(3, [99 * S]))
    clock["ns"] = 100 * S
    w.write(calls(4, [100 * S - 10]))      # the write trims by age
    assert w.records_held == 6 and w.records_let_go == 0  # the first batch went (by age, not counted)
    kept = w.window()
    assert sorted(set(kept["call_id"].tolist())) == [3, 4]  # call 2 began before the window: not in it
    assert len(w.window(now_ns=99 * S + 500)) == 6  # an explicit clock: calls 2 (at the edge), 3, 4


def test_the_memory_cap_lets_the_oldest_go_exactly(clock):
    w = window(seconds=3600, max_records=6)
    w.write(calls(1, [99 * S, 99 * S + 10]))   # 4 records
    w.write(calls(3, [99 * S + 20]))           # 6: exactly the cap, nothing goes
    assert (w.records_held, w.records_let_go) == (6, 0)
    w.write(calls(4, [99 * S + 30, 99 * S + 40]))  # 10: the first batch (4) goes
    assert (w.records_held, w.records_let_go) == (6, 4)
    w.write(calls(6, [99 * S + 50, 99 * S + 60, 99 * S + 70, 99 * S + 80]))  # one batch larger than the cap
    assert (w.records_held, w.records_let_go) == (6, 12)  # 4 before, the two older batches (6), 2 of its own 8
    assert w.window()["call_id"].tolist() == [7, 7, 8, 8, 9, 9]  # the newest, whole calls


def test_a_one_record_batch_is_kept_and_an_empty_window_is_empty(clock):
    w = window()
    assert len(w.window(now_ns=1000)) == 0  # nothing written: no record, whatever the clock
    w.write(calls(1, [99 * S])[:1])  # a batch of one record: a call whose phase comes in the next
    assert w.records_held == 1 and w.window()["call_id"].tolist() == [1]


def test_a_dump_holds_the_calls_that_began_in_the_window_and_says_so(clock):
    w = window(seconds=2)
    assert not w.created and w.last_dump is None
    w.write(calls(1, [97 * S, 98 * S, 99 * S]))
    clock["ns"] = 100 * S
    done = w.dump({"end": 1}, "dump()")
    (writer,) = StubWriter.made
    assert writer.path == dump_path("f.json", 1) == "f.dump1.json" and w.created and w.paths == ["f.dump1.json"]
    assert sorted(set(writer.written["call_id"].tolist())) == [2, 3]  # 98 s is the window's first ns
    flight = {"window_s": 2.0, "held_s": 2.0, "capped": False, "dump": 1, "trigger": "dump()", "calls": 2,
              "records_let_go": 0, "max_records": 1000}
    assert writer.begun == ("serve.py", {"tool": "trt_trace", "flight": flight})
    assert writer.finished == {"end": 1, "flight": flight}
    assert writer.gpu_flows is True  # the session's choice, passed on
    assert done == Dump("f.dump1.json", "dump()", 2, 2.0, 2.0, False, 1000 * 40) and w.last_dump == done
    with pytest.raises(dataclasses.FrozenInstanceError):
        done.calls = 3  # type: ignore[misc]
    assert done.line() == "flight recorder (dump()): last 2 s written to f.dump1.json (2 calls)"


def test_a_capped_dump_says_the_window_it_holds(clock):
    w = window(seconds=10, max_records=4)
    w.write(calls(1, [95 * S, 96 * S]))
    w.write(calls(3, [97 * S + 123_456_789, 98 * S]))  # the cap lets calls 1 and 2 go
    clock["ns"] = 100 * S
    done = w.dump({}, "SIGUSR1")
    assert done.capped and done.calls == 2 and done.held_s == 2.876543  # rounded once, to the µs
    assert StubWriter.made[0].finished["flight"]["held_s"] == done.held_s  # the line and the file agree
    assert done.line() == ("flight recorder (SIGUSR1): 2.88 s of the last 10 s written to f.dump1.json (2 calls; the "
                           "memory cap of 0.000153 MiB let older calls go: raise TRT_TRACE_FLIGHT_MAX_MB or "
                           "flight(max_bytes=) for the whole window)")


def test_a_cap_that_let_go_only_calls_before_the_window_is_no_cut(clock):
    w = window(seconds=2, max_records=2)
    w.write(calls(1, [90 * S]))   # let go by the cap, but long out of the window anyway
    w.write(calls(2, [99 * S]))
    clock["ns"] = 100 * S
    done = w.dump({}, "dump()")
    assert not done.capped and done.held_s == 2.0 and w.records_let_go == 0  # aged out first, not capped


def test_the_cap_at_the_windows_very_edge_and_a_capped_window_with_no_call(clock):
    w = window(seconds=2, max_records=2)
    w.write(calls(1, [98 * S - 1000]))  # ends exactly at the edge of the window at 100 s
    w.write(calls(2, [98 * S - 500]))   # the cap lets call 1 go
    w.write(calls(3, [101 * S])[:0])
    clock["ns"] = 100 * S
    only = w.dump({}, "dump()")
    assert only.capped and only.calls == 0 and only.held_s == 0.0  # cut at the edge: nothing of it left


def test_one_call_is_one_call_and_dumps_add_up(clock):
    w = window(not_written=3)
    w.write(calls(1, [99 * S]))
    first = w.dump({}, "dump()")
    second = w.dump({}, "exit")
    assert first.line().endswith("(1 call)") and w.paths == ["f.dump1.json", "f.dump2.json"]
    assert second.trigger == "exit" and w.events_not_written == 6 and w.dumps == 2
    w.write(calls(2, [99 * S + 1]))
    assert w.dump({}, "dump()").line().endswith("(2 calls)")


def test_finish_dumps_only_when_asked_and_abandon_lets_all_go(clock):
    quiet = window()
    quiet.write(calls(1, [99 * S]))
    quiet.finish({})
    assert not quiet.created and not quiet.on_exit
    asked = window(on_exit=True)
    asked.write(calls(1, [99 * S]))
    asked.finish({"end": 1})
    assert asked.on_exit and asked.paths == ["f.dump1.json"] and asked.last_dump.trigger == "exit"
    assert asked.finish_after_failure({}, "disk full") is False
    asked.abandon()
    assert asked.records_held == 0 and len(asked.window()) == 0
