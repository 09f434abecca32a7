"""A Chrome trace JSON (a merged or sliced trace, as `trt-trace merge` and `slice` write it) re-encoded
as a native Perfetto trace: `trt-trace merge ... -o all.pftrace`, `trt-trace slice ... -o window.pftrace`.

The merge itself writes Chrome JSON (merge.py: trt_trace's events re-encoded with new pids, times and
flow ids, a profiler's capture placed beside them); this module turns that file, streamed in chunks,
into TrackEvent packets that the Perfetto UI and its trace processor read as they read the JSON:

* every JSON process (pid) is a process track (ProcessDescriptor: pid, name, `process_sort_index` as
  its legacy sort index), every (pid, tid) a thread track (ThreadDescriptor: the same pid and tid, the
  `thread_name`), so tracks, their names and their order are the JSON import's; a tid past 32 bits
  (the JSON's lanes past 500) becomes a track of its own under the process, named "<name> <tid>";
* every complete event ("X") is a SLICE_BEGIN / SLICE_END pair on its thread's track, with its name,
  category and args (debug annotations, nested for lists and dicts, as the native writer writes its
  metadata); timestamps are the JSON's own, µs with three decimals made ns, on Perfetto's default
  clock: both files open on the same timeline, to the ns;
* flow events ("s", "f" with `"bp": "e"`, trt_trace's launch arrows) become flow ids on the slice
  that encloses them on their track (the innermost one), as Perfetto's JSON importer binds them;
  a flow event whose slice is not found within its chunk or the one before it is left out, and counted;
* `trt_trace_metadata` events are INSTANT events of that name on a "trt_trace metadata" track of their
  process, stamped at the file's first timestamp, their args as annotations;
* other event kinds (counters, instants, async events: none of which trt_trace's merge writes) are
  left out, and counted.

The first packet's track, MERGED_VIEW_TRACK, marks the file: trt_trace's own readers expect the
native writer's layout (engine tracks, lanes; readers/perfetto.py) and a merged view has several
processes in one sequence, so they refuse it in one line and point to the JSON (the Perfetto UI is
what this file is for).

Memory: one chunk of events (captures/chrome_stream.py) and the slices of the chunk before it (for
flows that come after a chunk boundary) at a time.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..captures.chrome_stream import ChromeStream
from ..io.perfetto_protos import protos
from ..io.writers.perfetto_trace import frame
from ..io.writers.track_event_codec import MAX_NS, SliceCodec
from ..schema.trace_format import MERGED_VIEW_TRACK, METADATA_EVENT

SEQUENCE_ID = 1
_MARKER_UUID = 1
_INT32_MAX = (1 << 31) - 1


@dataclass
class ViewReport:
    """What the conversion wrote and what it left out."""

    slices: int = 0
    flows: int = 0
    unbound_flows: int = 0  # flow events with no enclosing slice on their track
    other_events: int = 0  # event kinds a view does not carry (counted, never silently lost)
    skipped: dict[str, int] = field(default_factory=dict)  # ph -> count

    def notes(self, source: str) -> list[str]:
        out = []
        if self.unbound_flows:
            out.append(f"{source}: {self.unbound_flows} flow event(s) with no slice around them on their track "
                       "left out of the Perfetto file")
        if self.other_events:
            kinds = ", ".join(f"{k!r} x{v}" for k, v in sorted(self.skipped.items()))
            out.append(f"{source}: {self.other_events} event(s) of kinds a Perfetto view does not carry left out "
                       f"({kinds})")
        return out


@dataclass(slots=True)
class _Slice:
    track: int  # uuid
    begin: int  # ns
    end: int
    name: str
    category: str
    args: dict[str, Any]
    flows: list[int] = field(default_factory=list)
    terminating: list[int] = field(default_factory=list)


def _ns(us: Any) -> int | None:
    """µs as ns, where it is a time a Perfetto timestamp holds (a uint64; trt_trace's are far below 2**63)."""
    kind = type(us)
    if kind is float:
        scaled = us * 1000
        if not math.isfinite(scaled):
            return None
        ns = round(scaled)
    elif kind is int:
        ns = us * 1000
    else:
        return None
    return ns if 0 <= ns < (1 << 63) else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


class _Encoder:
    """The view's packets into `out`: the marker, process and thread tracks as the JSON names them,
    metadata instants and each chunk's slices (these two through the hand encoder)."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.pb = protos()
        self.next_uuid = _MARKER_UUID + 1
        self.process_uuid: dict[int, int] = {}
        self.thread_uuid: dict[tuple[int, int], int] = {}
        self.process_meta: dict[int, dict[str, Any]] = {}  # pid -> name, sort index (as last seen)
        self.thread_meta: dict[tuple[int, int], dict[str, Any]] = {}
        self.metadata_uuid: dict[int, int] = {}
        self.first_ns: int | None = None
        self.pending_metadata: list[tuple[int, dict[str, Any]]] = []  # until a first timestamp is known
        self.codec = SliceCodec(SEQUENCE_ID)
        self.write_packet(self._packet(flags=True, track=self._marker()))

    # -- packets ---------------------------------------------------------------------------------

    def _packet(self, flags: bool = False, track: Any = None) -> Any:
        packet = self.pb.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        if flags:
            packet.sequence_flags = self.pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        if track is not None:
            packet.track_descriptor.CopyFrom(track)
        return packet

    def write_packet(self, packet: Any) -> None:
        self.out.write(frame(packet))

    def _marker(self) -> Any:
        t = self.pb.TrackDescriptor()
        t.uuid = _MARKER_UUID
        t.name = MERGED_VIEW_TRACK
        return t

    # -- tracks ----------------------------------------------------------------------------------

    def _uuid(self) -> int:
        self.next_uuid += 1
        return self.next_uuid

    def process(self, pid: int) -> int:
        uuid = self.process_uuid.get(pid)
        if uuid is None:
            uuid = self.process_uuid[pid] = self._uuid()
            self._describe_process(pid)
        return uuid

    def _describe_process(self, pid: int) -> None:
        t = self.pb.TrackDescriptor()
        t.uuid = self.process_uuid[pid]
        t.process.pid = pid if 0 <= pid <= _INT32_MAX else pid & _INT32_MAX
        meta = self.process_meta.get(pid, {})
        if isinstance(meta.get("name"), str):
            t.process.process_name = meta["name"]
        if _int(meta.get("sort_index")) is not None and abs(meta["sort_index"]) <= _INT32_MAX:
            t.process.legacy_sort_index = meta["sort_index"]
        self.write_packet(self._packet(track=t))

    def thread(self, pid: int, tid: int) -> int:
        key = (pid, tid)
        uuid = self.thread_uuid.get(key)
        if uuid is None:
            self.process(pid)
            uuid = self.thread_uuid[key] = self._uuid()
            self._describe_thread(pid, tid)
        return uuid

    def _describe_thread(self, pid: int, tid: int) -> None:
        t = self.pb.TrackDescriptor()
        t.uuid = self.thread_uuid[(pid, tid)]
        meta = self.thread_meta.get((pid, tid), {})
        name = meta.get("name") if isinstance(meta.get("name"), str) else None
        if 0 <= tid <= _INT32_MAX and 0 <= pid <= _INT32_MAX:
            t.thread.pid, t.thread.tid = pid, tid
            if name is not None:
                t.thread.thread_name = name
            if _int(meta.get("sort_index")) is not None and abs(meta["sort_index"]) <= _INT32_MAX:
                t.thread.legacy_sort_index = meta["sort_index"]
        else:  # no thread id Perfetto can hold: a named track of the process
            t.parent_uuid = self.process_uuid[pid]
            t.name = f"{name or 'thread'} {tid}"
        self.write_packet(self._packet(track=t))

    def metadata(self, ev: dict[str, Any]) -> None:
        """An M event: track names and order (described again when they change), or trt_trace's metadata."""
        pid, tid, args = _int(ev.get("pid")), _int(ev.get("tid")), ev.get("args")
        if pid is None or not isinstance(args, dict):
            return
        name = ev.get("name")
        if name in ("process_name", "process_sort_index"):
            key = "name" if name == "process_name" else "sort_index"
            self.process_meta.setdefault(pid, {})[key] = args.get(key)
            if pid in self.process_uuid:
                self._describe_process(pid)
        elif name in ("thread_name", "thread_sort_index") and tid is not None:
            key = "name" if name == "thread_name" else "sort_index"
            self.thread_meta.setdefault((pid, tid), {})[key] = args.get(key)
            if (pid, tid) in self.thread_uuid:
                self._describe_thread(pid, tid)
        elif name == METADATA_EVENT:
            if self.first_ns is None:
                self.pending_metadata.append((pid, args))
            else:
                self._metadata_instant(pid, args)

    def _metadata_instant(self, pid: int, args: dict[str, Any]) -> None:
        uuid = self.metadata_uuid.get(pid)
        if uuid is None:
            parent = self.process(pid)
            uuid = self.metadata_uuid[pid] = self._uuid()
            t = self.pb.TrackDescriptor()
            t.uuid, t.parent_uuid, t.name = uuid, parent, "trt_trace metadata"
            self.write_packet(self._packet(track=t))
        self.out.write(self.codec.instant(self.first_ns or 0, uuid, METADATA_EVENT, args))

    def timestamp_seen(self, ns: int) -> None:
        if self.first_ns is None:
            self.first_ns = ns
            for pid, args in self.pending_metadata:
                self._metadata_instant(pid, args)
            self.pending_metadata.clear()

    # -- slices ----------------------------------------------------------------------------------

    def slices(self, slices: list[_Slice]) -> None:
        """Begin and end packets of a chunk's slices, in the order Perfetto nests and links them
        (SliceCodec.slices)."""
        self.out.write(self.codec.slices(slices))


class _TrackSlices:
    """A chunk's slices by track, sorted by begin: the slice that encloses a flow event is found by bisection."""

    def __init__(self, slices: list[_Slice]) -> None:
        self.by_track: dict[int, list[_Slice]] = {}
        for s in slices:
            self.by_track.setdefault(s.track, []).append(s)
        self.begins: dict[int, list[int]] = {}
        for track, group in self.by_track.items():
            group.sort(key=lambda s: (s.begin, -s.end))
            self.begins[track] = [s.begin for s in group]

    def around(self, track: int, ns: int) -> _Slice | None:
        """The innermost slice of `track` around `ns` (Perfetto's binding of a v1 flow event): of the
        slices that began by then and have not ended, the one that began last (slices of a track nest)."""
        group = self.by_track.get(track)
        if not group:
            return None
        k = bisect.bisect_right(self.begins[track], ns) - 1
        for j in range(k, max(k - 64, -1), -1):  # a few nested slices at most lie between
            if group[j].end >= ns:
                return group[j]
        return None


@contextlib.contextmanager
def _collections_off() -> Iterator[None]:
    """The garbage collector off (as it was found after): a chunk is ~100,000 fresh dicts, and
    collections in it took a third of the conversion's time and freed nothing."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def convert(json_path: str, out_path: str, chunk_bytes: int | None = None) -> ViewReport:
    """Writes the Chrome trace at `json_path` as a Perfetto trace at `out_path` (replaced only once
    complete); raises OSError (the output) or captures.chrome_stream.CaptureError (the input).
    chunk_bytes: the JSON read per chunk (tests: small chunks put flows and slices apart)."""
    report = ViewReport()
    directory = os.path.dirname(os.path.abspath(out_path))
    tmp = os.path.join(directory, f".{os.path.basename(out_path)}.{os.getpid()}.part")
    try:
        with _collections_off(), open(tmp, "wb") as out:
            enc = _Encoder(out)
            threads = enc.thread_uuid
            held: list[_Slice] = []  # the chunk before: flows at a chunk's start may bind to its slices
            stream = ChromeStream(json_path) if chunk_bytes is None else ChromeStream(json_path, chunk_bytes)
            for chunk in stream:
                current: list[_Slice] = []
                flows: list[tuple[dict[str, Any], int, int]] = []
                for ev in chunk:
                    if not isinstance(ev, dict):
                        continue
                    ph = ev.get("ph")
                    if ph == "M":
                        enc.metadata(ev)
                        continue
                    pid, tid, ts = _int(ev.get("pid")), _int(ev.get("tid")), _ns(ev.get("ts"))
                    if pid is None or tid is None or ts is None or ph not in ("X", "s", "f"):
                        report.other_events += 1
                        key = str(ph)
                        report.skipped[key] = report.skipped.get(key, 0) + 1
                        continue
                    if enc.first_ns is None:
                        enc.timestamp_seen(ts)
                    track = threads.get((pid, tid)) or enc.thread(pid, tid)
                    if ph == "X":
                        dur = _ns(ev.get("dur")) or 0
                        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
                        current.append(_Slice(track, ts, min(ts + max(dur, 0), MAX_NS), str(ev.get("name", "")),
                                              str(ev.get("cat", "")), args))
                    else:
                        flows.append((ev, ts, track))
                here, before = _TrackSlices(current), _TrackSlices(held)
                for ev, ts, track in flows:
                    s = here.around(track, ts) or before.around(track, ts)
                    flow_id = _int(ev.get("id"))
                    if s is None or flow_id is None or not 0 <= flow_id < (1 << 64):
                        report.unbound_flows += 1
                        continue
                    (s.flows if ev.get("ph") == "s" else s.terminating).append(flow_id)
                    report.flows += ev.get("ph") == "s"
                enc.slices(held)
                report.slices += len(held)
                held = current
            enc.slices(held)
            report.slices += len(held)
            enc.timestamp_seen(0)  # a file with no timed event: its metadata still, at 0
        os.chmod(tmp, 0o644)
        os.replace(tmp, out_path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return report
