"""Checks of a native Perfetto trace, parsed with the `perfetto` package's protos (no trace_processor).

Written apart from trt_trace/pftrace_reader.py so that the reader and the file are checked
against an independent reading of the format rules (docs/trace-formats.md).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from trace_checks import check_nesting


def parse(path) -> list:
    with open(path, "rb") as f:
        return list(pb.Trace.FromString(f.read()).packet)


@dataclass
class Checked:
    tracks: dict[int, pb.TrackDescriptor] = field(default_factory=dict)
    # (track uuid, name, begin ns, end ns, args, flow_ids, terminating_flow_ids)
    slices: list[tuple] = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)  # annotation name -> the annotation

    def children(self, uuid: int) -> list[pb.TrackDescriptor]:
        return [t for t in self.tracks.values() if t.HasField("parent_uuid") and t.parent_uuid == uuid]

    def path(self, uuid: int) -> list[str]:
        """Track names from the engine track down ("engine", "host (2)"): below the process's
        "engines" group."""
        names = []
        while uuid in self.tracks and not self.tracks[uuid].HasField("process") and self.tracks[uuid].name != "engines":
            names.insert(0, self.tracks[uuid].name)
            uuid = self.tracks[uuid].parent_uuid
        return names


def check_pftrace(packets: list) -> Checked:
    """Asserts the file's structure; returns its tracks and slices (begin/end matched per track in
    Perfetto's order: by timestamp, file order among equal ones)."""
    out = Checked()
    seq_ids = {p.trusted_packet_sequence_id for p in packets}
    assert len(seq_ids) == 1 and 0 not in seq_ids, "one packet sequence, with an id"
    assert packets[0].HasField("clock_snapshot"), "the clock snapshot comes first"
    clocks = {c.clock_id: c.timestamp for c in packets[0].clock_snapshot.clocks}
    assert {pb.BUILTIN_CLOCK_MONOTONIC, pb.BUILTIN_CLOCK_BOOTTIME, pb.BUILTIN_CLOCK_REALTIME} <= set(clocks)
    assert clocks[pb.BUILTIN_CLOCK_BOOTTIME] >= clocks[pb.BUILTIN_CLOCK_MONOTONIC]
    first_state = next(i for i, p in enumerate(packets) if p.sequence_flags)
    first_event = next(i for i, p in enumerate(packets) if p.HasField("track_event"))
    assert first_state < first_event
    state = packets[first_state]
    assert state.sequence_flags & pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    assert state.trace_packet_defaults.timestamp_clock_id == pb.BUILTIN_CLOCK_MONOTONIC
    event_names = {e.iid: e.name for e in state.interned_data.event_names}
    annotation_names = {a.iid: a.name for a in state.interned_data.debug_annotation_names}
    events = []
    for index, p in enumerate(packets):
        if p.HasField("track_descriptor"):
            t = p.track_descriptor
            assert t.uuid not in out.tracks, f"track {t.uuid} described twice in one file"
            out.tracks[t.uuid] = t
        if p.HasField("track_event"):
            ev = p.track_event
            assert ev.track_uuid in out.tracks, "a track is described before its first event"
            assert not p.HasField("timestamp_clock_id"), "timestamps use the sequence's default clock"
            events.append((p.timestamp, index, ev))
    processes = [t for t in out.tracks.values() if t.HasField("process")]
    assert len(processes) == 1
    for t in out.tracks.values():
        if t is not processes[0]:
            assert t.parent_uuid in out.tracks, f"track {t.name} has no parent"
    open_slices: dict[int, list] = defaultdict(list)
    events.sort(key=lambda e: (e[0], e[1]))
    for ts, _index, ev in events:
        if ev.type == pb.TrackEvent.TYPE_SLICE_END:
            assert open_slices[ev.track_uuid], "an end with no open slice on its track"
            uuid, name, begin, args, flows, terminating = open_slices[ev.track_uuid].pop()
            out.slices.append((uuid, name, begin, ts, args, flows, terminating))
            continue
        assert ev.name_iid in event_names, "every event name is interned"
        args = {}
        for a in ev.debug_annotations:
            if a.HasField("name_iid"):
                assert a.name_iid in annotation_names, "every annotation name is interned"
            args[annotation_names[a.name_iid] if a.HasField("name_iid") else a.name] = a
        name = event_names[ev.name_iid]
        if ev.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            plain = {k: getattr(a, a.WhichOneof("value")) for k, a in args.items()}
            open_slices[ev.track_uuid].append((ev.track_uuid, name, ts, plain, list(ev.flow_ids),
                                               list(ev.terminating_flow_ids)))
        else:
            assert ev.type == pb.TrackEvent.TYPE_INSTANT and name == "trt_trace_metadata"
            out.metadata.append(args)
    assert not any(open_slices.values()), "every slice begin has its end"
    by_track = defaultdict(list)
    for uuid, name, begin, end, *_ in out.slices:
        by_track[uuid].append((begin, end, name))
    for items in by_track.values():
        check_nesting(items)
    return out
