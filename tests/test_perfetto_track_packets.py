"""The native encoders of a Perfetto trace's non-slice packets (csrc/format/perfetto_track_packets.h): byte for
byte what the Python writer (trt_trace/io/writers/perfetto_trace.py) writes for the same arguments, over chosen
edge cases, random ones (hypothesis) and every non-slice packet of real trace files; and decoded with the
`perfetto` package's protos.

Strings reach the native side as bytes (a Python str with surrogates cannot cross a torch op's `str`: see
test_a_python_surrogate_never_reaches_the_native_side); the native rule is Python's
`_text(bytes.decode("utf-8", "surrogateescape"))`, so the references below are computed from that str."""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from pftrace_checks import parse

import trt_trace
from trt_trace import standin
from trt_trace.io.writers import perfetto_trace as pt
from trt_trace.native import ops
from trt_trace.schema.trace_format import ANNOTATIONS, METADATA_EVENT, PHASE_NAMES

SEQ = pt.SEQUENCE_ID
U64 = (1 << 64) - 1
# Values across every varint length boundary (1..10 bytes), and the ends of the ranges.
BOUNDARIES = sorted({0, 1, U64} | {b + d for k in range(1, 10) for b in [1 << (7 * k)] for d in (-1, 0, 1)} | {
    (1 << 63) - 1, 1 << 63})
INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
QUICK = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# -- calling the native encoders ------------------------------------------------------------------------------


def _bits(v: int) -> int:
    """An int64 argument: a uint64 as its two's complement bits."""
    return v - (1 << 64) if v >= 1 << 63 else v


def native(which: str, ints: list[int] = (), texts: list[bytes] = (), doubles: list[float] = ()) -> bytes:
    """One encoder of csrc/format/perfetto_track_packets.h through the test op (csrc/ops/test_ops.cpp)."""
    blob = b"".join(texts)
    ends, at = [], 0
    for t in texts:
        at += len(t)
        ends.append(at)
    text = torch.frombuffer(bytearray(blob), dtype=torch.uint8) if blob else torch.empty(0, dtype=torch.uint8)
    out = ops._op("_perfetto_track_packet")(which, [_bits(v) for v in ints], list(doubles), text, ends)
    return bytes(out.numpy())


def as_str(raw: bytes) -> str:
    """The Python str the native rule treats `raw` as (how Python decodes argv and file names)."""
    return raw.decode("utf-8", "surrogateescape")


def decode(packet: bytes) -> pb.TracePacket:
    trace = pb.Trace.FromString(packet)
    assert len(trace.packet) == 1 and trace.SerializeToString() == packet  # one packet, canonical
    return trace.packet[0]


@contextmanager
def python_clocks(boot: int, mono: int, real: int):
    """_clock_snapshot_packet() reading these clock values."""
    readings = {pt.time.CLOCK_MONOTONIC: mono, pt.time.CLOCK_BOOTTIME: boot}
    fake = SimpleNamespace(CLOCK_MONOTONIC=pt.time.CLOCK_MONOTONIC, CLOCK_BOOTTIME=pt.time.CLOCK_BOOTTIME,
                           clock_gettime_ns=readings.__getitem__, time_ns=lambda: real)
    with mock.patch.object(pt, "time", fake):
        yield


def value_program(value: Any, prefer_uint: bool, ints: list[int], doubles: list[float], texts: list[bytes]) -> None:
    """`value` as the test op's pre-order program (test_ops.cpp value_of), as a native caller would build it:
    an int as Value::of_int, or (prefer_uint, when non-negative) Value::of_uint; what Python writes as text
    (an int past 64 bits, any other object) as its text."""

    def text(s: str) -> int:
        texts.append(s.encode("utf-8", "surrogateescape"))
        return len(texts) - 1

    if value is None:
        ints.append(0)
    elif isinstance(value, bool):
        ints += [1, int(value)]
    elif isinstance(value, int) and 0 <= value <= U64 and (prefer_uint or value >= 1 << 63):
        ints += [3, value]
    elif isinstance(value, int) and -(1 << 63) <= value < 1 << 63:
        ints += [2, value]
    elif isinstance(value, float):
        doubles.append(value)
        ints += [4, len(doubles) - 1]
    elif isinstance(value, dict):
        ints += [6, len(value)]
        for key, item in value.items():
            ints.append(text(str(key)))
            value_program(item, prefer_uint, ints, doubles, texts)
    elif isinstance(value, list | tuple):
        ints += [7, len(value)]
        for item in value:
            value_program(item, prefer_uint, ints, doubles, texts)
    else:
        ints += [5, text(value if isinstance(value, str) else str(value))]


def native_metadata(ts: int, metadata: dict, prefer_uint: bool = False) -> bytes:
    ints: list[int] = [SEQ, ts, pt.METADATA_UUID, pt.METADATA_NAME_IID]
    doubles: list[float] = []
    texts: list[bytes] = []
    value_program(metadata, prefer_uint, ints, doubles, texts)
    return native("metadata", ints, texts, doubles)


# -- strategies ---------------------------------------------------------------------------------------------

# Names as bytes: valid UTF-8 of any text (control characters, non-ASCII, astral), Python strs carrying
# undecodable bytes as surrogates, raw bytes, and long ones (lengths past one varint byte).
ODD_TEXT = st.text(st.characters(codec=None, exclude_categories=["Cs"]) | st.characters(min_codepoint=0xDC80,
                                                                                         max_codepoint=0xDCFF))
NAMES = st.one_of(
    st.just(b""),
    st.text().map(lambda s: s.encode()),
    ODD_TEXT.map(lambda s: s.encode("utf-8", "surrogateescape")),
    st.binary(max_size=40),
    st.binary(min_size=100, max_size=300),
    st.text(min_size=130, max_size=200).map(lambda s: s.encode()),
)
STRS = NAMES.map(as_str)
ALL_INTS = st.one_of(st.integers(-(1 << 63), U64), st.sampled_from(BOUNDARIES), st.integers(-(1 << 70), 1 << 70),
                     st.sampled_from([-(1 << 63), -1, -(1 << 63) - 1, 1 << 64]))
SCALARS = st.one_of(st.none(), st.booleans(), ALL_INTS, st.floats(allow_nan=True, allow_infinity=True), STRS)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(STRS | st.integers(), inner, max_size=4)),
    max_leaves=25,
)
METADATA = st.dictionaries(STRS, JSON_LIKE, max_size=6)
UINT64 = st.one_of(st.integers(0, U64), st.sampled_from(BOUNDARIES))


# -- strings ------------------------------------------------------------------------------------------------


def test_a_python_surrogate_never_reaches_the_native_side():
    """A torch op's `str` refuses a str with surrogates, so the native encoders only ever see bytes: names it
    holds itself (engines, layers, files) or UTF-8 that Python made, e.g. of _text(s)."""
    with pytest.raises(RuntimeError, match="str"):
        ops._op("_parse_engine_name")("  Name: bad\udc80name")
    assert ops._op("_parse_engine_name")(pt._text("x\n  Name: bad\udc80name")) == "bad\\udc80name"


@pytest.mark.parametrize("raw", [
    b"", b"plain", b"\x00\x01\x1f\x7f tab\t", "ünï ✓ \U0001F600".encode(), b"\x80", b"\xff\xfe", b"\xc0\x80",
    b"\xc1\xbf", b"\xe0\x80\x80", b"\xed\xa0\x80", b"\xed\xb2\x80", b"\xed\x9f\xbf", b"\xf4\x90\x80\x80",
    b"\xf4\x8f\xbf\xbf", b"\xf5\x80\x80\x80", b"\xe2\x82", b"\xe2\x82A", b"\xf0\x9f\x98", b"a\xf0\x9f\x98\x80b\x80",
    "x\udc80y\udcff".encode("utf-8", "surrogateescape"),
])
def test_text_is_what_python_makes_of_the_same_bytes(raw):
    assert native("utf8_text", texts=[raw]) == pt._text(as_str(raw)).encode()


@QUICK
@given(NAMES)
def test_any_bytes_as_text(raw):
    assert native("utf8_text", texts=[raw]) == pt._text(as_str(raw)).encode()


@given(st.binary(max_size=40_000))
@example(b"x" * 127)
@example(b"x" * 128)
@example(b"x" * 16383)
@example(b"x" * 16384)
@settings(max_examples=50, deadline=None)
def test_frame(packet):
    assert native("frame", texts=[packet]) == pt.frame(SimpleNamespace(SerializeToString=lambda: packet))


# -- the start of a sequence --------------------------------------------------------------------------------


@pytest.mark.parametrize("clocks", [(0, 0, 0), (1, 2, 3)] + [(v, v, v) for v in BOUNDARIES])
def test_clock_snapshot(clocks):
    boot, mono, real = clocks
    mine = native("clock_snapshot", [SEQ, boot, mono, real])
    with python_clocks(boot, mono, real):
        assert mine == pt._clock_snapshot_packet()
    packet = decode(mine)
    assert packet.trusted_packet_sequence_id == SEQ
    assert [(c.clock_id, c.timestamp) for c in packet.clock_snapshot.clocks] == [
        (pb.BUILTIN_CLOCK_BOOTTIME, boot), (pb.BUILTIN_CLOCK_MONOTONIC, mono), (pb.BUILTIN_CLOCK_REALTIME, real)]


def test_clock_snapshot_read_now():
    """The overload that reads the clocks itself: each within the Python readings around it."""
    before = (time.clock_gettime_ns(time.CLOCK_BOOTTIME), time.monotonic_ns(), time.time_ns())
    mine = native("clock_now", [SEQ])
    after = (time.clock_gettime_ns(time.CLOCK_BOOTTIME), time.monotonic_ns(), time.time_ns())
    clocks = [c.timestamp for c in decode(mine).clock_snapshot.clocks]
    for low, ns, high in zip(before, clocks, after, strict=True):
        assert low <= ns <= high
    with python_clocks(*clocks):
        assert mine == pt._clock_snapshot_packet()


def test_sequence_start_of_the_writer():
    mine = native("sequence_start", [SEQ, len(PHASE_NAMES)],
                  [n.encode() for n in (*PHASE_NAMES, METADATA_EVENT, *ANNOTATIONS)])
    assert mine == pt._sequence_start_packet()
    packet = decode(mine)
    assert packet.first_packet_on_sequence and packet.sequence_flags == pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    assert packet.trace_packet_defaults.timestamp_clock_id == pb.BUILTIN_CLOCK_MONOTONIC
    names = {e.iid: e.name for e in packet.interned_data.event_names}
    assert names == {**{i + 1: n for i, n in enumerate(PHASE_NAMES)}, pt.METADATA_NAME_IID: METADATA_EVENT}
    assert {a.iid: a.name for a in packet.interned_data.debug_annotation_names} == {
        i + 1: n for i, n in enumerate(ANNOTATIONS)}


@QUICK
@given(st.lists(st.text(), max_size=20), st.text(), st.lists(st.text(), max_size=200))
def test_sequence_start_of_any_names(phases, metadata_name, annotations):
    mine = native("sequence_start", [SEQ, len(phases)], [n.encode() for n in (*phases, metadata_name, *annotations)])
    with mock.patch.multiple(pt, PHASE_NAMES=phases, METADATA_EVENT=metadata_name, ANNOTATIONS=annotations,
                             METADATA_NAME_IID=len(phases) + 1):
        assert mine == pt._sequence_start_packet()


# -- tracks -------------------------------------------------------------------------------------------------


def native_track(uuid: int, name: bytes, parent: int, rank: int, has_children: bool, engine_id: int | None) -> bytes:
    return native("track", [SEQ, uuid, parent, rank, int(has_children), int(engine_id is not None),
                            0 if engine_id is None else engine_id + 1], [name])


@QUICK
@given(UINT64, NAMES, UINT64, INT32 | st.sampled_from([-1, 0, 127, 128, pt.GPU_RANK, pt.LAYERS_RANK + 3]),
       st.booleans(), st.none() | st.integers(0, U64 - 1) | st.sampled_from(BOUNDARIES[:-1]))
def test_track_descriptor(uuid, name, parent, rank, has_children, engine_id):
    mine = native_track(uuid, name, parent, rank, has_children, engine_id)
    assert mine == pt._track_packet(uuid, as_str(name), parent, rank, has_children, engine_id)
    track = decode(mine).track_descriptor
    assert (track.uuid, track.parent_uuid, track.sibling_order_rank) == (uuid, parent, rank)
    assert track.name == pt._text(as_str(name))
    assert track.HasField("child_ordering") == has_children


@QUICK
@given(INT32 | st.sampled_from([0, 1, 127, 128, 4_194_304]), NAMES)
def test_process_descriptor(pid, name):
    mine = native("process", [SEQ, pt.PROCESS_UUID, pid], [name])
    assert mine == pt._process_packet(pid, as_str(name))
    track = decode(mine).track_descriptor
    assert (track.uuid, track.process.pid, track.process.process_name) == (pt.PROCESS_UUID, pid,
                                                                           pt._text(as_str(name)))
    assert track.child_ordering == pb.TrackDescriptor.EXPLICIT


@QUICK
@given(st.lists(NAMES, min_size=1, max_size=12).flatmap(
    lambda names: st.tuples(st.just(names), st.lists(st.integers(0, len(names) - 1), max_size=15))))
def test_layer_names(names_and_ids):
    names, ids = names_and_ids
    mine = native("layer_names", [SEQ, pt.LAYER_IID_BASE, pt.LAYER_ANNOTATION_IID, *ids], names)
    assert mine == pt._layer_names_packet(ids, [as_str(n) for n in names])
    interned = decode(mine).interned_data
    assert [(e.iid, e.name) for e in interned.event_names] == [
        (pt.LAYER_IID_BASE + i, pt._text(as_str(names[i]))) for i in ids]
    assert [(a.iid, a.name) for a in interned.debug_annotation_names] == [(pt.LAYER_ANNOTATION_IID, "layer")]


def test_a_layer_id_past_the_names_is_refused_as_in_python():
    with pytest.raises(IndexError, match="range"):  # std::out_of_range
        native("layer_names", [SEQ, pt.LAYER_IID_BASE, pt.LAYER_ANNOTATION_IID, 2], [b"a", b"b"])
    with pytest.raises(IndexError):
        pt._layer_names_packet([2], ["a", "b"])


# -- metadata -----------------------------------------------------------------------------------------------

EDGE_METADATA = [
    {},
    {"none": None, "empty": [], "nothing": {}, "nested_nothing": [None, {}, [[]], {"a": None}]},
    {"tool": "trt_trace", "pid": 1234, "ok": True, "no": False, "ratio": 0.5, "neg": -1, "zero": 0},
    {"int64_max": (1 << 63) - 1, "big": 1 << 63, "max": U64, "past": 1 << 64, "below": -(1 << 63) - 1,
     "min": -(1 << 63)},
    {"floats": [0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]},
    {"threads": [{"thread": 1, "dropped": 0}, None, {"thread": 2, "dropped": 7, "note": None}], "argv": ["a", "b"]},
    {"tuple": (1, "x", None), "deep": {"a": {"b": {"c": [1, [2, [3, {"d": "e"}]]]}}}},
    {"odd\udc80key": "v\udcffal", "ctl\x00\x1f": "\x7f", "ünï": "✓", 7: "int key", "object": complex(1, 2)},
    {"long": "x" * 300, "many": list(range(200))},
]


@pytest.mark.parametrize("metadata", EDGE_METADATA)
@pytest.mark.parametrize("prefer_uint", [False, True])
def test_metadata_instant_of_chosen_values(metadata, prefer_uint):
    for ts in (0, 1, 127, 128, 1 << 62, U64):
        expected = pt._metadata_packet(ts, metadata)
        assert native_metadata(ts, metadata, prefer_uint) == expected
        assert native("metadata_bytes", [SEQ, ts, pt.METADATA_UUID, pt.METADATA_NAME_IID],
                      [pt.metadata_annotations(metadata)]) == expected


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(METADATA, st.integers(0, U64), st.booleans())
def test_metadata_instant_of_any_json_like_value(metadata, ts, prefer_uint):
    expected = pt._metadata_packet(ts, metadata)
    assert native_metadata(ts, metadata, prefer_uint) == expected
    assert native("metadata_bytes", [SEQ, ts, pt.METADATA_UUID, pt.METADATA_NAME_IID],
                  [pt.metadata_annotations(metadata)]) == expected


def test_metadata_instant_fields():
    metadata = {"tool": "trt_trace", "n": 3, "skip": None, "list": [1, None, "a"], "d": {"x": -2.5, "y": {}}}
    packet = decode(native_metadata(42, metadata))
    assert (packet.timestamp, packet.trusted_packet_sequence_id) == (42, SEQ)
    event = packet.track_event
    assert (event.type, event.track_uuid, event.name_iid) == (pb.TrackEvent.TYPE_INSTANT, pt.METADATA_UUID,
                                                             pt.METADATA_NAME_IID)
    got = {a.name: a for a in event.debug_annotations}
    assert list(got) == ["tool", "n", "list", "d"]
    assert got["tool"].string_value == "trt_trace" and got["n"].int_value == 3
    assert [v.int_value if v.HasField("int_value") else v.string_value for v in got["list"].array_values] == [1, "a"]
    assert [(e.name, e.double_value) for e in got["d"].dict_entries] == [("x", -2.5)]


@QUICK
@given(NAMES, st.integers(-(1 << 63), (1 << 63) - 1) | st.sampled_from(BOUNDARIES[:-3]), UINT64,
       st.integers(0, U64))
def test_split_end(next_part, part, events, ts):
    """The end record of a split part, all native (trace_file.TraceFile.write's dict)."""
    mine = native("split_end", [SEQ, ts, pt.METADATA_UUID, pt.METADATA_NAME_IID, part, events], [next_part])
    end = {"ended": "split", "next_part": as_str(next_part), "part": part, "events": events}
    assert mine == pt._metadata_packet(ts, end)


# -- real files ---------------------------------------------------------------------------------------------

LAYERS = (("[CONVOLUTION]-[/conv1/convolution] + [RELU]", 40), ('Reformat "fc", 100%; a|b \\ ünï', 5),
          ("{ForeignNode[/attn/MatMul.../attn/Softmax]}", 25))


def native_twin(packet: pb.TracePacket, layer_names: list[str]) -> bytes | None:
    """The native encoding of a non-slice packet of a trt_trace file, from its decoded fields (None: a slice)."""
    if packet.HasField("clock_snapshot"):
        return native("clock_snapshot", [packet.trusted_packet_sequence_id, *(c.timestamp for c in
                                                                             packet.clock_snapshot.clocks)])
    if packet.first_packet_on_sequence:
        return native("sequence_start", [SEQ, len(PHASE_NAMES)],
                      [n.encode() for n in (*PHASE_NAMES, METADATA_EVENT, *ANNOTATIONS)])
    if packet.HasField("track_descriptor"):
        track = packet.track_descriptor
        if track.HasField("process"):
            return native("process", [SEQ, track.uuid, track.process.pid], [track.process.process_name.encode()])
        strings = packet.interned_data.debug_annotation_string_values
        engine_id = strings[0].iid - 1 if strings else None
        return native_track(track.uuid, track.name.encode(), track.parent_uuid, track.sibling_order_rank,
                            track.HasField("child_ordering"), engine_id)
    if packet.HasField("interned_data"):
        names = packet.interned_data.event_names
        ids = [e.iid - pt.LAYER_IID_BASE for e in names]
        assert [layer_names[i] for i in ids] == [e.name for e in names]
        return native("layer_names", [SEQ, pt.LAYER_IID_BASE, pt.LAYER_ANNOTATION_IID, *ids],
                      [n.encode() for n in layer_names])
    event = packet.track_event
    if event.type != pb.TrackEvent.TYPE_INSTANT:
        return None
    annotations = {a.name: a for a in event.debug_annotations}
    ints = [SEQ, packet.timestamp, event.track_uuid, event.name_iid]
    if annotations.get("ended") and annotations["ended"].string_value == "split":
        return native("split_end", [*ints, annotations["part"].int_value, annotations["events"].int_value],
                      [annotations["next_part"].string_value.encode()])
    return native("metadata_bytes", ints, [pb.TrackEvent(debug_annotations=event.debug_annotations)
                                           .SerializeToString()])


def test_every_non_slice_packet_of_real_split_files(tmp_path):
    """A real traced run (stand-in engines, per-layer timing, a size limit that splits the trace): every
    packet of every file that is not a slice, encoded again natively from its fields, is the same bytes."""
    engines = [standin.make_engine(f"engine_{i}_ünï", layers=LAYERS) for i in range(3)]
    with trt_trace.tracing(str(tmp_path / "t.pftrace"), layers=2, max_bytes=20_000) as session:
        for _ in range(120):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
            # The writer splits between the batches it is given: a drain per round makes several batches
            # whatever the machine's load (a busy CI runner may not wake the drain thread in the loop).
            session.drainer.drain_once()
    paths = session.writer.paths
    assert len(paths) >= 3
    layer_names = ops.layer_names()
    kinds = set()
    for path in paths:
        for packet in parse(path):
            twin = native_twin(packet, layer_names)
            if twin is not None:
                assert twin == pt.frame(packet), packet
                kinds.add(packet.WhichOneof("data") or "interned_data")
                kinds |= {a.string_value for a in packet.track_event.debug_annotations if a.name == "ended"}
    assert kinds >= {"clock_snapshot", "track_descriptor", "interned_data", "track_event", "split", "closed"}
