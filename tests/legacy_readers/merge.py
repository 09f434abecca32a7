# ruff: noqa
# Today's reader as it was before trt_trace/io/readers (issue 24), kept as the oracle that
# tests/test_readers_oracle.py compares the streaming readers with. Not used by the package.
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
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from statistics import fmean
from typing import Any

import orjson

from trt_trace import __version__
from .complete_calls import drop_partial_calls
from trt_trace.schema.trace_format import METADATA_EVENT
from .trace_summary import TraceFileError, load_events

FLOW_ID_STRIDE = 1 << 40  # process k's flow ids: id + k * stride (call ids never come near 2**40)
PID_STRIDE = 1 << 22  # Linux pids are below 2**22: pid + k * stride never clashes with a real one


class MergeError(ValueError):
    """An input or output the merge cannot use (the message is one line and names the file)."""


@dataclass
class ProcessTrace:
    """One traced process: its file(s) (a process past the size limit wrote trace.json, trace.1.json, ...)."""

    files: list[str]
    events: list[dict[str, Any]]
    start: dict[str, Any]
    end: dict[str, Any] | None
    pid: int = 0  # in the merged file
    offset_ns: int = 0  # added to every timestamp
    partial_calls: int = 0  # calls left out: the file was cut inside them

    @property
    def key(self) -> tuple[str, int, int]:
        """Same host, pid and start anchor: parts of one process."""
        return (self.host, self.os_pid, int(self.start.get("monotonic_ns", 0)))

    @property
    def host(self) -> str:
        return str(self.start.get("host") or "?")

    @property
    def os_pid(self) -> int:
        return int(self.start.get("pid", 0))

    @property
    def rank(self) -> int | None:
        rank = self.start.get("rank")
        return rank if isinstance(rank, int) else None

    def anchors(self) -> list[tuple[int, int]]:
        out = []
        for meta in (self.start, self.end or {}):
            if isinstance(meta.get("monotonic_ns"), int) and isinstance(meta.get("wall_ns"), int):
                out.append((meta["monotonic_ns"], meta["wall_ns"]))
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


def read_trace(path: str) -> ProcessTrace:
    """Reads one per-process trace written by trt_trace (a file cut short by a kill is fine)."""
    if not os.path.exists(path):
        raise MergeError(f"{path}: no such file")
    try:
        events = load_events(path)
    except TraceFileError as exc:
        raise MergeError(str(exc)) from None
    metas = [e.get("args") or {} for e in events if e.get("ph") == "M" and e.get("name") == METADATA_EVENT]
    if any("merged" in m for m in metas):
        raise MergeError(f"{path} is already a merged trace; merge the per-process traces instead")
    starts = [m for m in metas if m.get("tool") == "trt_trace"]
    if not starts:
        raise MergeError(f"{path} is not a trt_trace trace (no trt_trace_metadata start event)")
    ends = [m for m in metas if "records_written" in m]
    return ProcessTrace([path], events, starts[0], ends[-1] if ends else None)


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
        first.events += t.events
        first.end = t.end or first.end
    return list(by_key.values())


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


def _rewrite(p: ProcessTrace, index: int, shift_ns: int) -> list[dict]:
    """The process's events with the pid, flow ids and timestamps of the merged file."""
    offset_us = (p.offset_ns + shift_ns) / 1000.0
    seen_meta: set[tuple[str, int]] = set()
    header: list[dict] = []
    body: list[dict] = []
    for ev in p.events:
        ph = ev.get("ph")
        if ph == "M":
            name = ev.get("name")
            if name in ("process_name", "process_sort_index", METADATA_EVENT):
                continue  # replaced by the merge's own (the metadata: below)
            key = (str(name), int(ev.get("tid", 0)))
            if key in seen_meta:  # every part of a split trace repeats the track names
                continue
            seen_meta.add(key)
            header.append(dict(ev, pid=p.pid))
            continue
        out = dict(ev, pid=p.pid)
        if "ts" in ev and offset_us:
            out["ts"] = round(float(ev["ts"]) + offset_us, 3)
        if ph in ("s", "t", "f") and "id" in ev and index:
            out["id"] = int(ev["id"]) + index * FLOW_ID_STRIDE
        body.append(out)
    # The process's own metadata events stay (the summary reads drops from them), under the new pid.
    metas = [dict(e, pid=p.pid, tid=0) for e in p.events if e.get("ph") == "M" and e.get("name") == METADATA_EVENT]
    return header + metas + body


def _min_ts(p: ProcessTrace) -> float | None:
    values = [float(e["ts"]) for e in p.events if e.get("ph") != "M" and "ts" in e]
    return min(values) if values else None


def merge(paths: list[str], output: str) -> dict[str, Any]:
    """Merges the traces at `paths` into `output`; returns the merge's metadata (what it did)."""
    if not paths:
        raise MergeError("no input traces given")
    processes = _join_parts([read_trace(p) for p in paths])
    for p in processes:  # a file cut inside a call: leave the call out, so every row adds up
        p.events, p.partial_calls = drop_partial_calls(p.events)
    # Order: by rank (traces without a rank after those with one), then host and pid.
    processes.sort(key=lambda p: (p.rank is None, p.rank if p.rank is not None else 0, p.host, p.os_pid))
    notes = _check_ranks(processes)
    offsets = host_offsets(processes)
    for p in processes:
        p.offset_ns = offsets[p.host]
        if p.host != processes[0].host and not p.anchors():
            notes.append(f"{p.files[0]}: no clock anchors; its times are left on its own host's clock")
    lows = [m + p.offset_ns / 1000.0 for p in processes if (m := _min_ts(p)) is not None]
    shift_ns = math.ceil(-min(lows) * 1000.0) if lows and min(lows) < 0 else 0
    _renumber(processes)

    out_events: list[dict] = []
    inputs = []
    for index, p in enumerate(processes):
        out_events += [
            {"ph": "M", "name": "process_name", "pid": p.pid, "tid": 0, "args": {"name": p.label()}},
            {"ph": "M", "name": "process_sort_index", "pid": p.pid, "tid": 0, "args": {"sort_index": index}},
        ]
        out_events += _rewrite(p, index, shift_ns)
        inputs.append({
            "files": p.files,
            "rank": p.rank,
            "host": p.host,
            "pid": p.pid,
            "pid_in_file": p.os_pid,
            "offset_us": (p.offset_ns + shift_ns) / 1000.0,
            "complete": p.end is not None,
            "partial_calls": p.partial_calls,
            "dropped_events": int((p.end or {}).get("dropped_events", 0)),
            "calls": sum(1 for e in p.events if e.get("ph") == "X" and e.get("name") == "execute_engine"),
        })
    merged = {
        "tool": "trt_trace merge",
        "trt_trace_version": __version__,
        "clock": f"CLOCK_MONOTONIC of host {processes[0].host}" + (f" + {shift_ns} ns" if shift_ns else ""),
        "reference_host": processes[0].host,
        "inputs": inputs,
        "dropped_events": sum(i["dropped_events"] for i in inputs),
        "notes": notes,
    }
    out_events.insert(2, {"ph": "M", "name": METADATA_EVENT, "pid": processes[0].pid, "tid": 0,
                          "args": {"merged": merged}})
    _write(output, out_events)
    return merged


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
        missing = sorted(set(range(int(size))) - set(ranks))
        if missing:
            notes.append(f"world size {size} but no trace of rank(s) {', '.join(map(str, missing))}")
    return notes


def _write(output: str, events: list[dict]) -> None:
    """A complete JSON array, one event per line; written beside the target and renamed into place,
    so an output that is also an input is only replaced once the merge succeeded."""
    directory = os.path.dirname(os.path.abspath(output))
    if os.path.isdir(output):
        raise MergeError(f"{output} is a directory; give a file name such as {os.path.join(output, 'all.json')}")
    if not os.path.isdir(directory):
        raise MergeError(f"cannot write {output}: directory {directory} does not exist")
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".merge-", suffix=".json")
    except OSError as exc:
        raise MergeError(f"cannot write into {directory}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(b"[\n")
            f.write(b",\n".join(orjson.dumps(e) for e in events))
            f.write(b"\n]\n")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would keep the trace from its readers
        os.replace(tmp, output)
    except OSError as exc:
        os.unlink(tmp)
        raise MergeError(f"cannot write {output}: {exc.strerror or exc}") from None
