"""The native Perfetto trace (*.pftrace): tracks, slices, nesting, flows, metadata, cut files,
format selection, size limit, and agreement with the Chrome JSON of the same records."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest
import torch
from conftest import call_from_threads, drain_all, in_thread, run_python
from google.protobuf.descriptor import EnumDescriptor, FieldDescriptor
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from pftrace_checks import check_pftrace, parse
from test_gpu_tracks import call_records
from trace_checks import check_trace, load_strict, to_ns

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, load_events, summary_text
from trt_trace.io.readers.perfetto_general import annotation_value
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.native import ops
from trt_trace.runtime import session as session_mod
from trt_trace.runtime.native_trace import NativeTrace
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase


def run_engines(path, names, calls=4, **kwargs):
    engines = [standin.make_engine(n, host_us=50 * i) for i, n in enumerate(names)]
    with trt_trace.tracing(str(path), **kwargs) as session:
        for _ in range(calls):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    return session


def write_both(tmp_path, batches, names):
    """The same record batches through both writers; returns (JSON events, checked pftrace)."""
    outputs = []
    for cls, name in ((ChromeJsonWriter, "same.json"), (PerfettoTraceWriter, "same.pftrace")):
        writer = cls(str(tmp_path / name), lambda: names)
        writer.begin("test", {"tool": "trt_trace"})
        for b in batches:
            writer.write(b)
        writer.finish({"dropped_events": 0, "threads": []})
        outputs.append(tmp_path / name)
    events = load_strict(outputs[0])
    check_trace(events)
    return events, check_pftrace(parse(outputs[1]))


def json_slices(events) -> Counter:
    return Counter((e["name"], e["args"]["call_id"], to_ns(e["ts"]), to_ns(e["ts"]) + to_ns(e["dur"]))
                   for e in events if e["ph"] == "X")


def pftrace_slices(checked) -> Counter:
    return Counter((name, args["call_id"], begin, end) for _u, name, begin, end, args, *_ in checked.slices)


def annotation(a):
    return annotation_value(a)


# -- the encoder and the protos ------------------------------------------------------------------


_WIRE_TYPES = {  # the wire type each field type is written with (unpacked repeated fields: as one element)
    FieldDescriptor.TYPE_BOOL: 0, FieldDescriptor.TYPE_ENUM: 0, FieldDescriptor.TYPE_INT32: 0,
    FieldDescriptor.TYPE_INT64: 0, FieldDescriptor.TYPE_UINT32: 0, FieldDescriptor.TYPE_UINT64: 0,
    FieldDescriptor.TYPE_FIXED64: 1, FieldDescriptor.TYPE_DOUBLE: 1,
    FieldDescriptor.TYPE_STRING: 2, FieldDescriptor.TYPE_BYTES: 2, FieldDescriptor.TYPE_MESSAGE: 2,
}


def test_cpp_field_numbers_match_the_perfetto_descriptors():
    """Every field number and enum value of csrc/format/perfetto_fields.h (what all native Perfetto encoders
    write), and the wire type it is written with, against the `perfetto` package's descriptors."""
    numbers = ops.perfetto_field_numbers()
    assert len(numbers) >= 50
    for name, (number, wire) in numbers.items():
        *scope, last = name.split(".")
        descriptor = functools.reduce(getattr, scope, pb).DESCRIPTOR  # a message or an enum, nested by dots
        if isinstance(descriptor, EnumDescriptor):
            assert wire == -1 and descriptor.values_by_name[last].number == number, name
        else:
            field = descriptor.fields_by_name[last]
            assert field.number == number and _WIRE_TYPES[field.type] == wire, name
            assert not field.is_packed, name  # a repeated field as one tag per element, as written here


def test_trace_processor_is_not_needed(tmp_path):
    """Writing and reading back use only the generated protos: the `perfetto` package's
    TraceProcessor (a binary it downloads) is never imported."""
    code = f"""
import sys
sys.modules["perfetto.trace_processor"] = None  # any import of it fails
import torch, trt_trace
from trt_trace import standin
e = standin.make_engine("offline_engine")
with trt_trace.tracing({str(tmp_path / 't.pftrace')!r}):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
print(trt_trace.summary({str(tmp_path / 't.pftrace')!r}))
"""
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr
    assert "offline_engine" in proc.stdout


# -- real runs of the stand-in runtime -----------------------------------------------------------


def test_tracks_slices_names_and_metadata_of_a_real_run(tmp_path):
    out = tmp_path / "t.pftrace"
    names = [f"_run_on_acc_{i}_engine" for i in range(3)]
    session = run_engines(out, names)
    # Written by the native writer thread (csrc/session/perfetto_trace.h), Python only its control.
    assert session.format == "perfetto" and isinstance(session.writer, NativeTrace)
    assert session.writer.format == "perfetto"
    c = check_pftrace(parse(out))
    process = next(t for t in c.tracks.values() if t.HasField("process"))
    # The UI adds the pid. (The program's name: "pytest", or "python" on a pytest-xdist worker.)
    assert process.process.pid == os.getpid() and process.process.process_name == session_mod.program_name()
    groups = c.children(process.uuid)
    assert [t.name for t in sorted(groups, key=lambda t: t.sibling_order_rank)] == ["engines", "trt_trace metadata"]
    engines = sorted(c.children(groups[0].uuid if groups[0].name == "engines" else groups[1].uuid),
                     key=lambda t: t.sibling_order_rank)
    assert [t.name for t in engines] == names  # process -> engines -> one track per engine, in id order
    for t in engines:
        assert [child.name for child in c.children(t.uuid)] == ["host"]  # sequential calls: one lane
    slices = c.slices
    assert len([s for s in slices if s[1] == "execute_engine"]) == 12
    assert {s[1] for s in slices} == {"execute_engine", "workspace", "inputs", "outputs", "enqueue"}
    calls = {s[4]["call_id"]: s for s in slices if s[1] == "execute_engine"}
    for uuid, _name, begin, end, args, *_ in slices:
        assert c.path(uuid)[0] in names and {"engine", "call_id", "thread"} <= set(args)
        call = calls[args["call_id"]]
        assert call[0] == uuid and call[2] <= begin <= end <= call[3]  # phases nest in their call
    assert [m["tool"].string_value for m in c.metadata[:1]] == ["trt_trace"]
    start, end = ({k: annotation(a) for k, a in m.items()} for m in c.metadata)
    assert start["clock"] == "CLOCK_MONOTONIC" and start["trt_trace_version"] == trt_trace.__version__
    assert start["torch_version"] == torch.__version__ and isinstance(start["argv"], list)
    assert end["dropped_events"] == 0 and end["records_written"] == len(slices)
    assert end["threads"] and all({"thread", "dropped", "produced"} <= set(t) for t in end["threads"])
    assert end["files"] == [str(out)] and end["wall_ns"] > start["wall_ns"]


def test_overlapping_calls_of_one_engine_get_lanes_that_nest(tmp_path):
    out = tmp_path / "t.pftrace"
    engine = standin.make_engine("contended_engine", host_us=300)
    with trt_trace.tracing(str(out)):
        call_from_threads(engine, threads=4, calls=10)
    c = check_pftrace(parse(out))  # asserts nesting on every track
    calls = [s for s in c.slices if s[1] == "execute_engine"]
    assert len(calls) == 40 and len({s[4]["thread"] for s in calls}) == 4
    lanes = {tuple(c.path(s[0])) for s in calls}
    assert ("contended_engine", "host") in lanes and all(p[0] == "contended_engine" for p in lanes)


def test_summary_of_a_pftrace_matches_the_live_table_and_the_cli(tmp_path):
    out = tmp_path / "t.pftrace"
    engines = [standin.make_engine(f"sum_engine_{i}", host_us=100 * (i + 1)) for i in range(3)]
    with trt_trace.tracing(str(out)):
        for k in range(6):
            for e in engines[: 1 + k % 3]:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    s = aggregate(load_events(str(out)))
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    assert [by_name[f"sum_engine_{i}"][0] for i in range(3)] == [6, 4, 2]
    for row in by_name.values():
        assert row[2] >= sum(row[3:7]) > 0  # the phases lie inside the calls
    live = {ln.split()[0]: ln.split()[1] for ln in trt_trace.summary().splitlines()[1:]}
    from_file = {ln.split()[0]: ln.split()[1] for ln in summary_text(str(out)).splitlines()[1:]}
    assert live == from_file
    exe = os.path.join(os.path.dirname(sys.executable), "trt-trace")
    proc = subprocess.run([exe, "summary", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == summary_text(str(out))


def test_a_cut_file_still_reads_up_to_its_last_whole_packet(tmp_path):
    out = tmp_path / "t.pftrace"
    run_engines(out, ["cut_engine"], calls=20)
    data = out.read_bytes()
    whole = parse(out)
    # Where each packet ends in the file: tag, length varint, packet.
    ends = np.cumsum([1 + max(1, (p.ByteSize().bit_length() + 6) // 7) + p.ByteSize() for p in whole])
    assert ends[-1] == len(data)
    for fraction in (0.5, 0.8, 0.999):
        size = int(len(data) * fraction)
        cut = tmp_path / "cut.pftrace"
        cut.write_bytes(data[:size])  # as if killed mid-write
        kept = whole[: int(np.searchsorted(ends, size, side="right"))]  # every whole packet
        events = load_events(str(cut))
        begins = [p for p in kept if p.HasField("track_event") and p.track_event.type == 1]
        ends_ = [p for p in kept if p.HasField("track_event") and p.track_event.type == 2]
        slices = [e for e in events if e.get("ph") == "X"]
        assert len(slices) == len(ends_) and len(begins) - len(ends_) in (0, 1)  # a begin whose end was cut
        assert any(e.get("name") == "execute_engine" for e in events)
        assert "was cut short: no end record" in summary_text(str(cut))
    assert "cut_engine" in summary_text(str(cut))


def test_dropped_events_are_in_the_end_metadata(tmp_path):
    out = tmp_path / "t.pftrace"
    with trt_trace.tracing(str(out), buffer_events=64):
        in_thread(ops.push_synthetic, 20000, 1, 1_000_000)  # a fresh thread: a 64-record ring, flooded
    c = check_pftrace(parse(out))
    end = {k: annotation(a) for k, a in c.metadata[-1].items()}
    flooded = [t for t in end["threads"] if t["dropped"]]
    assert len(flooded) == 1 and flooded[0]["produced"] == 20000
    assert end["dropped_events"] == 20000 - len(c.slices)  # events, not threads: every event not in the file
    assert flooded[0]["produced"] - flooded[0]["dropped"] == len(c.slices) == end["records_written"]


# -- synthetic records: GPU spans, flows, and the JSON of the same records ----------------------


def test_gpu_tracks_flows_and_agreement_with_json(tmp_path):
    rows = []
    rows += call_records(1, 1, 1_000_000, 1_030_000, 1_500_000, stream=7)  # engine 1: GPU spans overlap
    rows += call_records(2, 1, 1_200_000, 1_230_000, 1_400_000, stream=9)  # -> two GPU lanes
    rows += call_records(3, 2, 2_000_000, 2_040_000, 2_090_000)
    rows += call_records(4, 2, 3_000_000, 3_040_000, 3_090_000, flags=4)  # graph-captured: no launch
    records = np.array(rows, dtype=RECORD_DTYPE)
    # Host records first, the GPU spans resolve in a later batch (as the drainer hands them over).
    batches = [records[records["phase"] != Phase.GPU], records[records["phase"] == Phase.GPU]]
    events, c = write_both(tmp_path, batches, ["", "engine_a", "engine_b"])
    assert json_slices(events) == pftrace_slices(c)  # the same slices, to the ns
    paths = {tuple(c.path(s[0])) for s in c.slices if s[1] == "gpu"}
    assert paths == {("engine_a", "GPU"), ("engine_a", "GPU (2)"), ("engine_b", "GPU")}
    starts = {f: s for s in c.slices for f in s[5]}
    ends = {f: s for s in c.slices for f in s[6]}
    assert set(starts) == {1, 2, 3} and set(ends) == {1, 2, 3, 4}
    for call_id, s in starts.items():
        assert s[1] == "enqueue" and s[4]["call_id"] == call_id and c.path(s[0])[1] == "host"
        assert ends[call_id][1] == "gpu" and c.path(ends[call_id][0])[0] == c.path(s[0])[0]
    gpu = {s[4]["call_id"]: s[4] for s in c.slices if s[1] == "gpu"}
    assert gpu[2]["stream"] == 9 and gpu[1]["device"] == 0 and gpu[4]["captured"] is True
    s = aggregate(load_events(str(tmp_path / "same.pftrace")))
    by_name = dict(zip(s.names, s.stats.tolist(), strict=True))
    assert by_name["engine_a"][7] == 470_000 + 170_000 and by_name["engine_a"][8] == 2
    assert s.stats.tolist() == aggregate(events).stats.tolist()


def test_caller_stream_waits_agree_with_json_and_stay_out_of_the_table(tmp_path):
    rows = call_records(1, 1, 1_000_000, 1_040_000, 1_300_000, wait=(1_030_000, 1_320_000))
    rows += call_records(2, 1, 2_000_000, 2_040_000, 2_090_000, wait=(2_040_000, 2_090_000))
    records = np.array(rows, dtype=RECORD_DTYPE)
    events, c = write_both(tmp_path, [records], ["", "engine_a"])
    assert json_slices(events) == pftrace_slices(c)
    waits = [s for s in c.slices if s[1] == "caller stream wait"]
    assert len(waits) == 2 and all(c.path(s[0]) == ["engine_a", "GPU"] for s in waits)
    assert {s[4]["stream"] for s in waits} == {3}
    assert all(s[4].get("engine_stream") is True for s in c.slices if s[1] == "gpu")
    # The table's gpu column is the engines' own work, not the waits around it.
    s = aggregate(load_events(str(tmp_path / "same.pftrace")))
    assert s.stats.tolist()[s.names.index("engine_a")][7:9] == [260_000 + 50_000, 2]


def test_both_formats_load_as_the_json_writers_events(tmp_path):
    """load_events gives a file's slices and launch flows as the JSON writer writes them, whatever the
    format: each flag its own argument (error, nested, captured, engine_stream), a stream on GPU spans
    only, and a Perfetto slice's flows 1 ns inside it, or at its edge where it lasts 0 ns."""
    rows = call_records(1, 1, 1_000_000, 1_030_000, 1_500_000, stream=7, flags=1)  # an error
    rows += call_records(2, 1, 2_000_000, 2_040_000, 2_040_000, stream=9, flags=2)  # nested; a GPU span of 0 ns
    rows += call_records(3, 2, 3_000_000, 3_040_000, 3_090_000, flags=4)  # graph-captured
    rows += call_records(4, 2, 4_000_000, 4_040_000, 4_090_000, wait=(4_030_000, 4_100_000))  # engine stream
    events, _ = write_both(tmp_path, [np.array(rows, dtype=RECORD_DTYPE)], ["", "engine_a", "engine_b"])

    def slices_and_flows(evs) -> list[str]:
        return sorted(json.dumps(e, sort_keys=True) for e in evs if e["ph"] in ("X", "s", "f"))

    want = slices_and_flows(events)
    flags = Counter(k for e in events if e["ph"] == "X" for k in ("error", "nested", "captured", "engine_stream")
                    if e["args"].get(k))
    assert set(flags) == {"error", "nested", "captured", "engine_stream"}
    assert sum(e["ph"] in ("s", "f") for e in events) > 0
    assert slices_and_flows(load_events(str(tmp_path / "same.json"))) == want
    assert slices_and_flows(load_events(str(tmp_path / "same.pftrace"))) == want


def test_equal_timestamps_and_calls_split_across_batches_still_nest(tmp_path):
    rows = []
    for k in range(50):  # back-to-back calls: each begins at the ns the previous one ended
        begin = 1_000_000 + k * 100_000
        rows += call_records(10 + k, 1, begin, 0, 0)[:5]
    rows.append((9_000_000, 9_000_000, 99, 1, 42, 0, 0, 0xFFFF, 0))  # a zero-length call
    records = np.array(rows, dtype=RECORD_DTYPE)
    # Cut inside calls, as a drain that stops at its record limit does.
    batches = [records[:7], records[7:103], records[103:]]
    events, c = write_both(tmp_path, batches, ["", "engine_a"])
    assert json_slices(events) == pftrace_slices(c)
    assert len(c.slices) == len(records)


def test_drained_synthetic_records_agree_with_json(tmp_path):
    """Records pushed through the real rings (push_synthetic) and drained, into both formats."""
    ops.set_profile_execution(True)
    for engine in (1, 2, 3):
        ops.push_synthetic(2000, engine, engine * 1_000_000)
    ops.set_profile_execution(False)
    records = drain_all()
    assert len(records) == 6000
    events, c = write_both(tmp_path, [records[:2500], records[2500:]], ["", "e1", "e2", "e3"])
    assert json_slices(events) == pftrace_slices(c)
    json_size = (tmp_path / "same.json").stat().st_size
    pftrace_size = (tmp_path / "same.pftrace").stat().st_size
    assert pftrace_size * 3 < json_size, (pftrace_size, json_size)


# -- selection, settings, size limit -------------------------------------------------------------


@pytest.mark.parametrize("name,fmt,expected", [
    ("t.pftrace", None, "perfetto"), ("t.perfetto-trace", None, "perfetto"), ("t.pb", None, "perfetto"),
    ("t.json", None, "json"), ("t.pftrace", "json", "json"), ("t.json", "perfetto", "perfetto"),
])  # every session is written by the native writer thread in its format (NativeTrace controls it)
def test_format_by_suffix_or_explicit_argument(tmp_path, capfd, name, fmt, expected):
    out = tmp_path / name
    session = run_engines(out, ["sel_engine"], calls=1, format=fmt)
    assert isinstance(session.writer, NativeTrace) and session.writer.format == expected
    err = capfd.readouterr().err
    mismatch = fmt is not None and (name.endswith(".json") != (fmt == "json"))
    assert ("to say so" in err) == mismatch, err
    events = load_events(str(out))  # the reader goes by content, whatever the name
    assert sum(1 for e in events if e.get("name") == "execute_engine") == 1


def test_unknown_format_argument_is_an_error(tmp_path):
    with pytest.raises(trt_trace.TraceError, match="json or perfetto"):
        trt_trace.start(str(tmp_path / "t.pftrace"), format="protobuf")


EAGER = """
import torch
from trt_trace import standin
e = standin.make_engine("env_engine")
for _ in range(3):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
print("ran")
"""


def test_env_format_selects_perfetto_and_nonsense_warns_once(tmp_path):
    out = tmp_path / "t.trace"
    proc = run_python(EAGER, {"TRT_TRACE_OUT": str(out), "TRT_TRACE_FORMAT": "perfetto"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ran", proc.stderr
    assert len([s for s in check_pftrace(parse(out)).slices if s[1] == "execute_engine"]) == 3
    out = tmp_path / "t.pftrace"
    proc = run_python(EAGER, {"TRT_TRACE_OUT": str(out), "TRT_TRACE_FORMAT": "xml"})
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    lines = [ln for ln in proc.stderr.splitlines() if "TRT_TRACE_FORMAT" in ln]
    assert len(lines) == 1 and "'xml'" in lines[0]
    check_pftrace(parse(out))  # the default: by the suffix


def test_size_limit_splits_into_numbered_complete_pftrace_files(tmp_path):
    out = tmp_path / "t.pftrace"
    names = ["split_engine_0", "split_engine_1"]
    rows = []
    for k in range(3000):
        rows += call_records(k + 1, 1 + k % 2, 1_000_000 + k * 200_000, 0, 0)[:5]
    records = np.array(rows, dtype=RECORD_DTYPE)
    writer = PerfettoTraceWriter(str(out), lambda: ["", *names], max_bytes=60_000)
    writer.begin("test", {"tool": "trt_trace"})
    for i in range(0, len(records), 1000):
        writer.write(records[i : i + 1000])
    writer.finish({"dropped_events": 0, "threads": []})
    assert len(writer.paths) > 2 and writer.paths[1] == str(tmp_path / "t.1.pftrace")
    total = 0
    for path in writer.paths:
        c = check_pftrace(parse(path))  # each file is a whole trace: clock, names, tracks
        assert {p[0] for p in (c.path(s[0]) for s in c.slices)} <= set(names)
        assert c.metadata and annotation(c.metadata[0]["tool"]) == "trt_trace"
        total += len(c.slices)
    assert total == len(records)
    end = {k: annotation(a) for k, a in check_pftrace(parse(writer.paths[-1])).metadata[-1].items()}
    assert end["files"] == writer.paths


def test_more_lanes_than_the_readers_first_track_table_are_all_read(tmp_path):
    """The Perfetto reader's track table starts at 1,024 entries and grows: 1,100 engines make lane uuids past
    it, one of them exactly its size (a mutant that grew the table only past its size lost every call there)."""
    out = tmp_path / "many.pftrace"
    engines = [standin.make_engine(f"lane_engine_{i}") for i in range(1100)]
    with trt_trace.tracing(str(out)):
        for e in engines:
            torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    calls = Counter(e["args"]["engine"] for e in load_events(str(out))
                    if e.get("ph") == "X" and e.get("name") == "execute_engine")
    assert calls == Counter({f"lane_engine_{i}": 1 for i in range(1100)})
