"""Reads a native Perfetto trace (writers/perfetto_trace.py) in bounded chunks.

Slice packets of trt_trace's shape (a SLICE_BEGIN followed by its SLICE_END) are decoded by native
code (csrc/readers/perfetto_packets.cpp); the few other packets (track descriptors, interned
names, metadata instants, clock snapshots) by the `perfetto` package's protos here, which also
keep the native code's tables (names, annotation names, tracks) current. Where the file holds
slice packets of another shape (another tool's trace), the rest of it goes through the general
path (perfetto_general.py: a replay by timestamp, in memory). A file cut inside a packet keeps
every whole packet; a trailing byte that is no packet ends the trace there.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ...schema.trace_format import (
    ANNOTATIONS,
    ENGINE_UUID_BASE,
    MERGED_VIEW_TRACK,
    METADATA_EVENT,
    PERFETTO_SUFFIXES,
    PHASE_NAMES,
)
from .. import formats
from ..perfetto_protos import protos, text
from ..tracks import track_id
from . import native, pipeline
from .chrome_json import ChromeJsonReader, Visitor
from .columns import SLICE_DTYPE
from .layer_slices import PYTHON_LANE, LayerPairs, layer_event, layers_lane, track_label, track_tid
from .perfetto_general import (
    SequenceState,
    annotation_value,
    inference_event,
    inference_tid,
    is_inference_track,
    lane_of,
    replay,
)
from .trace_info import TraceFileError, TraceInfo

BLOCK = 8 << 20
SLICES = 1 << 16
MAX_TRACKS = 1 << 22
NEED_MORE, FULL, OTHER, NOT_OURS, GARBAGE = range(5)


class _OpenSlice(ctypes.Structure):
    _fields_ = [("open", ctypes.c_int64), ("open_pos", ctypes.c_int64), ("track", ctypes.c_uint64),
                ("slice", ctypes.c_uint8 * SLICE_DTYPE.itemsize)]


def _varint(buf: bytearray, pos: int, end: int) -> tuple[int, int] | None:
    value = shift = 0
    while pos < end and shift < 64:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
    return None


class PerfettoReader:
    format = "perfetto"

    def __init__(self, path: str) -> None:
        self.path = path
        self.name_phase = np.zeros(256, dtype=np.uint8)
        self.ann_kind = np.zeros(256, dtype=np.uint8)
        self.track_engine = np.full(1 << 10, -1, dtype=np.int64)
        self.track_tid = np.zeros(1 << 10, dtype=np.uint32)
        self.state = SequenceState()
        self.seq_id = 0
        self.layer_tracks: dict[int, tuple[int, str, int]] = {}  # layers track uuid -> (engine id, name, tid)
        self.layer_pairs = LayerPairs()
        self.inference_tracks: dict[int, int] = {}  # inference track uuid -> its JSON tid (docs/inference.md)
        self.inference_pairs = LayerPairs()  # paired as layer slices are: an end right after its begin
        self.force_general = False  # tests: the general path for the whole file

    # -- tables ---------------------------------------------------------------------------------

    def _interned(self, packet: Any) -> None:
        pb = protos()
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            self.name_phase[:] = 0
            self.ann_kind[:] = 0
        self.state.interned(packet)
        for iid, name in self.state.event_names.items():
            if 0 < iid < 256:
                self.name_phase[iid] = PHASE_NAMES.index(name) + 1 if name in PHASE_NAMES else 0
        for iid, name in self.state.annotation_names.items():
            if 0 < iid < 256:
                self.ann_kind[iid] = ANNOTATIONS.index(name) + 1 if name in ANNOTATIONS else 0

    def _track(self, info: TraceInfo, visitor: Visitor, track: Any) -> None:
        if text(track.name) == MERGED_VIEW_TRACK:
            raise TraceFileError(f"{self.path}: a merge written as a Perfetto trace, for the Perfetto UI; trt-trace "
                                 "reads the traces it merged, or the merge written as .json")
        self.state.tracks[track.uuid] = track
        if track.HasField("process"):
            self.state.pid = int(track.process.pid) & 0xFFFFFFFF
            self.state.process_name = text(track.process.process_name)
            proc = info.process(self.state.pid)
            proc.label = self.state.process_name
            return
        pid = self.state.pid
        if is_inference_track(track.uuid):  # an "inference · <thread>" track: its slices paired in _inference_packet
            tid = self.inference_tracks[track.uuid] = inference_tid(track.uuid)
            visitor.event({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": text(track.name)}})
            visitor.event({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
            return
        if track.uuid >= ENGINE_UUID_BASE:
            info.process(pid).engines.setdefault(track.uuid - ENGINE_UUID_BASE, text(track.name))
            return
        engine = self.state.engine_of(track.uuid)
        if engine is None or track.uuid >= MAX_TRACKS:
            return
        layer_lane = layers_lane(text(track.name))
        if layer_lane is None:
            lane, gpu = lane_of(text(track.name))
            tid = track_id(engine[0], lane, gpu)
            name = engine[1] + (" GPU" if gpu else "") + ("" if lane == 0 else f" ({lane + 1})")
        else:  # per-layer timing: its slices are paired in _layer_packet
            tid, name = track_tid(engine[0], layer_lane), track_label(engine[1], layer_lane)
            self.layer_tracks[track.uuid] = (engine[0], engine[1], tid)
        if track.uuid >= len(self.track_engine):
            size = max(track.uuid + 1, 2 * len(self.track_engine))
            self.track_engine = np.concatenate([self.track_engine, np.full(size - len(self.track_engine), -1,
                                                                           dtype=np.int64)])
            self.track_tid = np.concatenate([self.track_tid, np.zeros(size - len(self.track_tid), dtype=np.uint32)])
        self.track_engine[track.uuid] = engine[0] if layer_lane is None else PYTHON_LANE
        self.track_tid[track.uuid] = tid & 0xFFFFFFFF
        visitor.event({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        visitor.event({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})

    def _other(self, info: TraceInfo, visitor: Visitor, packet: Any) -> bool:
        """One packet the fast path left; False where it is a slice packet (not ours: general path)."""
        pb = protos()
        if packet.HasField("trusted_packet_sequence_id") and not self.seq_id:
            self.seq_id = packet.trusted_packet_sequence_id
        if packet.HasField("interned_data"):
            self._interned(packet)
        if packet.HasField("track_descriptor"):
            self._track(info, visitor, packet.track_descriptor)
        if packet.HasField("track_event"):
            ev = packet.track_event
            if ev.type in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END):
                if ev.track_uuid in self.layer_tracks:
                    self._paired_slice(visitor, packet, self.layer_pairs, self._layer_event)
                    return True
                if ev.track_uuid in self.inference_tracks:
                    self._paired_slice(visitor, packet, self.inference_pairs, self._inference_event)
                    return True
                return False
            name, args = self.state.event_fields(ev)
            if ev.type == pb.TrackEvent.TYPE_INSTANT and name == METADATA_EVENT:
                pid = self.state.pid
                info.metadata_event(pid, args)
                visitor.event({"ph": "M", "name": METADATA_EVENT, "pid": pid, "tid": 0, "args": args})
        return True

    def _paired_slice(self, visitor: Visitor, packet: Any, pairs: LayerPairs,
                      event: Callable[[int, str, int, int, dict[str, Any]], dict[str, Any]]) -> None:
        """A layer or inference slice's begin or end (layer_slices.py, docs/inference.md): a begin waits in
        `pairs` for its end, and the pair goes to the visitor as one event, in the JSON writer's shape, made
        by event(track uuid, name, begin ns, end ns, args)."""
        ev = packet.track_event
        if ev.type == protos().TrackEvent.TYPE_SLICE_BEGIN:
            name, args = self.state.event_fields(ev)
            pairs.begin(ev.track_uuid, packet.timestamp, name, args)
            return
        opened = pairs.end(ev.track_uuid, packet.timestamp)
        if opened is not None:
            begin, name, args = opened
            visitor.event(event(ev.track_uuid, name, begin, packet.timestamp, args))

    def _layer_event(self, track: int, name: str, begin: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
        engine_id, engine_name, tid = self.layer_tracks[track]
        return layer_event(name, begin, end, self.state.pid, tid, engine_id, engine_name, args)

    def _inference_event(self, track: int, name: str, begin: int, end: int, args: dict[str, Any]) -> dict[str, Any]:
        return inference_event(name, begin, end, self.state.pid, self.inference_tracks[track], args)

    # -- reading -----------------------------------------------------------------------------------

    def read(self, visitor: Visitor, info: TraceInfo | None = None,
             progress: Callable[[int], None] | None = None) -> TraceInfo:
        """Reads the whole file into `visitor`; returns (and fills, where given) its TraceInfo. A
        producer thread decodes (native code, protobuf for the rare other packets); the visitor
        gets slices and events on this thread, in file order (pipeline.py)."""
        info = info or TraceInfo(self.path, self.format)
        try:
            f = open(self.path, "rb", buffering=0)  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise TraceFileError(f"cannot read {self.path}: {exc.strerror or exc}") from None

        def produce(pipe: pipeline.Pipe) -> None:
            class _Forward(Visitor):
                def slices(self, slices: np.ndarray, buf: Any) -> None:
                    pipe.put((0, slices, buf))

                def event(self, ev: dict[str, Any]) -> None:
                    pipe.put((1, ev, None))

            self._read(f, info, _Forward(), progress)

        def consume(item: tuple) -> None:
            if item[0] == 0:
                visitor.slices(item[1], item[2])
            else:
                visitor.event(item[1])

        with f:
            pipeline.run(produce, consume)
        return info

    def _read(self, f: Any, info: TraceInfo, visitor: Visitor, progress: Callable[[int], None] | None) -> None:
        if self.force_general:
            self._general(b"", f, info, visitor, 0)
            return
        pb = protos()
        so = native.lib()
        out = np.empty(SLICES, dtype=SLICE_DTYPE)  # handed out as it is once filled: a new one then
        state = _OpenSlice()
        n_out = ctypes.c_int64()
        status = ctypes.c_int32()
        try:
            block = min(BLOCK, os.fstat(f.fileno()).st_size + 1)
        except OSError:
            block = BLOCK
        buf = bytearray(block)
        filled = pos = 0
        file_pos = 0  # the file offset of buf[0]
        eof = False
        need_more = True
        while True:
            if need_more and not eof:  # keep the unread tail (an open begin stays in the native state), read on
                if pos:
                    buf[: filled - pos] = buf[pos:filled]
                    file_pos += pos
                    if state.open:
                        state.open_pos -= pos
                    filled -= pos
                    pos = 0
                if len(buf) - filled < max(block // 2, 1):  # never a full buffer: a read of 0 bytes is the end
                    buf.extend(bytes(max(len(buf), block)))
                with memoryview(buf) as view:
                    got = f.readinto(view[filled:]) or 0
                eof = got == 0
                filled += got
                info.bytes_read += got
                if progress:
                    progress(info.bytes_read)
            need_more = False
            base = native.address(buf)
            pos = so.tt_pf_parse(base, filled, pos, self.name_phase.ctypes.data, self.ann_kind.ctypes.data,
                                 self.track_engine.ctypes.data, self.track_tid.ctypes.data, len(self.track_engine),
                                 self.seq_id, self.state.pid, ctypes.byref(state), out.ctypes.data, SLICES,
                                 ctypes.byref(n_out), ctypes.byref(status))
            if n_out.value:
                arr = out[: n_out.value]
                out = np.empty(SLICES, dtype=SLICE_DTYPE)
                ChromeJsonReader._note(info, arr)
                visitor.slices(arr, None)
            code = status.value
            if code == FULL:
                continue
            if code == NEED_MORE:
                if eof:
                    break
                need_more = True
                continue
            if code == GARBAGE:
                break
            if code == OTHER:
                size = _varint(buf, pos + 1, filled)
                assert size is not None
                length, start = size
                try:
                    packet = pb.TracePacket.FromString(bytes(buf[start: start + length]))
                except Exception:  # DecodeError: a corrupt packet ends the trace as a cut one does
                    break
                if self._other(info, visitor, packet):
                    pos = start + length
                    continue
            # NOT_OURS: the rest of the file (from an open begin, if any) by the general path
            if state.open:
                pos = state.open_pos
            self._general(buf[pos:filled], f, info, visitor, file_pos + pos)
            return

    def _general(self, head: bytes | bytearray, f: Any, info: TraceInfo, visitor: Visitor, offset: int) -> None:
        pb = protos()
        data = bytes(head) + f.read()
        info.bytes_read += len(data) - len(head)
        packets = []
        pos = index = 0
        while pos < len(data):
            if data[pos] != 0x0A:
                break
            size = _varint(bytearray(data[pos + 1: pos + 11]), 0, min(10, len(data) - pos - 1))
            if size is None:
                break
            length, used = size
            start = pos + 1 + used
            if start + length > len(data):
                break
            try:
                packets.append((index, pb.TracePacket.FromString(data[start: start + length])))
            except Exception:
                break
            pos = start + length
            index += 1
        for _, packet in packets:  # tracks and metadata as the fast path reports them
            if packet.HasField("track_descriptor"):
                self._track(info, visitor, packet.track_descriptor)
        events, _unclosed = replay(packets, self.state)
        json_side = ChromeJsonReader(self.path)
        converted: list[tuple] = []
        for start in range(0, len(events), SLICES):
            json_side._handle(info, events[start: start + SLICES], visitor, converted)
            json_side._flush_converted(info, converted, visitor)


def sniff(head: bytes) -> bool:
    return head[:1] == b"\x0a"  # the Trace.packet field's tag


formats.register(formats.TraceFormat("perfetto", PERFETTO_SUFFIXES, sniff, PerfettoReader,
                                     description="a Perfetto protobuf trace", noun="Perfetto trace", native=True))

__all__ = ["PerfettoReader", "annotation_value", "sniff"]
