"""trt_trace/io/readers/events.py, rule by rule: how an event dict (another tool's JSON line, metadata, what
the fast paths hand back) becomes a slice, and what makes it malformed. The readers' tests reach
these rules through whole files and compare the general path with the native one; mutants of the
module (docs/mutation-testing.md) showed edges no file there has: ids at their range's ends,
integral floats, times past 2**53 ns, flows, flags and devices one by one; and EventsReader
(in_memory.py) on a list longer than one of its chunks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from synthetic_traces import engine_calls, write_trace

from trt_trace.io.readers import EventsReader, Visitor, load_events, read_calls
from trt_trace.io.readers.columns import CONVERTED, FLOW_END, FLOW_START, SLICE_X
from trt_trace.io.readers.events import (
    MAX_NS,
    U32,
    U64,
    Malformed,
    integer,
    layer_slice,
    ns_of_us,
    slice_fields,
    to_slices,
)
from trt_trace.schema.trace_format import CATEGORY, FLOW_NAME, LAYER_CATEGORY


@pytest.mark.parametrize("value,top,default,want", [
    (0, U32, None, 0), (U32, U32, None, U32), (7.0, U32, None, 7), (None, U32, 5, 5), (0, 0, None, 0),
    (U64, U64, None, U64), (3, U32, 9, 3)])
def test_integers_in_range(value, top, default, want):
    got = integer(value, top, default)
    assert got == want and type(got) is int


@pytest.mark.parametrize("value,top", [(-1, U32), (U32 + 1, U32), (1, 0), (True, U32), (False, U32), (7.5, U32),
                                       ("7", U32), (None, U32), (float("nan"), U32), (U64 + 1, U64)])
def test_integers_out_of_range_or_of_another_type_are_malformed(value, top):
    with pytest.raises(Malformed):
        integer(value, top)


@pytest.mark.parametrize("us,ns", [
    (0, 0), (5, 5_000), (-5, -5_000), (1.5, 1_500), (0.001, 1), (-1.5, -1_500), (2.0004, 2_000), (2.0006, 2_001),
    (1_700_000_000_123_456.0, 1_700_000_000_123_456_000), (1_700_000_000_123.457, 1_700_000_000_123_457),
    (MAX_NS // 1000, MAX_NS // 1000 * 1000), (-(MAX_NS // 1000), -(MAX_NS // 1000) * 1000)])
def test_microseconds_to_nanoseconds(us, ns):
    """Exact to the ns for three decimals, also past 2**53 ns (a long uptime): the whole µs are split first."""
    got = ns_of_us(us)
    assert got == ns and type(got) is int


@pytest.mark.parametrize("us", [True, "1", None, [1], math.inf, -math.inf, math.nan, MAX_NS // 1000 + 1,
                                -(MAX_NS // 1000) - 1, float(MAX_NS // 1000 + 1)])
def test_times_that_are_no_number_or_out_of_range_are_malformed(us):
    with pytest.raises(Malformed):
        ns_of_us(us)


def _layer(**kw) -> dict:
    return {"ph": "X", "cat": LAYER_CATEGORY, "name": "conv", "ts": 1.0, "dur": 2.0, "pid": 4,
            "args": {"call_id": 9, "layer": "conv"}, **kw}


def test_layer_slices():
    assert layer_slice(_layer()) == ({"call_id": 9, "layer": "conv"}, 4, 9)
    no_pid = _layer()
    del no_pid["pid"]
    assert layer_slice(no_pid)[1] == 0
    assert layer_slice(_layer(ph="B")) is None and layer_slice(_layer(cat=CATEGORY)) is None
    for bad in (_layer(args=[1]), _layer(args={"layer": "conv"}), _layer(pid=-1), _layer(args={"call_id": U64 + 1})):
        with pytest.raises(Malformed):
            layer_slice(bad)


def _phase(name: str = "enqueue", **args) -> dict:
    return {"ph": "X", "cat": CATEGORY, "name": name, "ts": 10.0, "dur": 2.5, "pid": 3, "tid": 8,
            "args": {"call_id": 5, "engine_id": 2, "engine": "e", **args}}


def test_a_phase_slice_and_its_fields():
    assert slice_fields(_phase(thread=6, device=1, stream=77)) == (
        4, 10_000, 12_500, 5, 2, 6, 1, True, 77, 0, 3, 8, "e", SLICE_X)
    assert slice_fields(_phase("execute_engine"))[0] == 0 and slice_fields(_phase("gpu"))[0] == 5
    # No device: 0xFFFF and has_device False; the largest device is 0xFFFE.
    assert slice_fields(_phase())[6:8] == (0xFFFF, False)
    assert slice_fields(_phase(device=0xFFFE))[6:8] == (0xFFFE, True)
    with pytest.raises(Malformed):
        slice_fields(_phase(device=0xFFFF))
    # Each flag its own bit.
    for key, bit in (("error", 1), ("nested", 2), ("captured", 4), ("engine_stream", 8)):
        assert slice_fields(_phase(**{key: True}))[9] == bit
        assert slice_fields(_phase(**{key: False}))[9] == 0
    assert slice_fields(_phase(error=1, nested=1, captured=1, engine_stream=1))[9] == 15
    # The engine's name: its args' (as text), else engine_<id>.
    assert slice_fields(_phase(engine=None))[12] == "engine_2" and slice_fields(_phase(engine=3))[12] == "3"
    bare = {"ph": "X", "cat": CATEGORY, "name": "inputs", "args": {"call_id": 1}}
    assert slice_fields(bare) == (2, 0, 0, 1, 0, 0, 0xFFFF, False, 0, 0, 0, 0, "engine_0", SLICE_X)


def test_events_that_are_not_slices_of_a_call():
    assert slice_fields(_phase("not_a_phase")) is None
    assert slice_fields(dict(_phase(), cat="other")) is None and slice_fields(dict(_phase(), ph="B")) is None
    assert slice_fields(dict(_phase(), args={"engine": "e"})) is None  # no call id
    assert slice_fields({"ph": "X", "cat": CATEGORY, "name": "enqueue"}) is None  # no args at all
    assert slice_fields({"ph": "M", "name": "process_name"}) is None
    for bad in (dict(_phase(), args=[5]), _phase(call_id=-1), _phase(engine_id=U32 + 1), _phase(thread=-2),
                _phase(stream=1.5), dict(_phase(), pid="3"), dict(_phase(), tid=-1), dict(_phase(), ts="1"),
                dict(_phase(), dur=None)):
        with pytest.raises(Malformed):
            slice_fields(bad)


def test_launch_flows():
    flow = {"ph": "s", "cat": CATEGORY, "name": FLOW_NAME, "id": 11, "ts": 3.0, "pid": 2, "tid": 6}
    assert slice_fields(flow) == (0, 3_000, 3_000, 11, 0, 0, 0xFFFF, False, 0, 0, 2, 6, None, FLOW_START)
    assert slice_fields(dict(flow, ph="f"))[-1] == FLOW_END
    assert slice_fields({"ph": "f", "cat": CATEGORY, "name": FLOW_NAME, "id": 1}) == (
        0, 0, 0, 1, 0, 0, 0xFFFF, False, 0, 0, 0, 0, None, FLOW_END)
    for other in (dict(flow, name="other"), dict(flow, cat="x"), {k: v for k, v in flow.items() if k != "id"},
                  dict(flow, ph="t")):
        assert slice_fields(other) is None
    with pytest.raises(Malformed):
        slice_fields(dict(flow, id=-1))


def test_rows_become_converted_slices():
    rows = [slice_fields(_phase(device=1, stream=77, error=True)), slice_fields(_phase("workspace", call_id=6))]
    out = to_slices(rows)
    assert len(out) == 2 and (out["origin"] == CONVERTED).all() and (out["kind"] == SLICE_X).all()
    assert out["phase"].tolist() == [4, 1] and out["call_id"].tolist() == [5, 6]
    assert out["begin_ns"].tolist() == [10_000, 10_000] and out["end_ns"].tolist() == [12_500, 12_500]
    assert (out["engine_id"].tolist(), out["device"].tolist(), out["has_device"].tolist()) == ([2, 2], [1, 0xFFFF],
                                                                                                [1, 0])
    assert (out["stream"].tolist(), out["flags"].tolist(), out["pid"].tolist(), out["tid"].tolist()) == (
        [77, 0], [1, 0], [3, 3], [8, 8])
    assert len(to_slices([])) == 0 and to_slices([]).dtype == out.dtype
    assert np.array_equal(to_slices(rows[:1]), out[:1])


def test_an_engines_name_is_its_first_call_slices_not_a_phases_or_a_flows():
    """Read as dicts (the general path): engine 1's name comes from its first execute_engine slice, not
    from a phase before it nor from a later call; a flow names no engine."""
    events = [dict(_phase("inputs", engine="from_a_phase"), pid=7), dict(_phase("execute_engine"), pid=7),
              dict(_phase("execute_engine", call_id=6, engine="later"), pid=7),
              {"ph": "s", "cat": CATEGORY, "name": FLOW_NAME, "id": 5, "ts": 3.0, "pid": 7, "tid": 6}]
    events[1]["args"]["engine"] = "resnet"
    info = EventsReader(events).read(Visitor())
    assert info.process(7).engines == {2: "resnet"}


def test_a_list_longer_than_a_chunk_reads_as_the_file_it_came_from(tmp_path):
    """EventsReader hands its list to the JSON reader 2**16 events at a time: the calls of a list well
    past one chunk (14,000 calls of 5 slices) are the file's calls, each one once."""
    totals = 40_000 + 10 * np.arange(14_000)
    path = write_trace(tmp_path / "t.json", engine_calls(1, totals, 1), ["", "e"], end={})
    events = load_events(str(path))
    assert len(events) > 1 << 16

    def calls_of(source) -> list[tuple]:
        out: list[tuple] = []
        read_calls(source, lambda calls, info: out.extend(zip(calls["call_id"].tolist(), calls["ns"][:, 0].tolist(),
                                                               strict=True)))
        return sorted(out)

    from_file = calls_of(str(path))
    assert from_file == list(zip(range(1, 14_001), totals.tolist(), strict=True))
    assert calls_of(EventsReader(events)) == from_file
