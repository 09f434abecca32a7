"""Streams records as a native Perfetto trace (protobuf TrackEvent), as ui.perfetto.dev loads it.

A session's .pftrace is written by the native writer thread (csrc/session/perfetto_trace.h), byte for byte
as this writer writes the same records (tests/test_native_writer.py, and flight dumps:
tests/test_flight_window.py); its metadata encoding (metadata_annotations, start_metadata) is what the
session hands the native writer.

Format decisions (TrackEvent's rules: docs/trace-formats.md):
* A Perfetto `Trace` is a run of length-delimited `packet` fields: the file is appended to batch by
  batch, with nothing to close. A killed process leaves every drained batch loadable (a reader
  skips a cut last packet).
* One packet sequence per file (SEQUENCE_ID). It starts with a ClockSnapshot tying CLOCK_MONOTONIC
  (the records' clock) to BOOTTIME (Perfetto's trace clock) and REALTIME, then a packet with
  SEQ_INCREMENTAL_STATE_CLEARED that makes MONOTONIC the default timestamp clock and interns the
  event names (iid = phase + 1) and slice annotation names (iid = index in ANNOTATIONS + 1).
* Tracks: the process (pid, name) -> "engines" -> one track per engine (named after it, uuid
  ENGINE_UUID_BASE + engine id, so a reader gets the id back) -> lanes "host", "host (2)", ... and
  "GPU", "GPU (2)", ... (tracks.LaneAssigner, as in the JSON: slices on one track always nest),
  and "layers" (TRT_TRACE_LAYERS: a profiled call's layers, docs/layers.md) after them.
  Whole inferences (docs/inference.md): one "inference · <thread>" track per calling thread under the
  process (uuid INFERENCE_UUID_BASE + n), a named begin and its end per inference.
  Lanes get small uuids (one varint byte each in every event). The "engines" group is there for
  the order: the Perfetto UI (v52) lists a process's own child tracks by name, ignoring their
  sibling_order_rank, but honors the rank under any other track, so engines appear in engine-id
  order (as in the JSON) and each engine's GPU lanes under its host lanes.
* Slices: SLICE_BEGIN/SLICE_END pairs, encoded per batch in C++ (csrc/format/perfetto_slices.cpp).
  A begin carries the JSON's args as debug annotations (engine, call_id, thread, device, stream,
  error, nested, captured); the engine is also the parent track. Flows: flow_ids on each launching enqueue
  slice, terminating_flow_ids on the call's GPU slice (flow id = call id).
* Trace-level facts (tool, versions, clock, wall-clock anchors, drops per thread, records written)
  are the debug annotations of INSTANT events named `trt_trace_metadata` on a "trt_trace metadata"
  track: one at the start, one at the finish. Perfetto has no free-form metadata packet a trace can
  carry; annotations show in the UI (click the event), land in trace_processor's args table, and
  `trt-trace summary` reads them back. Lists and dicts are nested annotations. None, [] and {} are
  left out (a reader's missing key): the trace processor aborts the whole load on a JSON `null`
  (`legacy_json_value`), so nothing is written as a legacy JSON value at all, and a nested
  annotation with no entries would read back as nothing.
* The timeline opens on the calls: the Perfetto UI spans it from the first to the last event, so
  the start metadata instant (with the clock snapshot) is written with a file's first records and
  stamped at the first of them (tracing may have started long before the first call, e.g. at
  `import torch` in an AOTInductor package run), and the end one at the last record's end. Their
  `monotonic_ns` args keep the true readings (the wall-clock anchors).
* Each slice names its engine in a debug annotation `engine` (an interned string, iid = engine id
  + 1, interned with the engine's track), so that SQL finds it in `args` as in the JSON.
* Size limit as ChromeJsonWriter (trace_file.py): numbered files trace.1.pftrace, ..., each a
  complete trace that starts again with the clock, the interned names, every track seen so far and
  the start metadata (stamped at that file's first record, so that each part opens on its own calls).
* Perfetto sorts packets by timestamp, keeping file order among equal ones; the C++ encoder writes
  each batch's records by begin (outer first) so that begins and ends at one timestamp nest.
  Records of one call split across two drained batches still nest (the call record comes first,
  and ends are anonymous). Not covered: two calls of one lane from different threads where one
  ends at the very ns the other begins and the later one is drained a batch earlier.
* The sequence id and track uuids are the same in every file (small ids keep events short), so
  traces of several processes cannot be merged by concatenating the files.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ...native import ops
from ...schema.trace_format import (
    ANNOTATIONS,
    ENGINE_UUID_BASE,
    INFERENCE_KINDS,
    INFERENCE_NAME,
    INFERENCE_UUID_BASE,
    LAYERS_TRACK,
    METADATA_EVENT,
    PERFETTO_SUFFIXES,
    PHASE_NAMES,
    Flag,
)
from .. import formats
from ..perfetto_protos import protos
from ..tracks import Track, TrackBook
from .trace_file import StreamedTrace, TraceFile

SUFFIXES = PERFETTO_SUFFIXES
SEQUENCE_ID = 1
PROCESS_UUID = 1
METADATA_UUID = 2
ENGINES_UUID = 3
ENGINES_TRACK = "engines"
FIRST_LANE_UUID = 16
METADATA_TRACK = "trt_trace metadata"
METADATA_NAME_IID = len(PHASE_NAMES) + 1  # event names: phase + 1, then the metadata instant
GPU_RANK = 1 << 20  # GPU lanes sort after the host lanes under their engine
# Layer slices (TRT_TRACE_LAYERS, docs/layers.md): on "layers" tracks after the GPU lanes; a layer's
# name is interned as an event name and as a debug annotation string, both iid LAYER_IID_BASE + its id.
LAYERS_RANK = 2 * GPU_RANK
LAYER_IID_BASE = 1 << 32
LAYER_ANNOTATION_IID = len(ANNOTATIONS) + 1  # the "layer" annotation's name
# The layer encoder's annotation name iids: engine, call_id, thread, device, layer.
# Inference tracks (docs/inference.md): under the process, before the engines where the UI honors the rank.
INFERENCE_RANK = -(1 << 20)
LAYER_ANNOTATION_IIDS = [ANNOTATIONS.index(a) + 1 for a in ("engine", "call_id", "thread", "device")] + [
    LAYER_ANNOTATION_IID]


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def frame(packet: Any) -> bytes:
    """A TracePacket as one `Trace.packet` field (tag, length, bytes): appendable to a trace file."""
    data = packet.SerializeToString()
    return b"\x0a" + _varint(len(data)) + data


def _text(value: str) -> str:
    """A string protobuf can hold (argv may carry undecodable bytes as surrogates)."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def _kept(value: Any) -> bool:
    """Whether a metadata value is written (see the module docstring: no null, no container with
    nothing kept in it, which would be an annotation with no value)."""
    if isinstance(value, dict):
        return any(_kept(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_kept(item) for item in value)
    return value is not None


def fill_annotation(annotation: Any, value: Any) -> None:
    """Sets a DebugAnnotation's value from a JSON-like value (nested for lists and dicts); entries
    that are not _kept() are left out: the trace processor cannot hold a null."""
    if isinstance(value, bool):
        annotation.bool_value = value
    elif isinstance(value, int) and -(1 << 63) <= value < (1 << 63):
        annotation.int_value = value
    elif isinstance(value, int) and 0 <= value < (1 << 64):
        annotation.uint_value = value
    elif isinstance(value, float):
        annotation.double_value = value
    elif isinstance(value, str):
        annotation.string_value = _text(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if _kept(item):
                entry = annotation.dict_entries.add()
                entry.name = _text(str(key))
                fill_annotation(entry, item)
    elif isinstance(value, list | tuple):
        for item in value:
            if _kept(item):
                fill_annotation(annotation.array_values.add(), item)
    else:  # an int past 64 bits, an object: as text
        annotation.string_value = _text(str(value))


def _clock_snapshot_packet() -> bytes:
    pb = protos()
    # Read back to back (a few hundred ns apart: well under the records' precision that matters).
    mono = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    real = time.time_ns()
    packet = pb.TracePacket(trusted_packet_sequence_id=SEQUENCE_ID)
    for clock_id, ns in ((pb.BUILTIN_CLOCK_BOOTTIME, boot), (pb.BUILTIN_CLOCK_MONOTONIC, mono),
                         (pb.BUILTIN_CLOCK_REALTIME, real)):
        packet.clock_snapshot.clocks.add(clock_id=clock_id, timestamp=ns)
    return frame(packet)


def _sequence_start_packet() -> bytes:
    pb = protos()
    packet = pb.TracePacket(trusted_packet_sequence_id=SEQUENCE_ID, first_packet_on_sequence=True,
                            sequence_flags=pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED)
    packet.trace_packet_defaults.timestamp_clock_id = pb.BUILTIN_CLOCK_MONOTONIC
    for phase, name in enumerate(PHASE_NAMES):
        packet.interned_data.event_names.add(iid=phase + 1, name=name)
    packet.interned_data.event_names.add(iid=METADATA_NAME_IID, name=METADATA_EVENT)
    for i, name in enumerate(ANNOTATIONS):
        packet.interned_data.debug_annotation_names.add(iid=i + 1, name=name)
    return frame(packet)


def _layer_names_packet(ids: list[int], names: list[str]) -> bytes:
    """Interns layer names (event name and annotation string, iid LAYER_IID_BASE + id) on the sequence, and the
    "layer" annotation's name with them (a trace without layers is as it was before per-layer timing)."""
    pb = protos()
    packet = pb.TracePacket(trusted_packet_sequence_id=SEQUENCE_ID)
    packet.interned_data.debug_annotation_names.add(iid=LAYER_ANNOTATION_IID, name="layer")
    for i in ids:
        packet.interned_data.event_names.add(iid=LAYER_IID_BASE + i, name=_text(names[i]))
        packet.interned_data.debug_annotation_string_values.add(iid=LAYER_IID_BASE + i, str=_text(names[i]).encode())
    return frame(packet)


def _track_packet(uuid: int, name: str, parent: int, rank: int, has_children: bool = False,
                  engine_id: int | None = None) -> bytes:
    """A named track under `parent`, placed among its siblings by `rank` (the UI's order); an
    engine's track also interns the engine's name for its slices' `engine` annotation."""
    pb = protos()
    track = pb.TrackDescriptor(uuid=uuid, parent_uuid=parent, name=_text(name), sibling_order_rank=rank)
    if has_children:
        track.child_ordering = pb.TrackDescriptor.EXPLICIT
    packet = pb.TracePacket(trusted_packet_sequence_id=SEQUENCE_ID, track_descriptor=track)
    if engine_id is not None:
        packet.interned_data.debug_annotation_string_values.add(iid=engine_id + 1, str=_text(name).encode())
    return frame(packet)


def _fill_metadata(event: Any, metadata: dict[str, Any]) -> None:
    """A TrackEvent's debug annotations: the kept entries of `metadata`, named by their keys."""
    for key, value in metadata.items():
        if _kept(value):
            fill_annotation(event.debug_annotations.add(name=_text(str(key))), value)


def _metadata_packet(ts: int, metadata: dict[str, Any]) -> bytes:
    pb = protos()
    packet = pb.TracePacket(timestamp=ts, trusted_packet_sequence_id=SEQUENCE_ID)
    event = packet.track_event
    event.type = pb.TrackEvent.TYPE_INSTANT
    event.track_uuid = METADATA_UUID
    event.name_iid = METADATA_NAME_IID
    _fill_metadata(event, metadata)
    return frame(packet)


def metadata_annotations(metadata: dict[str, Any]) -> bytes:
    """The encoded `TrackEvent.debug_annotations` fields of a metadata instant, for a native writer's
    metadata_instant() (csrc/format/perfetto_track_packets.h): with them it writes _metadata_packet()."""
    event = protos().TrackEvent()
    _fill_metadata(event, metadata)
    return event.SerializeToString()


def start_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """The session's start metadata as a Perfetto trace states it (its format, its clock's terms)."""
    metadata = dict(metadata, format="perfetto TrackEvent protobuf")
    if "clock_domain" in metadata:
        metadata["clock_domain"] = "CLOCK_MONOTONIC ns (timestamp_clock_id 3; see the ClockSnapshot)"
    return metadata


def _process_packet(pid: int, process_name: str) -> bytes:
    """The process's track (pid, name), its children (the groups) ordered by their ranks."""
    pb = protos()
    process = pb.TrackDescriptor(uuid=PROCESS_UUID, child_ordering=pb.TrackDescriptor.EXPLICIT)
    process.process.pid = pid
    process.process.process_name = _text(process_name)
    return frame(pb.TracePacket(trusted_packet_sequence_id=SEQUENCE_ID, track_descriptor=process))


class PerfettoTraceWriter(StreamedTrace):
    """`write(records)` for each drained batch, then `finish(end_metadata)` once (as ChromeJsonWriter)."""

    def __init__(self, path: str, engine_names: Callable[[], list[str]], lazy: bool = False,
                 max_bytes: int = 0, split: bool = True) -> None:
        """lazy=True: the file is created at the first engine event. max_bytes > 0: size limit per
        file; split=True continues in numbered files, False stops writing (trace_file.py)."""
        protos()  # fail here, at start, if the `perfetto` package is missing
        self.path = path
        # Tracks, lanes, engine and layer names: this writer only encodes them.
        self._book = TrackBook(engine_names, ops.layer_names)
        self._start_metadata: dict[str, Any] = {}  # begin()'s, in every file's start metadata instant
        self._start_tracks = b""  # interned names, the process and its groups: what every file starts with
        self._last_end_ns = 0
        self._tracks: list[bytes] = []  # every engine/lane track descriptor so far, for each new file
        self.gpu_flows = True
        self._pid = os.getpid()
        self._format_buffer = ops.FormatBuffer()  # the formatter's output, reused from batch to batch
        self._layer_buffer = ops.FormatBuffer()
        self._inference_uuids: dict[int, int] = {}  # calling thread -> its inference track's uuid
        self._file = TraceFile(path, self._part_start, lazy=lazy, max_bytes=max_bytes, split=split,
                               end_event=self._part_end_event)

    # -- the file ---------------------------------------------------------------------------------

    def _part_start(self, first_ns: int) -> bytes:
        """What every file starts with: a clock snapshot, the interned names, the process, its groups,
        the start metadata stamped at `first_ns` (the file's first record), every track so far."""
        return (_clock_snapshot_packet() + self._start_tracks + _metadata_packet(first_ns, self._start_metadata)
                + b"".join(self._tracks))

    # -- tracks ----------------------------------------------------------------------------------

    def _descriptors(self, track: Track) -> bytes:
        """The descriptors of a new lane track (and of its engine's track where that is new too)."""
        packets = []
        engine_uuid = ENGINE_UUID_BASE + track.engine_id
        if track.first_of_engine:
            packets.append(_track_packet(engine_uuid, self._book.engine_name(track.engine_id), ENGINES_UUID,
                                         track.engine_id, has_children=True, engine_id=track.engine_id))
        kind, rank = (LAYERS_TRACK, LAYERS_RANK) if track.layers else ("GPU", GPU_RANK) if track.gpu else ("host", 0)
        name = kind + ("" if track.lane == 0 else f" ({track.lane + 1})")
        packets.append(_track_packet(FIRST_LANE_UUID + track.index, name, engine_uuid, rank + track.lane))
        self._tracks += packets
        return b"".join(packets)

    # -- the writer interface --------------------------------------------------------------------

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        """Keeps what every file starts with; it is written with a file's first records (_start_file)."""
        metadata = start_metadata(metadata)
        self._start_metadata = metadata
        self._start_tracks = b"".join([
            _sequence_start_packet(),
            _process_packet(self._pid, process_name),
            _track_packet(ENGINES_UUID, ENGINES_TRACK, PROCESS_UUID, 0, has_children=True),
            _track_packet(METADATA_UUID, METADATA_TRACK, PROCESS_UUID, 1),
        ])

    def _write_inferences(self, inferences: np.ndarray) -> None:
        """Inference slices (docs/inference.md) on one "inference · <thread>" track per calling thread, under the
        process: a begin (name and annotations kind, call_id, thread, error) and its end each. Encoded here, a few
        per batch, as csrc/format/perfetto_track_packets.h inference_slice() does (byte for byte)."""
        pb = protos()
        new: list[bytes] = []
        body: list[bytes] = []
        iid = {name: ANNOTATIONS.index(name) + 1 for name in ("call_id", "thread", "error")}
        for r in inferences.tolist():  # (begin, end, call id, engine id, thread, phase, flags, device, stream)
            begin, end, call_id, thread = int(r[0]), int(r[1]), int(r[2]), int(r[4])
            uuid = self._inference_uuids.get(thread)
            if uuid is None:
                n = len(self._inference_uuids)
                uuid = self._inference_uuids[thread] = INFERENCE_UUID_BASE + n
                new.append(_track_packet(uuid, f"{INFERENCE_NAME} \u00b7 {thread}", PROCESS_UUID, INFERENCE_RANK + n))
            packet = pb.TracePacket(timestamp=begin, trusted_packet_sequence_id=SEQUENCE_ID)
            event = packet.track_event
            event.debug_annotations.add(name="kind").string_value = INFERENCE_KINDS.get(int(r[8]), "other")
            fill_annotation(event.debug_annotations.add(name_iid=iid["call_id"]), call_id)
            event.debug_annotations.add(name_iid=iid["thread"]).int_value = thread
            if int(r[6]) & Flag.ERROR:
                event.debug_annotations.add(name_iid=iid["error"]).bool_value = True
            event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
            event.track_uuid = uuid
            event.name = INFERENCE_NAME
            body.append(frame(packet))
            packet = pb.TracePacket(timestamp=end, trusted_packet_sequence_id=SEQUENCE_ID)
            packet.track_event.type = pb.TrackEvent.TYPE_SLICE_END
            packet.track_event.track_uuid = uuid
            body.append(frame(packet))
        self._tracks += new
        self._file.write(b"".join(new), b"".join(body), len(inferences), int(inferences["begin_ns"].min()))
        self._last_end_ns = max(self._last_end_ns, int(inferences["end_ns"].max()))

    def _write_layers(self, layers: np.ndarray) -> None:
        """Layer slices (docs/layers.md) on "layers" tracks, their names interned once per file."""
        placed, new_ids = self._book.place_layers(layers)
        new = [_layer_names_packet(new_ids, self._book.layer_names)] if new_ids else []
        self._tracks += new  # every part interns them again with its tracks
        new += [self._descriptors(track) for track in placed.new_tracks]
        uuids = FIRST_LANE_UUID + placed.track_index()
        body = ops.layer_perfetto_packets(layers, uuids, SEQUENCE_ID, LAYER_ANNOTATION_IIDS, LAYER_IID_BASE,
                                          self._layer_buffer)
        self._file.write(b"".join(new), body, len(layers), int(layers["begin_ns"].min()))
        # After the write: a part that ends before this batch (split) is stamped at its own last record.
        self._last_end_ns = max(self._last_end_ns, int(layers["end_ns"].max()))

    def _write_calls(self, records: np.ndarray) -> None:
        placed = self._book.place(records)
        uuids = FIRST_LANE_UUID + placed.track_index()
        new_tracks = b"".join(self._descriptors(track) for track in placed.new_tracks)
        body = ops.perfetto_slice_packets(records, uuids, SEQUENCE_ID, list(range(1, len(ANNOTATIONS) + 1)),
                                          self.gpu_flows, self._format_buffer)
        self._file.write(new_tracks, body, len(records), int(records["begin_ns"].min()))
        # After the write: a part that ends before this batch (split) is stamped at its own last record.
        self._last_end_ns = max(self._last_end_ns, int(records["end_ns"].max()))

    def _part_end_event(self, args: dict[str, Any]) -> bytes:
        """The end record of a part the trace goes on from, at that part's last record."""
        return _metadata_packet(self._last_end_ns, args)

    def _closing(self, end: dict[str, Any]) -> tuple[bytes, int]:
        """The end packets (stamped at the last record's end) and the stamp of a file that got no record."""
        ts = int(end.get("monotonic_ns") or time.clock_gettime_ns(time.CLOCK_MONOTONIC))
        empty_start = int(self._start_metadata.get("monotonic_ns") or ts)
        ts = min(ts, self._last_end_ns) if self._last_end_ns else ts  # the timeline ends with the calls
        # A second clock snapshot lets a reader correct wall-clock drift over a long run.
        return _clock_snapshot_packet() + _metadata_packet(ts, end), empty_start

    def finish(self, end_metadata: dict[str, Any]) -> None:
        self._file.finish(*self._closing(self.end_record(end_metadata)))

    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool:
        """Ends the file after a failed write, with what it holds up to its last whole batch; False: no end."""
        closing, _ = self._closing(dict(self.end_record(end_metadata), ended="write failed", error=error))
        return self._file.finish_after_failure(closing)


formats.register_writer("perfetto", PerfettoTraceWriter)
