"""The window of trt_trace/io/readers/calls.py on calls as the joiner hands them over, chunk by chunk:
--skip-first per process and engine (by begin time, across chunks), --from/--to as [from, to)
after the trace's origin, --engines by name (an unnamed engine is engine_<id>), and the line that
describes a window. The readers' and verbs' tests use windows on whole traces; mutants of the
module (docs/mutation-testing.md) asked for the edges one at a time."""

from __future__ import annotations

import numpy as np
import pytest
from test_mutants_layers_report import call

from trt_trace.io.readers import EventsReader, Window, read_calls
from trt_trace.io.readers.calls import CallsRead, _WindowFilter
from trt_trace.io.readers.columns import CALL_DTYPE, KEY_DTYPE
from trt_trace.io.readers.end_notes import empty_window_notes
from trt_trace.io.readers.trace_info import TraceInfo


def _calls(*rows: tuple[int, int, int, int]) -> np.ndarray:
    """(pid, engine id, call id, begin ns) per call."""
    out = np.zeros(len(rows), dtype=CALL_DTYPE)
    for i, (pid, engine, call_id, begin) in enumerate(rows):
        out[i]["pid"], out[i]["engine_id"], out[i]["call_id"], out[i]["begin_ns"] = pid, engine, call_id, begin
    return out


def _ids(calls: np.ndarray) -> list[int]:
    return sorted(calls["call_id"].tolist())


@pytest.mark.parametrize("window,line", [
    (Window(), ""), (Window(skip_first=2), "first 2 call(s) of each engine left out"),
    (Window(from_s=1.5), "calls from 1.5 s to end s"), (Window(to_s=2), "calls from start s to 2 s"),
    (Window(from_s=0, to_s=0.25), "calls from 0 s to 0.25 s"),
    (Window(engines=frozenset({"b", "a"})), "engines a, b"),
    (Window(skip_first=1, from_s=1, to_s=3, engines=frozenset({"e"})),
     "first 1 call(s) of each engine left out; calls from 1 s to 3 s; engines e")])
def test_a_window_is_described_in_one_line(window, line):
    assert window.describe() == line


@pytest.mark.parametrize("window,timed,active", [
    (Window(), False, False), (Window(skip_first=1), False, True), (Window(from_s=0), True, True),
    (Window(to_s=0), True, True), (Window(engines=frozenset()), False, True)])
def test_what_makes_a_window_timed_and_active(window, timed, active):
    assert (window.timed, window.active) == (timed, active)


def test_skip_first_leaves_each_engines_first_calls_by_begin_across_chunks():
    """Per process and engine, the first N calls by begin time (call id on a tie) go, whichever chunk
    they come in; calls of another engine or process are counted apart."""
    filt = _WindowFilter(Window(skip_first=2), None, TraceInfo("t", "json"))
    first = _calls((1, 1, 5, 500), (1, 1, 1, 100), (1, 2, 20, 100), (2, 1, 30, 100))
    assert _ids(filt(first)) == []  # every key has at most 2 calls so far: held
    second = _calls((1, 1, 3, 300), (1, 1, 2, 300), (1, 2, 21, 50), (1, 2, 22, 900), (2, 1, 31, 200),
                    (2, 1, 32, 50))
    # (1, 1): begins 100, 300 (id 2), 300 (id 3), 500 -> 1 and 2 go; (1, 2): 50, 100 go; (2, 1): 50, 100 go.
    assert _ids(filt(second)) == [3, 5, 22, 31]
    assert _ids(filt(_calls((1, 1, 9, 50)))) == [2]  # earlier than every held call: the latest held one goes out
    assert len(filt(_calls())) == 0


def test_skip_first_of_exactly_as_many_calls_as_there_are_keeps_none():
    filt = _WindowFilter(Window(skip_first=3), None, TraceInfo("t", "json"))
    assert _ids(filt(_calls((1, 1, 1, 10), (1, 1, 2, 20), (1, 1, 3, 30)))) == []
    assert _ids(filt(_calls((1, 1, 4, 40)))) == [4]
    one = _WindowFilter(Window(skip_first=1), None, TraceInfo("t", "json"))
    assert _ids(one(_calls((1, 1, 7, 70), (1, 1, 6, 60)))) == [7]


def test_a_timed_window_is_from_inclusive_to_exclusive_after_the_origin():
    filt = _WindowFilter(Window(from_s=1e-6, to_s=3e-6), 10_000, TraceInfo("t", "json"))
    assert (filt.lo, filt.hi) == (11_000, 13_000)
    calls = _calls((1, 1, 1, 10_999), (1, 1, 2, 11_000), (1, 1, 3, 12_999), (1, 1, 4, 13_000))
    assert _ids(filt(calls)) == [2, 3]
    open_end = _WindowFilter(Window(from_s=2e-6), None, TraceInfo("t", "json"))  # no origin: 0
    assert (open_end.lo, open_end.hi) == (2_000, None) and _ids(open_end(calls)) == [1, 2, 3, 4]
    untimed = _WindowFilter(Window(skip_first=1), 10_000, TraceInfo("t", "json"))
    assert (untimed.lo, untimed.hi) == (None, None)


def test_engines_are_chosen_by_name_an_unnamed_one_as_engine_id():
    info = TraceInfo("t", "json")
    info.process(1).engines[1] = "resnet"
    info.process(2).engines[1] = "bert"
    calls = _calls((1, 1, 1, 0), (2, 1, 2, 0), (1, 7, 3, 0), (2, 7, 4, 0))
    assert _ids(_WindowFilter(Window(engines=frozenset({"resnet"})), None, info)(calls)) == [1]
    assert _ids(_WindowFilter(Window(engines=frozenset({"engine_7", "bert"})), None, info)(calls)) == [2, 3, 4]
    assert _ids(_WindowFilter(Window(engines=frozenset()), None, info)(calls)) == []


def test_partial_calls_are_counted_per_process():
    partial = np.zeros(3, dtype=KEY_DTYPE)
    partial["pid"], partial["call_id"] = [4, 4, 9], [1, 2, 1]
    read = CallsRead(TraceInfo("t", "json"), partial)
    assert read.partial_by_pid() == {4: 2, 9: 1}
    assert CallsRead(TraceInfo("t", "json"), np.zeros(0, dtype=KEY_DTYPE)).partial_by_pid() == {}


def test_a_window_that_keeps_no_call_counts_the_calls_read_and_their_span():
    """Three whole calls (1, 2 and 3 ms after 0, 100 µs each), a window after them: none kept, all three
    counted as read, their span given, and the end note names it in the window's seconds."""
    events = call(1, None) + call(2, None) + call(3, None)
    read = read_calls(EventsReader(events), lambda calls, info: None, window=Window(from_s=10), origin_ns=1_000_000)
    assert (read.calls, read.kept, read.windowed) == (3, 0, True)
    assert read.calls_span_ns == (1_000_000, 3_100_000) and read.window_ns == (10_001_000_000, None)
    assert empty_window_notes(read) == ["<events>: no call in the window; the trace's 3 calls begin at 0.000 s and "
                                        "end by 0.002 s (--from/--to count from its first event)"]
    every = read_calls(EventsReader(events), lambda calls, info: None)
    assert (every.calls, every.kept, every.windowed, every.calls_span_ns) == (3, 3, False, (1_000_000, 3_100_000))
