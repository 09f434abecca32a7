"""The general path of the Perfetto reader, for packets the fast path does not take: decodes
them with the `perfetto` package's protos and replays begin/end pairs as Perfetto does (by
timestamp, file order among equal ones; an end closes the innermost open slice of its track).
The replay needs every packet it covers in memory; trt_trace's own files never come here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...schema.trace_format import (
    CATEGORY,
    ENGINE_UUID_BASE,
    FLOW_NAME,
    INFERENCE_CATEGORY,
    INFERENCE_UUID_BASE,
    METADATA_EVENT,
)
from ..perfetto_protos import protos, text
from ..tracks import inference_track_id, track_id
from .layer_slices import layer_event, layers_lane, track_tid


def annotation_value(annotation: Any) -> Any:
    """The JSON-like value of a DebugAnnotation (nested ones as lists and dicts)."""
    if annotation.dict_entries:
        return {text(entry.name): annotation_value(entry) for entry in annotation.dict_entries}
    if annotation.array_values:
        return [annotation_value(item) for item in annotation.array_values]
    kind = annotation.WhichOneof("value")
    if kind == "legacy_json_value":
        try:
            return json.loads(annotation.legacy_json_value)
        except ValueError:
            return text(annotation.legacy_json_value)
    value = getattr(annotation, kind) if kind else None
    return text(value) if isinstance(value, bytes) else value


def lane_of(name: str) -> tuple[int, bool]:
    """(lane, GPU) of a lane track named "host", "host (2)", "GPU", "GPU (3)", ..."""
    kind, _, rest = name.partition(" (")
    lane = int(rest.rstrip(")")) - 1 if rest.rstrip(")").isdigit() else 0
    return max(lane, 0), kind == "GPU"


def is_inference_track(uuid: int) -> bool:
    """Whether a track uuid is one of a native trace's inference tracks (writers/perfetto_trace.py)."""
    return INFERENCE_UUID_BASE <= uuid < ENGINE_UUID_BASE


def inference_tid(uuid: int) -> int:
    """The JSON writer's tid of the inference track of this uuid (the n-th calling thread's)."""
    return inference_track_id(uuid - INFERENCE_UUID_BASE) & 0xFFFFFFFF


def inference_event(name: str, begin_ns: int, end_ns: int, pid: int, tid: int, args: dict[str, Any]) -> dict[str, Any]:
    """An inference slice (docs/inference.md) as the JSON writer writes it, whatever the file's format."""
    return {"ph": "X", "cat": INFERENCE_CATEGORY, "name": name, "ts": begin_ns / 1000.0,
            "dur": (end_ns - begin_ns) / 1000.0, "pid": pid, "tid": tid, "args": args}


@dataclass
class SequenceState:
    """Interned names and tracks as far as the file has been read."""

    event_names: dict[int, str] = field(default_factory=dict)
    annotation_names: dict[int, str] = field(default_factory=dict)
    tracks: dict[int, Any] = field(default_factory=dict)  # uuid -> TrackDescriptor
    pid: int = 0
    process_name: str = ""

    def interned(self, packet: Any) -> None:
        pb = protos()
        if packet.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
            self.event_names.clear()
            self.annotation_names.clear()
        self.event_names.update((e.iid, text(e.name)) for e in packet.interned_data.event_names)
        self.annotation_names.update((a.iid, text(a.name)) for a in packet.interned_data.debug_annotation_names)

    def engine_of(self, uuid: int) -> tuple[int, str] | None:
        """(engine id, engine name) of a track under an engine track."""
        seen = 0
        while uuid in self.tracks and seen < 64:
            if uuid >= ENGINE_UUID_BASE:
                return uuid - ENGINE_UUID_BASE, text(self.tracks[uuid].name)
            uuid = self.tracks[uuid].parent_uuid
            seen += 1
        return None

    def tid_of(self, uuid: int) -> int:
        engine = self.engine_of(uuid)
        if engine is None or uuid >= ENGINE_UUID_BASE or uuid not in self.tracks:
            return uuid & 0xFFFFFFFF
        lane, gpu = lane_of(text(self.tracks[uuid].name))
        return track_id(engine[0], lane, gpu) & 0xFFFFFFFF

    def event_fields(self, ev: Any) -> tuple[str, dict[str, Any]]:
        name = text(ev.name) if ev.HasField("name") else self.event_names.get(ev.name_iid, "")
        args = {(text(a.name) if a.HasField("name") else self.annotation_names.get(a.name_iid, "")): annotation_value(a)
                for a in ev.debug_annotations}
        return name, args


@dataclass
class _Open:
    track: int
    name: str
    begin: int
    args: dict[str, Any]
    flow_ids: list[int]
    terminating: list[int]


def replay(packets: list[tuple[int, Any]], state: SequenceState) -> tuple[list[dict[str, Any]], int]:
    """The JSON writer's events (slices, launch flows, metadata) of (file index, TracePacket) pairs,
    replayed by timestamp; and how many begins found no end (a cut file)."""
    pb = protos()
    events: list[dict[str, Any]] = []
    timed = []
    for index, packet in packets:
        if packet.HasField("interned_data"):
            state.interned(packet)
        if packet.HasField("track_descriptor"):
            state.tracks[packet.track_descriptor.uuid] = packet.track_descriptor
        if packet.HasField("track_event"):
            name, args = state.event_fields(packet.track_event)
            timed.append((packet.timestamp, index, packet.track_event, name, args))
    timed.sort(key=lambda e: (e[0], e[1]))
    stacks: dict[int, list[_Open]] = {}
    pid = state.pid
    for ts, _index, ev, name, args in timed:
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            stacks.setdefault(ev.track_uuid, []).append(
                _Open(ev.track_uuid, name, ts, args, list(ev.flow_ids), list(ev.terminating_flow_ids)))
        elif ev.type == pb.TrackEvent.TYPE_SLICE_END:
            stack = stacks.get(ev.track_uuid)
            if stack:
                events += _slice_events(stack.pop(), ts, state, pid)
        elif ev.type == pb.TrackEvent.TYPE_INSTANT and name == METADATA_EVENT:
            events.append({"ph": "M", "name": METADATA_EVENT, "pid": pid, "tid": 0, "args": args})
    return events, sum(len(s) for s in stacks.values())


def _slice_events(s: _Open, end: int, state: SequenceState, pid: int) -> list[dict[str, Any]]:
    if is_inference_track(s.track) and s.track in state.tracks:
        return [inference_event(s.name, s.begin, end, pid, inference_tid(s.track), s.args)]
    engine = state.engine_of(s.track)
    engine_id, engine_name = engine if engine else (0, "")
    lane = layers_lane(text(state.tracks[s.track].name)) if engine and s.track in state.tracks else None
    if lane is not None:  # a layer slice (TRT_TRACE_LAYERS): as the fast path hands it out
        return [layer_event(s.name, s.begin, end, pid, track_tid(engine_id, lane), engine_id, engine_name, s.args)]
    tid = state.tid_of(s.track)
    out = [{"ph": "X", "cat": CATEGORY, "name": s.name, "ts": s.begin / 1000.0, "dur": (end - s.begin) / 1000.0,
            "pid": pid, "tid": tid, "args": dict(s.args, engine=engine_name, engine_id=engine_id)}]
    inside = 1 if end > s.begin else 0
    for flow in s.flow_ids:
        out.append({"ph": "s", "cat": CATEGORY, "name": FLOW_NAME, "id": flow, "ts": (s.begin + inside) / 1000.0,
                    "pid": pid, "tid": tid})
    for flow in s.terminating:
        out.append({"ph": "f", "bp": "e", "cat": CATEGORY, "name": FLOW_NAME, "id": flow,
                    "ts": (end - inside) / 1000.0, "pid": pid, "tid": tid})
    return out
