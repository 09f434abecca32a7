"""A Chrome JSON trace re-encoded as a Perfetto trace (trt_trace/analysis/perfetto_view.py, `merge -o
*.pftrace`): what it cannot carry is counted and said, odd events never break it, and the real UI's trace
processor loads what it writes. (The merged traces themselves are compared with their JSON in the UI in
test_perfetto_ui.py and test_captures_cli.py.)"""

from __future__ import annotations

import json

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pftrace_checks import parse

from trt_trace.analysis.perfetto_view import convert
from trt_trace.captures.chrome_stream import CaptureError

BIG_TID = (1 << 31) + 7  # the JSON's lanes past 500: no thread id Perfetto can hold


def _events() -> list[dict]:
    return [
        {"ph": "M", "name": "process_name", "pid": 5, "tid": 0, "args": {"name": "rank 0 · serve.py"}},
        {"ph": "M", "name": "thread_name", "pid": 5, "tid": 1000, "args": {"name": "engine_a"}},
        {"ph": "M", "name": "thread_name", "pid": 5, "tid": BIG_TID, "args": {"name": "engine_a (501)"}},
        {"ph": "M", "name": "trt_trace_metadata", "pid": 5, "tid": 0, "args": {"tool": "trt_trace", "none": None}},
        {"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": 10.0, "dur": 5.0, "pid": 5, "tid": 1000,
         "args": {"call_id": 1, "engine": "engine_a", "list": [1, "two", None], "empty": {}}},
        {"ph": "X", "cat": "trt_trace", "name": "enqueue", "ts": 12.0, "dur": 3.0, "pid": 5, "tid": 1000,
         "args": {"call_id": 1}},
        {"ph": "s", "cat": "trt_trace", "name": "launch", "id": 1, "ts": 12.001, "pid": 5, "tid": 1000},
        {"ph": "X", "cat": "trt_trace", "name": "execute_engine", "ts": 20.0, "dur": 1.0, "pid": 5, "tid": BIG_TID,
         "args": {"call_id": 2}},
        {"ph": "s", "cat": "trt_trace", "name": "launch", "id": 9, "ts": 50.0, "pid": 5, "tid": 1000},  # no slice
        {"ph": "C", "name": "queue", "ts": 11.0, "pid": 5, "args": {"n": 3}},
        {"ph": "i", "name": "mark", "ts": 11.0, "pid": 5, "tid": 1000},
    ]


def test_what_a_view_cannot_carry_is_counted_and_said(tmp_path, perfetto_ui):
    src = tmp_path / "in.json"
    src.write_bytes(orjson.dumps(_events()))
    report = convert(str(src), str(tmp_path / "out.pftrace"))
    assert (report.slices, report.flows, report.unbound_flows, report.other_events) == (3, 1, 1, 2)
    assert report.notes("out.pftrace") == [
        "out.pftrace: 1 flow event(s) with no slice around them on their track left out of the Perfetto file",
        "out.pftrace: 2 event(s) of kinds a Perfetto view does not carry left out ('C' x1, 'i' x1)"]
    packets = parse(tmp_path / "out.pftrace")
    assert packets[0].track_descriptor.name == "trt_trace merged view"  # the mark trt_trace's readers refuse
    opened = perfetto_ui.open(str(tmp_path / "out.pftrace"))
    try:
        assert opened.import_errors() == []
        rows = opened.query("select s.name, s.ts, s.dur, extract_arg(s.arg_set_id, 'debug.call_id') call_id, "
                            "t.name track from slice s join track t on s.track_id = t.id "
                            "where s.name != 'trt_trace_metadata' order by s.ts")
        assert [(r["name"], r["ts"], r["dur"], r["call_id"]) for r in rows] == [
            ("execute_engine", 10_000, 5_000, 1), ("enqueue", 12_000, 3_000, 1), ("execute_engine", 20_000, 1_000, 2)]
        meta = opened.query("select s.ts, extract_arg(s.arg_set_id, 'debug.tool') tool, t.name track from slice s "
                            "join track t on s.track_id = t.id where s.name = 'trt_trace_metadata'")
        assert meta == [{"ts": 10_000, "tool": "trt_trace", "track": "trt_trace metadata"}]
        assert {r["track"] for r in rows if r["call_id"] == 2} == {f"engine_a (501) {BIG_TID}"}
        assert opened.scalar("select count(*) from flow") == 0  # its one start has no end: nothing to draw
        assert opened.scalar("select count(*) from process where pid = 5 and name = 'rank 0 · serve.py'") == 1
    finally:
        opened.close()


EVENT = st.fixed_dictionaries(
    {"ph": st.sampled_from(["X", "M", "s", "f", "C", "i", "B", "E", 3, None])},
    optional={"name": st.one_of(st.text(max_size=8), st.integers()), "ts": st.one_of(st.floats(allow_nan=True),
              st.integers(-10, 10**12), st.text(max_size=3)), "dur": st.one_of(st.floats(), st.integers(-5, 10**9)),
              "pid": st.one_of(st.integers(-5, 1 << 40), st.text(max_size=2)), "tid": st.integers(-5, 1 << 40),
              "id": st.one_of(st.integers(-5, 1 << 70), st.text(max_size=2)), "cat": st.text(max_size=4),
              "args": st.one_of(st.dictionaries(st.text(max_size=4), st.one_of(
                  st.none(), st.integers(-(1 << 70), 1 << 70), st.floats(), st.text(max_size=4),
                  st.lists(st.integers(), max_size=3)), max_size=3), st.integers())})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(EVENT, max_size=30), cut=st.integers(0, 40))
def test_any_events_give_a_perfetto_trace_or_one_error(tmp_path, events, cut):
    """Odd values everywhere (NaN, integers past 64 bits, strings for numbers), a file cut anywhere: a
    Perfetto trace that parses, or the reader's one-line CaptureError."""
    text = json.dumps(events).encode()  # NaN and big integers as Python writes them
    src = tmp_path / "in.json"
    src.write_bytes(text[:len(text) - cut] if cut else text)
    try:
        convert(str(src), str(tmp_path / "out.pftrace"), chunk_bytes=1024)
    except CaptureError as exc:
        assert "\n" not in str(exc)
        return
    assert parse(tmp_path / "out.pftrace")[0].track_descriptor.name == "trt_trace merged view"


SCALARS = st.one_of(st.booleans(), st.integers(-(1 << 63), (1 << 64) - 1), st.floats(allow_nan=False),
                    st.text(max_size=6), st.none(), st.lists(st.integers(-5, 5), max_size=2),
                    st.dictionaries(st.text(max_size=3), st.integers(-(1 << 63), (1 << 63) - 1), max_size=2))


_SLICE = st.fixed_dictionaries({
    "begin": st.integers(0, 40), "dur": st.integers(0, 10), "track": st.integers(1, 3), "name": st.text(max_size=6),
    "category": st.sampled_from(["", "trt_trace", "kernel"]),
    "args": st.dictionaries(st.text(max_size=5), SCALARS, max_size=4),
    "flows": st.lists(st.integers(0, (1 << 64) - 1), max_size=2),
    "terminating": st.lists(st.integers(0, (1 << 64) - 1), max_size=2)})


def _order(slices: list) -> list[tuple[int, int]]:
    """(slice index, 1 begin / 0 end) in the order the codec's docstring states."""
    marks = []
    for k, s in enumerate(slices):
        marks.append((s.begin, 1, bool(s.terminating), -s.end, k + 1))
        marks.append((s.end, 0, False, -s.begin, -k - 1))
    return [(m[4] - 1, 1) if m[4] > 0 else (-m[4] - 1, 0) for m in sorted(marks)]


@settings(max_examples=300, deadline=None)
@given(chunk=st.lists(_SLICE, max_size=6), base=st.sampled_from([0, 1 << 40, (1 << 63) - 64]),
       shared_args=st.booleans(), out_bytes=st.sampled_from([1, 64, 1 << 20]))
def test_the_hand_encoded_packets_decode_as_the_protos_say(chunk, base, shared_args, out_bytes):
    """track_event_codec.py (and csrc/readers/view_packets.cpp under it) against the `perfetto` package's
    own protos: every slice's begin and end decode to what was given, in the stated order (an annotation
    with no value the trace processor can hold is left out, as the native writer does); also when slices
    share one argument set, and when the packet buffer starts too small."""
    from trt_trace.analysis.perfetto_view import _Slice
    from trt_trace.io.perfetto_protos import protos
    from trt_trace.io.readers.perfetto_general import annotation_value
    from trt_trace.io.writers.track_event_codec import SliceCodec

    pb = protos()
    codec = SliceCodec(7, out_bytes=out_bytes)
    one_args = chunk[0]["args"] if chunk else {}
    slices = [_Slice(c["track"], base + c["begin"], base + c["begin"] + c["dur"], c["name"], c["category"],
                     one_args if shared_args else c["args"], c["flows"], c["terminating"]) for c in chunk]
    for _ in range(2):  # the second time from the codec's remembered strings and annotations
        packets = pb.Trace.FromString(codec.slices(slices)).packet
        assert len(packets) == 2 * len(slices)
        for packet, (k, is_begin) in zip(packets, _order(slices), strict=True):
            s, ev = slices[k], packet.track_event
            assert packet.trusted_packet_sequence_id == 7 and ev.track_uuid == s.track
            if not is_begin:
                assert packet.timestamp == s.end and ev.type == pb.TrackEvent.TYPE_SLICE_END
                assert packet.ListFields() and not ev.name and not ev.debug_annotations and not ev.flow_ids
                continue
            assert packet.timestamp == s.begin and ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN and ev.name == s.name
            assert list(ev.categories) == ([s.category] if s.category else [])
            assert list(ev.flow_ids) == s.flows and list(ev.terminating_flow_ids) == s.terminating
            kept = {k: v for k, v in s.args.items() if v is not None and v != [] and v != {}}
            assert {a.name: annotation_value(a) for a in ev.debug_annotations} == kept
    big = _Slice(1, 5, 6, "n", "", {"n": 1 << 70}, [], [])
    ev = pb.Trace.FromString(codec.slices([big])).packet[0].track_event
    assert annotation_value(ev.debug_annotations[0]) == str(1 << 70)  # past 64 bits: as text, as the writer does
    ts, args = base + 3, chunk[0]["args"] if chunk else {}
    (instant,) = pb.Trace.FromString(codec.instant(ts, 2, "meta", args)).packet
    iev = instant.track_event
    assert (instant.timestamp, instant.trusted_packet_sequence_id) == (ts, 7)
    assert iev.type == pb.TrackEvent.TYPE_INSTANT and iev.track_uuid == 2 and iev.name == "meta"
    assert not iev.categories and not iev.flow_ids and not iev.terminating_flow_ids
    kept = {k: v for k, v in args.items() if v is not None and v != [] and v != {}}
    assert {a.name: annotation_value(a) for a in iev.debug_annotations} == kept
