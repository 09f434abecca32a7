"""TrackEvent packets of the Perfetto view of a merge (perfetto_view.py): a chunk's slices (each a
SLICE_BEGIN and a SLICE_END packet) and single instants.

Speed. Building each packet as a protobuf object (upb) made the view take about 50 µs per slice (a
merge of 200,000 calls, 1.1 M slices: 56 s, against 1.4 s for the JSON merge; BENCHMARKS.md), and
encoding each one by hand in Python still about 30 µs. So the work is split: this module encodes
each distinct piece of a chunk once — an event name, a category, an argument set (the phases of one
call share theirs) — and the native library (csrc/readers/view_packets.cpp) orders the chunk's
begins and ends and frames every packet from those pieces. Field numbers and enum values are read
from the `perfetto` package's own descriptors, never written out, and handed to the native side as
the constant bytes of each field's tag; anything but a scalar annotation value (nested lists and
dicts) goes through the protobuf objects (perfetto_trace.fill_annotation). tests/test_perfetto_view.py
decodes what this writes with those protos and compares it field by field.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import orjson

from ..perfetto_protos import protos
from ..readers import native
from .perfetto_trace import _kept, _text, _varint, fill_annotation

_U64 = (1 << 64) - 1
_INT64 = range(-(1 << 63), 1 << 63)
_STRINGS_KEPT = 1 << 16  # names and keys remembered encoded (a trace has few distinct ones)
MAX_NS = (1 << 63) - 1  # the latest timestamp a slice may have (the native side's ordering is signed)


_SMALL = [_varint(v) for v in range(1 << 14)]  # the varints of one and two bytes, made once


def _uvarint(v: int) -> bytes:
    return _SMALL[v] if v < 16384 else _varint(v)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


class Slice(Protocol):
    """What a slice of the view holds (perfetto_view._Slice)."""

    track: int  # the track's uuid
    begin: int  # ns, 0 <= begin <= end <= MAX_NS
    end: int
    name: str
    category: str
    args: dict[str, Any]
    flows: list[int]  # flow ids (uint64) this slice starts
    terminating: list[int]  # and ends


class SliceCodec:
    """`slices(chunk)`: the framed packets (`Trace.packet` fields) of a chunk of slices, ordered as
    Perfetto nests and links them; `instant(...)`: one instant event's packet."""

    def __init__(self, sequence_id: int, out_bytes: int = 1 << 20) -> None:
        """out_bytes: the packet buffer's first size (it grows to a chunk's packets)."""
        pb = protos()
        packet = pb.TracePacket.DESCRIPTOR.fields_by_name
        event = pb.TrackEvent.DESCRIPTOR.fields_by_name
        ann = pb.DebugAnnotation.DESCRIPTOR.fields_by_name
        self._ts = _tag(packet["timestamp"].number, 0)
        self._event = _tag(packet["track_event"].number, 2)
        self._sequence = _tag(packet["trusted_packet_sequence_id"].number, 0) + _varint(sequence_id)
        self._begin = _tag(event["type"].number, 0) + _varint(pb.TrackEvent.TYPE_SLICE_BEGIN)
        self._end = _tag(event["type"].number, 0) + _varint(pb.TrackEvent.TYPE_SLICE_END)
        self._instant = _tag(event["type"].number, 0) + _varint(pb.TrackEvent.TYPE_INSTANT)
        self._uuid = _tag(event["track_uuid"].number, 0)
        self._name = _tag(event["name"].number, 2)
        self._category = _tag(event["categories"].number, 2)
        self._annotation = _tag(event["debug_annotations"].number, 2)
        self._flow = _tag(event["flow_ids"].number, 1)
        self._terminating = _tag(event["terminating_flow_ids"].number, 1)
        self._a_name = _tag(ann["name"].number, 2)
        self._a_bool = (_tag(ann["bool_value"].number, 0) + b"\x00", _tag(ann["bool_value"].number, 0) + b"\x01")
        self._a_int = _tag(ann["int_value"].number, 0)
        self._a_uint = _tag(ann["uint_value"].number, 0)
        self._a_double = _tag(ann["double_value"].number, 1)
        self._a_string = _tag(ann["string_value"].number, 2)
        self._pb = pb
        self._strings: dict[str, bytes] = {}
        self._annotations: dict[tuple, bytes] = {}
        # The constant pieces, in the order of csrc/readers/view_packets.cpp's Constant enum.
        constants = [b"\x0a", self._ts, self._event, self._sequence, self._begin, self._end, self._uuid, self._flow,
                     self._terminating]
        self._constants, self._constant_off = native.packed(constants)
        self._out = bytearray(max(1, out_bytes))

    def _string(self, value: str) -> bytes:
        """Length and UTF-8 bytes of a string field (remembered: names and keys repeat)."""
        out = self._strings.get(value)
        if out is None:
            data = _text(value).encode("utf-8")
            out = _uvarint(len(data)) + data
            if len(self._strings) >= _STRINGS_KEPT:
                self._strings.clear()
            self._strings[value] = out
        return out

    def _value(self, value: Any) -> bytes | None:
        """A scalar annotation value's field; None for anything else."""
        if isinstance(value, bool):
            return self._a_bool[value]
        if isinstance(value, int):
            if value in _INT64:
                return self._a_int + (_SMALL[value] if 0 <= value < 16384 else _varint(value & _U64))
            return self._a_uint + _varint(value) if 0 <= value <= _U64 else None
        if isinstance(value, float):
            return self._a_double + struct.pack("<d", value)
        if isinstance(value, str):
            return self._a_string + self._string(value)
        return None

    def annotation(self, key: str, value: Any) -> bytes:
        """One debug annotation field, or b"" for a value the trace processor cannot hold (a null, an
        empty container). Scalars are remembered by key and value (engine, thread, device repeat)."""
        if isinstance(value, str | int | float):
            try:
                return self._annotations[(key, type(value), value)]
            except KeyError:
                pass
            out = self._annotation_of(key, value)
            if len(self._annotations) >= _STRINGS_KEPT:
                self._annotations.clear()
            self._annotations[(key, type(value), value)] = out
            return out
        return self._annotation_of(key, value)

    def _annotation_of(self, key: str, value: Any) -> bytes:
        if not _kept(value):
            return b""
        scalar = self._value(value)
        if scalar is not None:
            body = self._a_name + self._string(key) + scalar
        else:
            probe = self._pb.DebugAnnotation()
            fill_annotation(probe, value)
            if not probe.ListFields():
                return b""
            probe.name = _text(key)
            body = probe.SerializeToString()
        return self._annotation + _uvarint(len(body)) + body

    def annotations(self, args: dict[str, Any]) -> bytes:
        """An argument set's debug annotation fields, in its order."""
        return b"".join([self.annotation(str(k), v) for k, v in args.items()])

    def instant(self, ts: int, track: int, name: str, args: dict[str, Any]) -> bytes:
        event = b"".join([self._instant, self._uuid, _uvarint(track), self._name, self._string(name),
                          self.annotations(args)])
        packet = self._ts + _varint(ts) + self._event + _uvarint(len(event)) + event + self._sequence
        return b"\x0a" + _uvarint(len(packet)) + packet

    def slices(self, chunk: Sequence[Slice]) -> bytes:
        """The begin and end packets of a chunk's slices: at one timestamp ends before begins, a flow's
        start before its end (Perfetto matches a flow's ids in time order, and a GPU span can begin
        with the enqueue that launched it), outer begins before inner ones, inner ends before outer
        ones (the order is the native side's; this builds its columns)."""
        n = len(chunk)
        if not n:
            return b""
        pieces: list[bytes] = [b""]  # piece 0: nothing (no category, no annotations)
        names: dict[str, int] = {}
        categories: dict[str, int] = {"": 0}
        argument_sets: dict[Any, int] = {}
        name = [0] * n
        category = [0] * n
        annotations = [0] * n
        flow_slice: list[int] = []
        flow_id: list[int] = []
        flow_end: list[int] = []
        last_args: Any = None
        last_piece = 0
        for i, s in enumerate(chunk):
            k = names.get(s.name)
            if k is None:
                k = names[s.name] = len(pieces)
                pieces.append(self._name + self._string(s.name))
            name[i] = k
            k = categories.get(s.category)
            if k is None:
                k = categories[s.category] = len(pieces)
                pieces.append(self._category + self._string(s.category))
            category[i] = k
            args = s.args
            if args:
                if args is not last_args and args != last_args:
                    try:  # an argument set by its JSON text: the phases of one call share one
                        key = orjson.dumps(args)
                    except TypeError:  # an integer past 64 bits, a key that is no string
                        key = id(args)
                    last_piece = argument_sets.get(key, 0)
                    if not last_piece:
                        last_piece = argument_sets[key] = len(pieces)
                        pieces.append(self.annotations(args))
                    last_args = args
                annotations[i] = last_piece
            if s.flows or s.terminating:
                for f in s.flows:
                    flow_slice.append(i)
                    flow_id.append(f)
                    flow_end.append(0)
                for f in s.terminating:
                    flow_slice.append(i)
                    flow_id.append(f)
                    flow_end.append(1)
        begin = np.fromiter((s.begin for s in chunk), dtype=np.uint64, count=n)
        end = np.fromiter((s.end for s in chunk), dtype=np.uint64, count=n)
        track = np.fromiter((s.track for s in chunk), dtype=np.uint64, count=n)
        name = np.array(name, dtype=np.int64)
        category = np.array(category, dtype=np.int64)
        annotations = np.array(annotations, dtype=np.int64)
        blob, piece_off = native.packed(pieces)
        fs = np.array(flow_slice, dtype=np.int64)
        fi = np.array(flow_id, dtype=np.uint64)
        fe = np.array(flow_end, dtype=np.uint8)
        so = native.lib()
        while True:
            written = so.tt_view_packets(n, begin.ctypes.data, end.ctypes.data, track.ctypes.data, name.ctypes.data,
                                         category.ctypes.data, annotations.ctypes.data, native.address(blob),
                                         piece_off.ctypes.data, len(fs), fs.ctypes.data, fi.ctypes.data, fe.ctypes.data,
                                         native.address(self._constants), self._constant_off.ctypes.data,
                                         native.address(self._out), len(self._out))
            if written >= 0:
                return bytes(memoryview(self._out)[:written])
            self._out = bytearray(-written)
