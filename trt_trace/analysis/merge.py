"""Merges per-process traces (one per rank of a torchrun job, say) into one Chrome JSON trace.

Each input process becomes a process group of its own, named "rank 1 · serve.py · host" and ordered
by rank (process_sort_index). What has to change so that the processes stay apart in one file:
* pid: two inputs may carry the same OS pid (processes on different hosts, or a pid reused
  later); the later one gets a free pid. Its OS pid goes into its process name and the metadata.
* tid: track ids stay as they are. They are small numbers derived from engine ids, so rank 0 and
  rank 1 both have a track 1000; viewers key a thread by (pid, tid), and the Perfetto UI lists a
  process's tracks by tid and shows the tid in the track's name, so a renumbered track would move
  out of its place under its engine.
* flow ids: the launch arrows' ids are per-process call ids, and viewers match flows by id across
  the whole file; each process's flow ids move into a range of their own.

Clocks. Every trace's ts is CLOCK_MONOTONIC (time since the host booted), which all processes of
one host share, and each trace records anchors: pairs (monotonic_ns, wall_ns) read together, at
its start and at its end. So:
* inputs from the reference host (the host of the lowest rank) keep their timestamps: the merged
  trace is on that host's monotonic clock;
* an input from another host is shifted by (its host's wall_ns - monotonic_ns) - (the reference
  host's wall_ns - monotonic_ns): that maps "this much after its boot" to "the same wall-clock
  instant, as time after the reference host's boot". Each host's (wall - monotonic) is the mean
  over all anchors of all its inputs, so every input of one host gets the same shift and processes
  of one host stay exactly aligned with each other. Across hosts the alignment is as good as the
  hosts' wall clocks agree (NTP: typically well under a millisecond in a cluster; PTP: µs).
* If a shift made a timestamp negative (an input from before the reference host booted), all
  events move later by the same amount, since viewers drop negative timestamps.

Streaming, in two passes over the inputs (trt_trace/io/readers): the first reads each input's
metadata, first timestamp and whole calls (the clock shifts need every input's anchors, the
order every input's rank); the second writes the merged file while it reads the inputs again:
trt_trace's own events are re-encoded by the writer's encoder (csrc/format) with their new pid,
time and flow id, any other event through orjson. Calls cut by a kill are left out with all
their slices and their launch flows. The merge's own metadata is the file's last event and
carries `"ended": "closed"`: a merged file cut short has none.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, BinaryIO

import numpy as np
import orjson

from ..captures import merge_capture
from ..io.output_files import is_plain_or_new, output_problem, put_in_place
from ..io.readers import CallsRead, TraceFileError, Visitor, Window, native, read, read_calls
from ..io.readers.columns import NATIVE, keys_of
from ..io.readers.end_notes import end_line
from ..io.readers.trace_info import CLOSED, CUT_SHORT, SPLIT, bad_input_rc, ended_of, is_end_metadata
from ..schema.trace_format import METADATA_EVENT, PERFETTO_SUFFIXES
from ..schema.version import __version__
from .perfetto_view import convert

FLOW_ID_STRIDE = 1 << 40  # process k's flow ids: id + k * stride (call ids never come near 2**40)
PID_STRIDE = 1 << 22  # Linux pids are below 2**22: pid + k * stride never clashes with a real one


def json_output_problem(output: str, verb: str) -> str | None:
    """Why `output` is no name for what slice writes (Chrome JSON only: a Perfetto suffix would name
    a file that holds JSON); None when it is one."""
    if output.endswith(PERFETTO_SUFFIXES):
        return f"{output}: {verb} writes Chrome JSON (which the Perfetto UI opens); name it .json"
    return None


class MergeError(ValueError):
    """An input or output the merge cannot use (the message is one line and names the file); rc: the exit
    code it means (2: bad input, such as a file that is not a trace or an input given as the output)."""

    def __init__(self, message: str, rc: int = 1) -> None:
        super().__init__(message)
        self.rc = rc


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


@dataclass
class ProcessTrace:
    """One traced process: its file(s) (a process past the size limit wrote trace.json, trace.1.json, ...)."""

    files: list[str]
    reads: list[CallsRead]
    start: dict[str, Any]
    end: dict[str, Any] | None
    pid: int = 0  # in the merged file
    offset_ns: int = 0  # added to every timestamp
    kept: list[np.ndarray | None] = field(default_factory=list)  # per file: the calls' keys a window kept

    @property
    def key(self) -> tuple[str, int, int]:
        """Same host, pid and start anchor: parts of one process."""
        return (self.host, self.os_pid, _int(self.start.get("monotonic_ns", 0)))

    @property
    def host(self) -> str:
        return str(self.start.get("host") or "?")

    @property
    def os_pid(self) -> int:
        return _int(self.start.get("pid", 0)) & 0xFFFFFFFF

    @property
    def rank(self) -> int | None:
        rank = self.start.get("rank")
        return rank if isinstance(rank, int) and not isinstance(rank, bool) else None

    @property
    def partial_calls(self) -> int:
        return sum(len(r.partial) for r in self.reads)

    @property
    def calls(self) -> int:
        return sum(r.kept for r in self.reads)

    @property
    def ended(self) -> str:
        return ended_of(self.end) if self.end is not None else CUT_SHORT

    @property
    def origin_ns(self) -> int | None:
        lows = [r.info.origin_ns for r in self.reads if r.info.origin_ns is not None]
        return min(lows) if lows else None

    def anchors(self) -> list[tuple[int, int]]:
        out = []
        for meta in (self.start, self.end or {}):
            mono, wall = meta.get("monotonic_ns"), meta.get("wall_ns")
            if isinstance(mono, int) and isinstance(wall, int) and not isinstance(mono, bool):
                out.append((mono, wall))
        return out

    def label(self) -> str:
        """rank · program · host; the OS pid only where the merged file had to give the process
        another pid (the viewers show the file's pid after every process name)."""
        parts = [] if self.rank is None else [f"rank {self.rank}"]
        if self.start.get("program"):
            parts.append(str(self.start["program"]))
        parts.append(self.host)
        if self.pid != self.os_pid:
            parts.append(f"pid {self.os_pid}")
        return " · ".join(parts)


def read_trace(path: str, window: Window | None = None) -> ProcessTrace:
    """The first pass over one per-process trace written by trt_trace (a file cut short is fine)."""
    if not os.path.exists(path):
        raise MergeError(f"{path}: no such file")
    try:
        calls = read_calls(path, lambda calls, info: None)
    except TraceFileError as exc:
        raise MergeError(str(exc), rc=bad_input_rc(exc)) from None
    metas = [m for p in calls.info.processes.values() for m in p.metas]
    if any("merged" in m for m in metas):
        raise MergeError(f"{path} is already a merged trace; merge the per-process traces instead")
    starts = [m for m in metas if m.get("tool") == "trt_trace"]
    if not starts:
        raise MergeError(f"{path} is not a trt_trace trace (no trt_trace_metadata start event)", rc=2)
    ends = [m for m in metas if is_end_metadata(m)]
    return ProcessTrace([path], [calls], starts[0], ends[-1] if ends else None)


def _join_parts(traces: list[ProcessTrace]) -> list[ProcessTrace]:
    """Files of one process (split at the size limit) become one ProcessTrace."""
    by_key: dict[tuple[str, int, int], ProcessTrace] = {}
    for t in traces:
        first = by_key.get(t.key)
        if first is None:
            by_key[t.key] = t
            continue
        if any(os.path.samefile(t.files[0], f) for f in first.files):
            raise MergeError(f"{t.files[0]} is given twice")
        first.files += t.files
        first.reads += t.reads
        first.end = _process_end(first.end, t.end)
    for t in by_key.values():  # parts in the order they were written, whatever order they were given in
        order = sorted(range(len(t.files)), key=lambda k: _part_order(t.reads[k]))
        t.files = [t.files[k] for k in order]
        t.reads = [t.reads[k] for k in order]
    return list(by_key.values())


def _part_order(read: CallsRead) -> tuple[int, int]:
    """A part's place in its split trace: the parts that ended "split" first, by their first slice (the
    shell's `big*.json` gives big.1.json before big.json), the last part (its own end) last."""
    end = read.info.last_metadata or {}
    last = 0 if is_end_metadata(end) and ended_of(end) == SPLIT else 1
    origin = read.info.origin_ns
    return last, origin if origin is not None else 1 << 62


def _process_end(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    """The end of a process split into parts, whatever order its files come in: the last part's (the
    one that did not end "split"); none (cut short) where a part has none; else a "split" end, which
    names the part still missing."""
    if a is not None and ended_of(a) != SPLIT:
        return a
    if b is not None and ended_of(b) != SPLIT:
        return b
    return None if a is None or b is None else b


def host_offsets(processes: list[ProcessTrace]) -> dict[str, int]:
    """ns to add to the timestamps of each host's traces: 0 for the reference host (the first
    process's); for another host, the difference of the hosts' (wall - monotonic) clock anchors."""
    diffs: dict[str, list[int]] = {}
    for p in processes:
        diffs.setdefault(p.host, []).extend(wall - mono for mono, wall in p.anchors())
    reference = processes[0].host
    if not diffs[reference]:
        return {host: 0 for host in diffs}
    ref = fmean(diffs[reference])
    out = {}
    for host, values in diffs.items():
        # A host whose traces carry no anchor cannot be placed: it keeps its own clock (noted).
        out[host] = 0 if host == reference or not values else round(fmean(values) - ref)
    return out


def _renumber(processes: list[ProcessTrace]) -> None:
    used: set[int] = set()
    for p in processes:
        pid = p.os_pid
        while pid in used or pid >= 2**32:
            pid = (pid + PID_STRIDE) % 2**32
        used.add(pid)
        p.pid = pid


def _check_ranks(processes: list[ProcessTrace]) -> list[str]:
    """Notes on the set of ranks: a repeated rank (traces of two jobs?) or ranks missing."""
    notes = []
    ranks = [p.rank for p in processes if p.rank is not None]
    repeated = sorted({r for r in ranks if ranks.count(r) > 1})
    if repeated:
        notes.append(f"rank(s) {', '.join(map(str, repeated))} appear in more than one process")
    sizes = {p.start.get("world_size") for p in processes} - {None}
    if len(sizes) == 1:
        (size,) = sizes
        if isinstance(size, int) and 0 <= size <= 1 << 20:
            missing = sorted(set(range(size)) - set(ranks))
            if missing:
                notes.append(f"world size {size} but no trace of rank(s) {', '.join(map(str, missing))}")
    return notes


class _Output:
    """The merged JSON array, one event per line, written beside the target and renamed into place
    at the end (so an output that is also an input is only replaced once the merge succeeded). A
    target with a Perfetto suffix gets the JSON re-encoded as a Perfetto trace instead
    (writers/perfetto_view.py); `view_notes` then says what that left out."""

    def __init__(self, output: str) -> None:
        directory = os.path.dirname(os.path.abspath(output))
        if os.path.isdir(output):
            raise MergeError(f"{output} is a directory; give a file name such as {os.path.join(output, 'all.json')}")
        if not os.path.isdir(directory):
            raise MergeError(f"cannot write {output}: directory {directory} does not exist")
        try:  # beside a plain target (renamed over it at the end); a device's: in the temporary folder
            fd, self.tmp = tempfile.mkstemp(dir=directory if is_plain_or_new(output) else None, prefix=".merge-",
                                            suffix=".json")
        except OSError as exc:
            raise MergeError(f"cannot write into {directory}: {exc.strerror or exc}") from None
        self.output = output
        self.f: BinaryIO = os.fdopen(fd, "wb")
        self.first = True
        self.events = 0
        self.buf = bytearray(1 << 20)
        self.f.write(b"[\n")

    def piece(self, data: bytes | memoryview, events: int) -> None:
        if not len(data):
            return
        try:
            if not self.first:
                self.f.write(b",\n")
            self.first = False
            self.f.write(data)
        except OSError as exc:  # the disk filled: one line, the partial file removed
            self.abandon()
            raise MergeError(f"cannot write {self.output}: {exc.strerror or exc}") from None
        self.events += events

    def event(self, ev: dict[str, Any]) -> None:
        try:
            text = orjson.dumps(ev)
        except TypeError:  # an integer past 64 bits, a key that is no string: as plain JSON values
            text = orjson.dumps(_plain(ev))
        self.piece(text, 1)

    def close(self) -> None:
        self.view_notes: list[str] = []
        try:
            self.f.write(b"\n]\n")
            self.f.close()
            if self.output.endswith(PERFETTO_SUFFIXES):
                self.view_notes = convert(self.tmp, self.output).notes(self.output)
                os.unlink(self.tmp)
                return
            os.chmod(self.tmp, 0o644)  # mkstemp's 0600 would keep the trace from its readers
            put_in_place(self.tmp, self.output)
        except OSError as exc:
            self.abandon()
            raise MergeError(f"cannot write {self.output}: {exc.strerror or exc}") from None

    def abandon(self) -> None:
        try:
            self.f.close()
        except OSError:
            pass
        try:
            os.unlink(self.tmp)
        except OSError:
            pass


class _Rewrite(Visitor):
    """The second pass over one file of one process: its events moved into the merged file."""

    def __init__(self, out: _Output, p: ProcessTrace, index: int, shift_ns: int, drop: np.ndarray,
                 keep: np.ndarray | None, seen_meta: set[tuple[str, int]]) -> None:
        self.out = out
        self.p = p
        self.index = index
        self.shift_ns = p.offset_ns + shift_ns
        self.offset_us = self.shift_ns / 1000.0
        self.flow_add = index * FLOW_ID_STRIDE
        self.drop = drop  # key codes of the calls left out
        self.keep = keep  # key codes of the calls a window kept (None: all whole calls)
        self.seen_meta = seen_meta
        self.pid_text = str(p.pid).encode()
        self.engine_blob = b'""'
        self.engine_off = np.array([0, 2], dtype=np.int64)

    def _kept(self, pids: np.ndarray, ids: np.ndarray) -> np.ndarray:
        codes = keys_of(pids, ids).view(np.dtype("V16"))
        ok = ~np.isin(codes, self.drop) if len(self.drop) else np.ones(len(codes), dtype=bool)
        if self.keep is not None:
            ok &= np.isin(codes, self.keep)
        return ok

    def slices(self, slices: np.ndarray, buf: Any) -> None:
        native_rows = slices["origin"] == NATIVE
        if not native_rows.any():
            return
        s = np.ascontiguousarray(slices[native_rows])
        keep = self._kept(s["pid"], s["call_id"]).astype(np.uint8)
        if not keep.any():
            return
        so = native.lib()
        address = native.address(buf) if isinstance(buf, bytearray) else 0
        while True:
            blob = self.engine_blob
            n = so.tt_json_encode(s.ctypes.data, len(s), keep.ctypes.data, address, self.pid_text, len(self.pid_text),
                                  self.shift_ns, self.flow_add, blob, self.engine_off.ctypes.data,
                                  len(self.engine_off) - 1, native.address(self.out.buf), len(self.out.buf))
            if n >= 0:
                break
            self.out.buf = bytearray(-n)
        self.out.piece(memoryview(self.out.buf)[:n], int(keep.sum()))

    def set_engines(self, names: dict[int, str]) -> None:
        """Engine names of the process's Perfetto slices (their literals come from here)."""
        self.engine_blob, self.engine_off = engine_literals(names)

    def event(self, ev: dict[str, Any]) -> None:
        ph = ev.get("ph")
        pid = self.p.pid
        if ph == "M":
            name = ev.get("name")
            if name in ("process_name", "process_sort_index"):
                return  # replaced by the merge's own
            if name == METADATA_EVENT:
                self.out.event(dict(ev, pid=pid, tid=0))  # the summary reads drops from them
                return
            tid = ev.get("tid", 0)
            key = (str(name), tid if isinstance(tid, int) else 0)
            if key in self.seen_meta:  # every part of a split trace repeats the track names
                return
            self.seen_meta.add(key)
            self.out.event(dict(ev, pid=pid))
            return
        call_id = ev.get("id") if ph in ("s", "t", "f") else (ev.get("args") or {}).get("call_id") \
            if isinstance(ev.get("args"), dict) else None
        src_pid = ev.get("pid", 0)
        if isinstance(call_id, int) and not isinstance(call_id, bool) and isinstance(src_pid, int) and \
                0 <= call_id < 1 << 64 and 0 <= src_pid < 1 << 64:
            if not self._kept(np.array([src_pid], dtype=np.uint64), np.array([call_id], dtype=np.uint64))[0]:
                return
        out = dict(ev, pid=pid)
        ts = ev.get("ts")
        if self.offset_us and isinstance(ts, int | float) and not isinstance(ts, bool):
            out["ts"] = round(float(ts) + self.offset_us, 3)
        if ph in ("s", "t", "f") and self.index and isinstance(ev.get("id"), int):
            out["id"] = ev["id"] + self.flow_add
        self.out.event(out)


def engine_literals(names: dict[int, str]) -> tuple[bytes, np.ndarray]:
    """The JSON string literals of a process's engine names by engine id ("engine_<id>" for an id
    without a name), packed for tt_json_encode's engine_blob / engine_off."""
    top = max(names, default=0)
    return native.packed([orjson.dumps(names.get(i, f"engine_{i}")) for i in range(top + 1)])


def _plain(value: Any) -> Any:
    """A value orjson writes: keys as strings, integers past 64 bits and other objects as text."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str | float):
        return value
    if isinstance(value, int) and -(1 << 63) <= value < (1 << 64):
        return value
    return str(value)


def _codes(pids: np.ndarray, ids: np.ndarray) -> np.ndarray:
    return np.sort(keys_of(pids, ids).view(np.dtype("V16")))


def merge(paths: list[str], output: str, window: Window | None = None) -> dict[str, Any]:
    """Merges the traces at `paths` into `output` (cut to `window`, relative to the merged trace's
    first slice); returns the merge's metadata (what it did)."""
    if not paths:
        raise MergeError("no input traces given")
    problem = output_problem(output, paths, (".json", *PERFETTO_SUFFIXES), "a trace (JSON, or Perfetto for *.pftrace)")
    if problem:
        raise MergeError(problem)
    captures = [p for p in paths if merge_capture.is_capture(p)]  # another profiler's: onto the traces' timeline
    paths = [p for p in paths if p not in captures]
    if captures and not paths:
        raise MergeError(f"{captures[0]} is a profiler's capture: give trt_trace's trace of the same run too "
                         f"(trt-trace merge trace.json {captures[0]} -o all.json)")
    capture_calls = []
    for c in captures:
        try:
            capture_calls.append(merge_capture.read_capture(c))
        except TraceFileError as exc:
            raise MergeError(str(exc)) from None
    processes = _join_parts([read_trace(p) for p in paths])
    # Order: by rank (traces without a rank after those with one), then host and pid.
    processes.sort(key=lambda p: (p.rank is None, p.rank if p.rank is not None else 0, p.host, p.os_pid))
    notes = _check_ranks(processes)
    offsets = host_offsets(processes)
    for p in processes:
        p.offset_ns = offsets[p.host]
        if p.host != processes[0].host and not p.anchors():
            notes.append(f"{p.files[0]}: no clock anchors; its times are left on its own host's clock")
    lows = [o + p.offset_ns for p in processes if (o := p.origin_ns) is not None]
    shift_ns = -min(lows) if lows and min(lows) < 0 else 0
    _renumber(processes)
    if window is not None and window.active:
        origin = min(lows) + shift_ns if lows else 0
        for p in processes:  # the calls each input keeps, on the merged file's clock
            kept_parts = []
            for path in p.files:
                keys: list[np.ndarray] = []
                try:
                    r = read_calls(path, lambda calls, info, keys=keys: keys.append(
                        _codes(calls["pid"], calls["call_id"])), window=window,
                        origin_ns=origin - p.offset_ns - shift_ns)
                except TraceFileError as exc:
                    raise MergeError(str(exc)) from None
                kept_parts.append(np.sort(np.concatenate(keys)) if keys else np.zeros(0, dtype="V16"))
                p.reads[p.files.index(path)].kept = r.kept
            p.kept = kept_parts
    out = _Output(output)
    placed = []
    try:
        inputs = _write(out, processes, shift_ns)
        for path, calls in zip(captures, capture_calls, strict=True):
            try:
                placed.append(merge_capture.place(path, calls, processes, shift_ns, out.event))
            except ValueError as exc:
                raise MergeError(str(exc)) from None
            notes += placed[-1].pop("notes", [])
    except BaseException:
        out.abandon()
        raise
    merged = {
        "tool": "trt_trace merge",
        "trt_trace_version": __version__,
        "clock": f"CLOCK_MONOTONIC of host {processes[0].host}" + (f" + {shift_ns} ns" if shift_ns else ""),
        "reference_host": processes[0].host,
        "inputs": inputs,
        "dropped_events": sum(i["dropped_events"] for i in inputs),
        "notes": notes,
    }
    if window is not None and window.active:
        merged["window"] = window.describe()
    if placed:
        merged["captures"] = placed
    out.event({"ph": "M", "name": METADATA_EVENT, "pid": processes[0].pid, "tid": 0,
               "args": {"merged": merged, "ended": CLOSED, "events_written": out.events + 1}})
    out.close()
    merged["notes"] = notes + out.view_notes
    return merged


def _write(out: _Output, processes: list[ProcessTrace], shift_ns: int) -> list[dict[str, Any]]:
    inputs = []
    for index, p in enumerate(processes):
        out.event({"ph": "M", "name": "process_name", "pid": p.pid, "tid": 0, "args": {"name": p.label()}})
        out.event({"ph": "M", "name": "process_sort_index", "pid": p.pid, "tid": 0, "args": {"sort_index": index}})
        seen_meta: set[tuple[str, int]] = set()
        for k, path in enumerate(p.files):
            r = p.reads[k]
            drop = np.sort(r.partial.view(np.dtype("V16"))) if len(r.partial) else np.zeros(0, dtype="V16")
            keep = p.kept[k] if p.kept else None
            rewrite = _Rewrite(out, p, index, shift_ns, drop, keep, seen_meta)
            if r.info.format != "json":
                names: dict[int, str] = {}
                for proc in r.info.processes.values():
                    names.update(proc.engines)
                rewrite.set_engines(names)
            try:
                read(path, rewrite)
            except TraceFileError as exc:
                raise MergeError(str(exc)) from None
        inputs.append({
            "files": p.files,
            "rank": p.rank,
            "host": p.host,
            "pid": p.pid,
            "pid_in_file": p.os_pid,
            "offset_us": (p.offset_ns + shift_ns) / 1000.0,
            "complete": p.end is not None,
            "ended": p.ended,
            **{k: p.end[k] for k in ("events_not_written", "next_part") if p.end and p.ended != CLOSED and k in p.end},
            "partial_calls": p.partial_calls,
            "dropped_events": _int((p.end or {}).get("dropped_events", 0)),
            "calls": p.calls,
        })
    return inputs


def input_notes(merged: dict[str, Any]) -> list[str]:
    """One line per input that did not end closed (cut short, size limit, split, write failed)."""
    notes = []
    for i in merged["inputs"]:
        if i.get("ended", CLOSED) == CLOSED:
            continue
        who = ("" if i["rank"] is None else f"rank {i['rank']} ") + f"{i['host']} pid {i['pid_in_file']}"
        line = end_line(f"{', '.join(i['files'])} ({who})", i["ended"], i, i["partial_calls"])
        if line:
            notes.append(line)
    return notes
