# ruff: noqa
# Today's reader as it was before trt_trace/io/readers (issue 24), kept as the oracle that
# tests/test_readers_oracle.py compares the streaming readers with. Not used by the package.
"""Reads a Perfetto trace written by writers/perfetto_trace.py back, with the `perfetto` package's protos.

No trace_processor: it is a native binary the `perfetto` package downloads on first use. The
trt_trace files are simple enough to rebuild here: slices are SLICE_BEGIN/SLICE_END pairs on named
tracks, replayed in Perfetto's order (by timestamp, file order among equal ones).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from trt_trace.io.perfetto_protos import protos
from trt_trace.schema.trace_format import CATEGORY, ENGINE_UUID_BASE, FLOW_NAME, LAYER_CATEGORY, LAYERS_TRACK, METADATA_EVENT, PERFETTO_SUFFIXES
from .trace_summary import TraceFileError, read_trace_bytes
from trt_trace.io.tracks import layer_track_id, track_id


def looks_like_perfetto(path: str) -> bool:
    """By content: a Perfetto trace's first byte is the Trace.packet tag, JSON starts with [ or {.
    An empty or unreadable file goes by its suffix."""
    try:
        with open(path, "rb") as f:
            first = f.read(1)
    except OSError:
        first = b""
    return first == b"\x0a" if first else path.endswith(PERFETTO_SUFFIXES)


def _complete_length(data: bytes) -> int:
    """The length of the prefix of `data` that holds whole Trace.packet fields (a killed writer's
    file ends in a cut packet)."""
    pos = 0
    n = len(data)
    while pos < n:
        if data[pos] != 0x0A:
            break
        size, shift, p = 0, 0, pos + 1
        while p < n and data[p] & 0x80:
            size |= (data[p] & 0x7F) << shift
            shift += 7
            p += 1
        if p >= n:
            break
        size |= data[p] << shift
        end = p + 1 + size
        if end > n:
            break
        pos = end
    return pos


def read_packets(path: str) -> list[Any]:
    """Every complete TracePacket of the file, in file order."""
    pb = protos()
    data = read_trace_bytes(path)
    from google.protobuf.message import DecodeError

    try:
        return list(pb.Trace.FromString(data).packet)
    except DecodeError:
        pass
    try:  # cut short: keep every whole packet
        return list(pb.Trace.FromString(data[: _complete_length(data)]).packet)
    except DecodeError:
        raise TraceFileError(f"{path} is not a Perfetto trace file") from None


def annotation_value(annotation: Any) -> Any:
    """The JSON-like value of a DebugAnnotation (nested ones as lists and dicts)."""
    if annotation.dict_entries:
        return {entry.name: annotation_value(entry) for entry in annotation.dict_entries}
    if annotation.array_values:
        return [annotation_value(item) for item in annotation.array_values]
    kind = annotation.WhichOneof("value")
    if kind == "legacy_json_value":
        return json.loads(annotation.legacy_json_value)
    return getattr(annotation, kind) if kind else None


@dataclass
class Slice:
    track: int
    name: str
    begin_ns: int
    end_ns: int
    args: dict[str, Any]
    flow_ids: list[int] = field(default_factory=list)
    terminating_flow_ids: list[int] = field(default_factory=list)


@dataclass
class PerfettoTrace:
    tracks: dict[int, Any] = field(default_factory=dict)  # uuid -> TrackDescriptor
    slices: list[Slice] = field(default_factory=list)
    metadata: list[dict[str, Any]] = field(default_factory=list)  # start, then finish
    unclosed: int = 0  # slice begins with no end (a cut file)

    def engine_of(self, uuid: int) -> tuple[int, str] | None:
        """(engine id, engine name) of a track under an engine track."""
        while uuid in self.tracks:
            if uuid >= ENGINE_UUID_BASE:
                return uuid - ENGINE_UUID_BASE, self.tracks[uuid].name
            uuid = self.tracks[uuid].parent_uuid
        return None


def load_trace(path: str) -> PerfettoTrace:
    pb = protos()
    packets = read_packets(path)
    out = PerfettoTrace()
    event_names: dict[int, str] = {}
    annotation_names: dict[int, str] = {}
    events = []
    for index, packet in enumerate(packets):
        if packet.HasField("interned_data"):
            if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
                event_names.clear()
                annotation_names.clear()
            event_names.update((e.iid, e.name) for e in packet.interned_data.event_names)
            annotation_names.update((a.iid, a.name) for a in packet.interned_data.debug_annotation_names)
        if packet.HasField("track_descriptor"):
            out.tracks[packet.track_descriptor.uuid] = packet.track_descriptor
        if packet.HasField("track_event"):
            # Names resolve with the interned state at this point of the file (one sequence).
            ev = packet.track_event
            name = ev.name if ev.HasField("name") else event_names.get(ev.name_iid, "")
            args = {(a.name if a.HasField("name") else annotation_names.get(a.name_iid, "")): annotation_value(a)
                    for a in ev.debug_annotations}
            events.append((packet.timestamp, index, ev, name, args))
    stacks: dict[int, list[Slice]] = {}
    events.sort(key=lambda e: (e[0], e[1]))
    for ts, _index, ev, name, args in events:
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            s = Slice(ev.track_uuid, name, ts, ts, args, list(ev.flow_ids), list(ev.terminating_flow_ids))
            stacks.setdefault(ev.track_uuid, []).append(s)
        elif ev.type == pb.TrackEvent.TYPE_SLICE_END:
            stack = stacks.get(ev.track_uuid)
            if stack:
                s = stack.pop()
                s.end_ns = ts
                out.slices.append(s)
        elif ev.type == pb.TrackEvent.TYPE_INSTANT and name == METADATA_EVENT:
            out.metadata.append(args)
    out.unclosed = sum(len(s) for s in stacks.values())
    return out


def _lane_of(name: str) -> tuple[int, str]:
    """(lane, kind) of a lane track named "host", "host (2)", "GPU", "GPU (3)", "layers", ...: kind is
    "host", "GPU" or "layers"."""
    kind, _, rest = name.partition(" (")
    lane = int(rest.rstrip(")")) - 1 if rest.rstrip(")").isdigit() else 0
    return lane, kind


def load_events(path: str) -> list[dict[str, Any]]:
    """The trace as the Chrome JSON writer would have written it (its tracks, track names, slices,
    launch flows and metadata), for trace_summary.aggregate and `trt-trace merge`."""
    trace = load_trace(path)
    events: list[dict[str, Any]] = [{"ph": "M", "name": METADATA_EVENT, "tid": 0, "args": m} for m in trace.metadata]
    tids: dict[int, int] = {}  # lane track uuid -> the JSON writer's tid
    layer_tracks: set[int] = set()  # tracks of layer slices (their JSON category is LAYER_CATEGORY)
    for uuid, track in trace.tracks.items():
        engine = trace.engine_of(uuid)
        if engine is None or uuid >= ENGINE_UUID_BASE:
            continue
        lane, kind = _lane_of(track.name)
        if kind == LAYERS_TRACK:
            layer_tracks.add(uuid)
            tids[uuid] = tid = layer_track_id(engine[0], lane)
            name = f"{engine[1]} {LAYERS_TRACK}" + ("" if lane == 0 else f" ({lane + 1})")
        else:
            gpu = kind == "GPU"
            tids[uuid] = tid = track_id(engine[0], lane, gpu)
            name = engine[1] + (" GPU" if gpu else "") + ("" if lane == 0 else f" ({lane + 1})")
        events.append({"ph": "M", "name": "thread_name", "tid": tid, "args": {"name": name}})
        events.append({"ph": "M", "name": "thread_sort_index", "tid": tid, "args": {"sort_index": tid}})
    for s in trace.slices:
        engine = trace.engine_of(s.track)
        engine_id, engine_name = engine if engine else (0, "")
        tid = tids.get(s.track, s.track)
        ts = s.begin_ns / 1000.0
        if s.track in layer_tracks:  # the layer's name is the slice's (its annotation is an interned string)
            events.append({"ph": "X", "cat": LAYER_CATEGORY, "name": s.name, "ts": ts,
                           "dur": (s.end_ns - s.begin_ns) / 1000.0, "tid": tid,
                           "args": dict(s.args, engine=engine_name, engine_id=engine_id, layer=s.name)})
            continue
        events.append({"ph": "X", "cat": CATEGORY, "name": s.name, "ts": ts, "dur": (s.end_ns - s.begin_ns) / 1000.0,
                       "tid": tid, "args": dict(s.args, engine=engine_name, engine_id=engine_id)})
        inside = 1 if s.end_ns > s.begin_ns else 0
        for flow in s.flow_ids:  # the JSON's launch arrows (v1), placed as the JSON writer places them
            events.append({"ph": "s", "cat": CATEGORY, "name": FLOW_NAME, "id": flow,
                           "ts": (s.begin_ns + inside) / 1000.0, "tid": tid})
        for flow in s.terminating_flow_ids:
            events.append({"ph": "f", "bp": "e", "cat": CATEGORY, "name": FLOW_NAME, "id": flow,
                           "ts": (s.end_ns - inside) / 1000.0, "tid": tid})
    return events
