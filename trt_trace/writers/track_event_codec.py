"""TrackEvent packets encoded by hand (slice begins and ends, instants), for the Perfetto view of a
merge (perfetto_view.py).

Building each packet as a protobuf object (upb) and serializing it made the view take about 50 µs per
slice (a merge of 200,000 calls, 1.1 M slices: 56 s, against 1.4 s for the JSON merge; BENCHMARKS.md),
most of it in the objects. The bytes of a slice's
begin or end are simple (varints, length-delimited strings, fixed64 flow ids), so they are written
here directly. Field numbers and enum values are read from the `perfetto` package's own descriptors,
never written out, and anything but a scalar annotation value (nested lists and dicts) still goes
through the protobuf objects (perfetto_trace.fill_annotation). tests/test_perfetto_view.py decodes
what this writes with those protos and compares it field by field.
"""

from __future__ import annotations

import struct
from typing import Any

from ..perfetto_protos import protos
from .perfetto_trace import _kept, _text, _varint, fill_annotation

_U64 = (1 << 64) - 1
_INT64 = range(-(1 << 63), 1 << 63)
_STRINGS_KEPT = 1 << 16  # names and keys remembered encoded (a trace has few distinct ones)


_SMALL = [_varint(v) for v in range(1 << 14)]  # the varints of one and two bytes, made once


def _uvarint(v: int) -> bytes:
    return _SMALL[v] if v < 16384 else _varint(v)


def _tag(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


class SliceCodec:
    """`begin(...)` / `end(...)` / `instant(...)`: one framed packet (a `Trace.packet` field) of one
    slice's begin or end, or of one instant event."""

    def __init__(self, sequence_id: int) -> None:
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

    def _framed(self, ts: int, event: bytes) -> bytes:
        packet = self._ts + _varint(ts) + self._event + _uvarint(len(event)) + event + self._sequence
        return b"\x0a" + _uvarint(len(packet)) + packet

    def begin(self, ts: int, track: int, name: str, category: str, args: dict[str, Any], flows: list[int],
              terminating: list[int]) -> bytes:
        return self._named(self._begin, ts, track, name, category, args, flows, terminating)

    def instant(self, ts: int, track: int, name: str, args: dict[str, Any]) -> bytes:
        return self._named(self._instant, ts, track, name, "", args, [], [])

    def _named(self, kind: bytes, ts: int, track: int, name: str, category: str, args: dict[str, Any],
               flows: list[int], terminating: list[int]) -> bytes:
        parts = [kind, self._uuid, _uvarint(track), self._name, self._string(name)]
        if category:
            parts += (self._category, self._string(category))
        parts += [self.annotation(str(k), v) for k, v in args.items()]
        parts += [self._flow + struct.pack("<Q", f) for f in flows]
        parts += [self._terminating + struct.pack("<Q", f) for f in terminating]
        return self._framed(ts, b"".join(parts))

    def end(self, ts: int, track: int) -> bytes:
        return self._framed(ts, self._end + self._uuid + _uvarint(track))
