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
    LayerOptions,
    format_tables,
    layer_tables,
    layers_report,
    layers_text,
    notes_of,
    tables_csv,
    tables_json,
)
from trt_trace.io.readers import TraceFileError, Window
from trt_trace.schema.trace_format import CATEGORY, LAYER_CATEGORY, METADATA_EVENT

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


def _metadata(pid: int, args: dict[str, Any]) -> dict[str, Any]:
    return {"ph": "M", "name": METADATA_EVENT, "pid": pid, "tid": 0, "args": args}


def test_an_engine_the_report_names_without_a_profiled_call_has_no_figures():
    """The end metadata's layers report names two engines that have no layer slice: each gets a table
    of its own with every count 0 and every figure -1 (none), its note, and no cut-short or window line."""
    report = {"engines": [{"engine_id": 1, "engine": "e", "note": ""},
                          {"engine_id": 2, "engine": "never", "note": "not profiled"},
                          {"engine_id": 3, "engine": "quiet", "note": ""}]}
    events = call(1, 45.0) + call(2, 50.0, {"a": 30.0}) + [_metadata(7, {"ended": "closed", "layers": report})]
    c = LayerCalls.from_events(events)
    e, never, quiet = layer_tables(c)
    assert (e.engine, e.profiled_calls, e.gpu_calls) == ("e", 1, 1)
    doc = {t["engine"]: t for t in tables_json([e, never, quiet], c)["engines"]}
    for name, note in (("never", "not profiled"), ("quiet", "")):
        assert doc[name] == {"process": "pid 7", "engine": name, "engine_id": 3 if name == "quiet" else 2,
                             "profiled_calls": 0, "partial_calls": 0, "outside_window": 0, "layers": [],
                             "layers_left_out": 0, "layers_sum_p50_ns": -1, "gpu_p50_ns": -1, "gpu_calls": 0,
                             "layers_vs_gpu": None, "unprofiled_gpu_p50_ns": -1, "enqueue_p50_ns": -1, "note": note}
    assert format_tables([never, quiet]) == "never: no per-layer timing (not profiled)\n\nquiet: no per-layer timing\n"


def test_the_last_profiled_call_cut_short_or_outside_the_window_is_left_out():
    """The profiled call with the highest call id is the one left out (its key past every kept one):
    cut inside (no enqueue phase), or begun after the window's end."""
    cut = [e for e in call(3, None, {"a": 31.0}) if e["name"] != "enqueue"]
    (t,) = tables(call(1, None) + call(2, None, {"a": 30.0}) + cut)
    assert (t.profiled_calls, t.partial_calls, t.outside_window, t.rows[0].total_ns) == (1, 1, 0, 30_000)
    events = call(1, None) + call(2, None, {"a": 30.0}) + call(3, None, {"a": 31.0})
    (w,) = tables(events, Window(to_s=0.0015))  # calls 1 and 2 begin 0 and 1 ms after the first slice
    assert (w.profiled_calls, w.partial_calls, w.outside_window, w.rows[0].total_ns) == (1, 0, 1, 30_000)


def test_layers_report_cuts_names_at_72_columns_by_default(tmp_path):
    """`trt-trace layers` without --width: a name of 73 characters is cut to 72, one of 72 is whole."""
    long, exact = "L" * 36 + "X" + "R" * 36, "M" * 72
    path = tmp_path / "t.json"
    events = call(1, None) + call(2, None, {long: 30.0, exact: 20.0})
    path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(e) for e in events) + b"\n]\n")
    text, _ = layers_report(str(path))
    shown = [ln[2:].split("  ")[0] for ln in text.splitlines()[2:4]]
    assert shown == ["L" * 36 + "…" + "R" * 35, exact]


def test_an_engine_without_a_gpu_span_has_no_layers_to_gpu_ratio():
    """Profiled calls without a GPU span (a CPU engine, GPU timing off): no ratio in --json (not the
    layers' sum over the -1 that stands for no span), and the text gives the enqueue phase instead."""
    (t,) = tables(call(1, None) + call(2, None, {"a": 30.0}) + call(3, None, {"a": 40.0}))
    assert (t.sum_p50_ns, t.gpu_p50_ns, t.gpu_calls, t.enqueue_p50_ns) == (30_000, -1, 0, 70_000)
    assert t.layers_vs_gpu is None and tables_json([t])["engines"][0]["layers_vs_gpu"] is None
    assert format_tables([t]).splitlines()[3] == (
        "  layers' sum per call p50 30.0 us; no GPU span for these calls (a CPU engine, or GPU timing off); "
        "their enqueue phase p50 70.0 us")


def test_spans_and_phases_of_zero_ns_are_figures_not_missing():
    """A GPU span of 0 ns and an enqueue phase of 0 ns are measured lengths (only -1 is none), and a
    layers' sum of 0 ns prints as 0.0 us: no ratio over a 0-ns span (no division by zero), no '-'."""
    events = call(1, 0.0) + call(2, 0.0, {"a": 0.0})
    (t,) = tables(events)
    assert (t.profiled_calls, t.sum_p50_ns, t.gpu_p50_ns, t.gpu_calls, t.unprofiled_gpu_p50_ns) == (1, 0, 0, 1, 0)
    assert t.layers_vs_gpu is None
    assert format_tables([t]).splitlines()[3] == (
        "  layers' sum per call p50 0.0 us; GPU span of the same calls p50 0.0 us (layers / GPU -); unprofiled "
        "calls' GPU span p50 0.0 us")
    # A call of 30 µs whose enqueue phase (its last) is 0 ns long.
    no_enqueue = [dict(e, dur={"enqueue": 0.0, "execute_engine": 30.0}.get(e["name"], e["dur"]))
                  for e in call(2, None, {"a": 5.0})]
    (cpu,) = tables(call(1, None) + no_enqueue)
    assert (cpu.profiled_calls, cpu.gpu_p50_ns, cpu.enqueue_p50_ns) == (1, -1, 0)
    assert format_tables([cpu]).splitlines()[3].endswith("their enqueue phase p50 0.0 us")
    # Layers of 0 ns in all against a GPU span: a ratio of 0, not none.
    (zero,) = tables(call(1, None) + call(2, 50.0, {"a": 0.0}))
    assert (zero.sum_p50_ns, zero.gpu_p50_ns, zero.layers_vs_gpu) == (0, 50_000, 0.0)
    assert "  note: the layers cover only 0% of the GPU span" in format_tables([zero])
    (one_ns,) = tables(call(1, None) + call(2, 0.001, {"a": 0.0}))  # the shortest GPU span there is: 1 ns
    assert (one_ns.gpu_p50_ns, one_ns.layers_vs_gpu) == (1, 0.0)


def test_csv_and_the_demos_text_carry_the_end_notes(tmp_path):
    """layers_report as CSV: the end notes, then what --top left out, for stderr; layers_text (the
    demo's): the text with the end notes after it, and JSON alone."""
    path = tmp_path / "t.json"
    events = call(1, None) + call(2, None, {"a": 30.0, "b": 5.0})
    path.write_bytes(b"[\n" + b",\n".join(orjson.dumps(e) for e in events) + b"\n]\n")  # no end: cut short
    cut = f"{path} was cut short: no end record (process killed?)"
    text, notes = layers_report(str(path), options=LayerOptions(format="csv", top=1))
    assert text.splitlines()[1] == "pid 7,e,1,a,1,30000,85.7143,30000,30000.0,30000"  # share: 4 decimals
    assert notes == [cut, "e: 1 more layer not shown: --top 1"]
    plain = layers_text(str(path))
    assert plain.startswith("e: 1 profiled call, 2 layers\n") and plain.endswith(f"\n{cut}\n")
    assert layers_text(str(path), json=True) == layers_report(str(path), json=True)[0]


def test_a_layer_slice_without_a_length_is_a_layer_of_0_ns():
    events = call(1, None) + call(2, None, {"a": 30.0, "b": 5.0})
    del events[-1]["dur"]
    (t,) = tables(events)
    assert [(r.layer, r.total_ns) for r in t.rows] == [("a", 30_000), ("b", 0)] and t.profiled_calls == 1


def test_engines_are_listed_by_their_processs_place_in_the_file_then_by_engine_id():
    """pid 8 comes first in the file with engine 2, pid 7 after it with engine 1: pid 8's table first."""
    events = call(1, None, pid=8, engine="p8", engine_id=2) + call(2, None, {"a": 1.0}, pid=8, engine="p8", engine_id=2)
    events += call(11, None, pid=7, engine="p7") + call(12, None, {"a": 1.0}, pid=7, engine="p7")
    events += call(21, None, pid=7, engine="p7b", engine_id=3) + call(22, None, {"a": 1.0}, pid=7, engine="p7b",
                                                                          engine_id=3)
    assert [(t.process, t.engine) for t in tables(events)] == [("pid 8", "p8"), ("pid 7", "p7"), ("pid 7", "p7b")]


def test_the_text_tables_figures_are_in_ms_and_us():
    (t,) = tables(call(1, None) + call(2, None, {"a": 500.0, "b": 1.0}) + call(3, None, {"a": 600.0, "b": 1.0}))
    rows = [ln.split() for ln in format_tables([t]).splitlines()[2:4]]
    assert rows == [["a", "2", "1.100", "99.8", "500.0", "550.0", "600.0"],
                    ["b", "2", "0.002", "0.2", "1.0", "1.0", "1.0"]]


def test_a_layers_mean_is_given_to_three_decimals_in_csv_and_json():
    """A layer's mean over three calls of 30,000, 30,001 and 30,001 ns is not a whole number of ns: CSV
    and --json give it to three decimals (to the ns, 1/1000 of one)."""
    events = call(1, None, {"a": 30.0}) + call(2, None, {"a": 30.001}) + call(3, None, {"a": 30.001})
    (t,) = tables(events)
    ns = [30_000, 30_001, 30_001]
    want = round(sum(ns) / len(ns), 3)
    assert want != round(sum(ns) / len(ns), 4) and t.rows[0].mean_ns == sum(ns) / len(ns)
    assert tables_json([t])["engines"][0]["layers"][0]["mean_ns"] == want
    text, _ = tables_csv([t], LayerOptions(format="csv"))
    assert text.splitlines()[1].split(",")[8] == str(want)


def test_an_engine_the_report_names_without_an_engine_id_is_engine_0():
    """The end metadata's layers report: an engine without `engine_id` is engine 0, as a layer slice
    without one is; one whose `engine_id` is no id is left out."""
    report = {"engines": [{"engine": "unnumbered", "note": "not profiled"},
                          {"engine_id": "x", "engine": "bad id", "note": ""}]}
    events = call(1, 45.0) + call(2, 50.0, {"a": 30.0}) + [_metadata(7, {"ended": "closed", "layers": report})]
    e, unnumbered = layer_tables(LayerCalls.from_events(events))
    assert (e.engine_id, unnumbered.engine, unnumbered.engine_id, unnumbered.note) == (1, "unnumbered", 0,
                                                                                       "not profiled")
