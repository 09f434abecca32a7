"""`trt-trace layers` at the edges tests/test_layers_reading.py left open, found by mutants of
trt_trace/analysis/layers_report.py (docs/mutation-testing.md): medians of even counts, the text of calls cut
short or outside the window, long layer names, malformed layer slices, the note on the GPU span,
events without a pid or an engine id. Traces are event lists as the JSON writer writes them, read
through readers.EventsReader (LayerCalls.from_events), or files written by the real writer."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from trt_trace.analysis.layers_report import (
    LayerCalls,
    format_tables,
    layer_tables,
    layers_report,
    notes_of,
    tables_json,
)
from trt_trace.io.readers import TraceFileError, Window
from trt_trace.schema.trace_format import CATEGORY, LAYER_CATEGORY

PHASES = (("workspace", 10.0), ("inputs", 10.0), ("outputs", 10.0), ("enqueue", 70.0))


def call(call_id: int, gpu: float | None, layers: dict[str, float] | None = None, engine: str = "e",
         engine_id: int | None = 1, pid: int | None = 7) -> list[dict[str, Any]]:
    """One whole call (100 µs, its four phases), its GPU span (µs; None: none) and its layer slices."""
    args: dict[str, Any] = {"engine": engine, "call_id": call_id, "device": 0}
    if engine_id is not None:
        args["engine_id"] = engine_id
    where = {} if pid is None else {"pid": pid}
    begin = call_id * 1000.0
    out = [{"ph": "X", "cat": CATEGORY, "name": "execute_engine", "ts": begin, "dur": 100.0, "tid": 1000,
            "args": args, **where}]
    t = begin
    for name, dur in PHASES:
        out.append({"ph": "X", "cat": CATEGORY, "name": name, "ts": t, "dur": dur, "tid": 1000, "args": args, **where})
        t += dur
    if gpu is not None:
        out.append({"ph": "X", "cat": CATEGORY, "name": "gpu", "ts": begin + 10, "dur": gpu, "tid": 1500,
                    "args": dict(args, stream=7), **where})
    t = begin + 30
    for name, dur in (layers or {}).items():
        out.append({"ph": "X", "cat": LAYER_CATEGORY, "name": name, "ts": t, "dur": dur, "tid": 1950,
                    "args": dict(args, layer=name), **where})
        t += dur
    return out


def tables(events: list[dict[str, Any]], window: Window | None = None):
    return layer_tables(LayerCalls.from_events(events, window))


def test_medians_of_even_counts_are_the_lower_middle_value():
    """Four profiled and four other calls: every p50 is the 2nd of 4 (no interpolation, not the 3rd)."""
    events = []
    for k, (gpu, a) in enumerate(((50.0, 30.0), (52.0, 33.0), (51.0, 31.0), (53.0, 32.0))):
        events += call(2 + k, gpu, {"a": a, "b": 10.0})
    for k, gpu in enumerate((45.0, 48.0, 46.0, 47.0)):
        events += call(10 + k, gpu)
    (t,) = tables(events)
    assert t.profiled_calls == 4 and [(r.layer, r.p50_ns) for r in t.rows] == [("a", 31_000), ("b", 10_000)]
    assert (t.sum_p50_ns, t.gpu_p50_ns, t.unprofiled_gpu_p50_ns) == (41_000, 51_000, 46_000)


def test_calls_cut_short_and_outside_the_window_are_said_in_the_text():
    """`e`: one whole profiled call, two with a layer missing; `f`: its one profiled call is its first,
    which --skip-first 1 leaves out; `g`: its one profiled call lacks a layer and no call is whole."""
    events = call(1, None) + call(2, None, {"a": 30.0, "b": 5.0}) + call(3, None, {"a": 30.0})
    events += call(4, None, {"a": 31.0})
    events += call(10, None, {"x": 20.0}, engine="f", engine_id=2) + call(11, None, engine="f", engine_id=2)
    events += call(20, None, engine="g", engine_id=3) + call(21, None, {"y": 20.0, "z": 1.0}, engine="g", engine_id=3)
    events += call(22, None, {"y": 20.0}, engine="g", engine_id=3)
    e, f, g = tables(events, Window(skip_first=1))
    assert (e.profiled_calls, e.partial_calls, e.outside_window) == (1, 2, 0)
    assert (f.profiled_calls, f.partial_calls, f.outside_window) == (0, 0, 1)
    assert (g.profiled_calls, g.partial_calls, g.outside_window) == (1, 1, 0)
    text = format_tables([e, f, g]).splitlines()
    assert text[0] == "e: 1 profiled call, 2 layers"
    assert "  cut short: 2 profiled calls with layers missing left out" in text
    assert "f: no per-layer timing (no whole profiled call in the window)" in text
    assert "  cut short: 1 profiled call with layers missing left out" in text
    # The same engine without a window: its one profiled call counts.
    (_, f_all, _) = tables(events)
    assert (f_all.profiled_calls, f_all.outside_window) == (1, 0)
    # An engine whose only profiled call lacks a layer: no table, and why.
    h = call(30, None, engine="h", engine_id=4) + call(31, None, {"u": 1.0, "v": 1.0}, engine="h", engine_id=4)
    h += call(32, None, {"u": 1.0}, engine="h", engine_id=4)
    (only,) = tables(h, Window(skip_first=2))
    assert (only.profiled_calls, only.rows, only.partial_calls, only.outside_window) == (0, [], 1, 1)
    assert format_tables([only]).splitlines()[:2] == [
        "h: no per-layer timing (no whole profiled call in the window)",
        "  cut short: 1 profiled call with layers missing left out"]


def test_a_long_layer_name_is_cut_in_its_middle():
    long = "L" * 40 + "X" + "R" * 59  # 100 characters
    exact = "M" * 72
    (t,) = tables(call(1, None) + call(2, None, {long: 30.0, exact: 20.0, "short": 1.0}))
    lines = format_tables([t]).splitlines()
    assert lines[1] == "  " + "layer".ljust(72) + "   calls   total ms  share %     p50 us    mean us     max us"
    shown = [ln[2:74] for ln in lines[2:5]]
    assert shown == ["L" * 36 + "…" + "R" * 35, exact, "short".ljust(72)]
    assert format_tables([t], width=200).splitlines()[2][2:102] == long


def test_malformed_layer_slices_are_left_out_counted_and_said(tmp_path):
    events = call(1, None) + call(2, None, {"a": 30.0, "b": 5.0}) + call(3, None, {"a": 30.0, "b": 0.0})
    bad_id = call(4, None, {"a": 30.0})
    bad_id[-1]["args"]["call_id"] = "4"
    negative = call(5, None, {"a": -1.0})
    c = LayerCalls.from_events(events + bad_id + negative)
    (t,) = layer_tables(c)
    # The layer of 0 ns is a layer: call 3 is whole, with both of its layers.
    assert c.malformed == 2 and (t.profiled_calls, t.partial_calls) == (2, 0)
    assert [(r.layer, r.calls, r.total_ns) for r in t.rows] == [("a", 2, 60_000), ("b", 2, 5_000)]
    assert tables_json([t], c)["malformed_events"] == 2
    assert notes_of(c)[-1] == ("<events>: 2 malformed layer slices left out (a field of the wrong type or out "
                               "of range)")
    one = LayerCalls.from_events(events + bad_id)
    assert notes_of(one)[-1].startswith("<events>: 1 malformed layer slice left out")
    clean = LayerCalls.from_events(events)
    assert "malformed_events" not in tables_json(layer_tables(clean), clean)
    assert not [n for n in notes_of(clean) if "malformed" in n]  # (an event list has no end: "cut short")
    # From a file: the same count in --json, the note after the text.
    path = tmp_path / "t.json"
    path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(e) for e in events + bad_id + negative) + b"\n]\n")
    text, notes = layers_report(str(path), json=True)
    assert orjson.loads(text)["malformed_events"] == 2
    assert notes[-1] == f"{path}: 2 malformed layer slices left out (a field of the wrong type or out of range)"


def test_the_note_on_the_gpu_span_only_beyond_a_tenth():
    def lines(gpu: float) -> list[str]:
        (t,) = tables(call(1, None) + call(2, gpu, {"a": 40.0, "b": 10.0}))
        return format_tables([t]).splitlines()

    close = lines(52.0)  # layers 50 of 52: 0.96
    assert "(layers / GPU 0.96)" in close[4] and not any(ln.startswith("  note:") for ln in close)
    over = lines(40.0)  # 1.25
    assert "  note: the layers add up to 125% of the GPU span: GPU work outside TensorRT's layers, or " \
           "profiling that changes it" in over
    assert "  note: the layers cover only 50% of the GPU span" in lines(100.0)[5]


def test_events_without_a_pid_or_an_engine_id_are_process_0_and_engine_0():
    """Another tool's JSON may leave out pid and engine_id: the layer slices join their calls as the
    call slices read them (both 0)."""
    events = call(1, 45.0, pid=None, engine_id=None) + call(2, 50.0, {"a": 30.0}, pid=None, engine_id=None)
    events += call(3, 47.0, pid=None, engine_id=None)
    (t,) = tables(events)
    assert (t.process, t.engine, t.engine_id, t.profiled_calls) == ("pid 0", "e", 0, 1)
    assert (t.gpu_p50_ns, t.unprofiled_gpu_p50_ns) == (50_000, 45_000)


def test_no_layer_slices_is_one_error_line(tmp_path):
    path = tmp_path / "plain.json"
    path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(e) for e in call(1, 45.0) + call(2, 46.0)) + b"\n]\n")
    with pytest.raises(TraceFileError, match="has no per-layer timing"):
        layers_report(str(path))


def test_the_notes_count_the_calls_cut_inside():
    """A call without its enqueue phase (cut inside) is left out and counted in the end note, with the
    profiled calls' tables beside it; a trace with no layer slices keeps its end in --json too."""
    cut = [e for e in call(4, None) if e["name"] != "enqueue"]
    c = LayerCalls.from_events(call(1, None) + call(2, None, {"a": 30.0}) + call(3, None, {"a": 31.0}) + cut)
    (t,) = layer_tables(c)
    assert t.profiled_calls == 2
    assert notes_of(c) == ["<events> was cut short: no end record (process killed?); 1 partial call left out"]
    plain = LayerCalls.from_events(call(1, None) + call(2, None))
    assert tables_json(layer_tables(plain), plain) == {"engines": [], "ended": "cut short"}
    assert notes_of(plain) == ["<events> was cut short: no end record (process killed?)"]


def test_two_processes_name_their_process_in_the_text():
    events = call(1, None, pid=7) + call(2, None, {"a": 30.0}, pid=7)
    events += call(11, None, pid=8) + call(12, None, {"a": 20.0}, pid=8)
    text = format_tables(tables(events)).splitlines()
    heads = [ln for ln in text if ln and not ln.startswith("  ")]
    assert heads == ["pid 7: e: 1 profiled call, 1 layer", "pid 8: e: 1 profiled call, 1 layer"]
    (one,) = tables(events[: len(call(1, None)) * 2 + 1])
    assert format_tables([one]).splitlines()[0] == "e: 1 profiled call, 1 layer"
