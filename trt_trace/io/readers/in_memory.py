"""Traces as lists of event dicts, for tests and small scripts: load_events() gives a file's events
as the Chrome JSON writer writes them (any format, in memory: not for large traces), and
EventsReader reads such a list as if it were a file."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...schema.trace_format import CATEGORY, FLOW_NAME, GPU_PHASES, PHASE_NAMES
from .chrome_json import ChromeJsonReader, Visitor
from .columns import FLAG_FLOW_IN, FLAG_FLOW_OUT, FLOW_END, FLOW_START, NATIVE
from .opening import open_reader
from .trace_info import TraceInfo


def _us(ns: int) -> float:
    return ns / 1000.0


class _Collect(Visitor):
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.info: TraceInfo | None = None

    def slices(self, slices: np.ndarray, buf: Any) -> None:
        assert self.info is not None
        for row in slices[slices["origin"] == NATIVE]:
            pid, tid = int(row["pid"]), int(row["tid"])
            kind = int(row["kind"])
            if kind in (FLOW_START, FLOW_END):
                ev = {"ph": "f", "bp": "e"} if kind == FLOW_END else {"ph": "s"}
                ev.update({"cat": CATEGORY, "name": FLOW_NAME, "id": int(row["call_id"]),
                           "ts": _us(int(row["begin_ns"])), "pid": pid, "tid": tid})
                self.events.append(ev)
                continue
            self.events += slice_dicts(row, self.info.process(pid).engines.get(int(row["engine_id"]),
                                                                               f"engine_{int(row['engine_id'])}"))

    def event(self, ev: dict[str, Any]) -> None:
        self.events.append(ev)


def slice_dicts(row: np.void, engine: str) -> list[dict[str, Any]]:
    """A native slice row (and its Perfetto launch flows) as the JSON writer's events."""
    phase = int(row["phase"])
    begin, end = int(row["begin_ns"]), int(row["end_ns"])
    flags = int(row["flags"])
    args: dict[str, Any] = {"engine": engine, "engine_id": int(row["engine_id"]), "call_id": int(row["call_id"]),
                            "thread": int(row["thread_id"])}
    if int(row["device"]) != 0xFFFF:
        args["device"] = int(row["device"])
    if phase in GPU_PHASES:
        args["stream"] = int(row["stream"])
    for bit, name in ((1, "error"), (2, "nested"), (4, "captured"), (8, "engine_stream")):
        if flags & bit:
            args[name] = True
    pid, tid = int(row["pid"]), int(row["tid"])
    out = [{"ph": "X", "cat": CATEGORY, "name": PHASE_NAMES[phase], "ts": _us(begin), "dur": _us(end - begin),
            "pid": pid, "tid": tid, "args": args}]
    inside = 1 if end > begin else 0
    if flags & FLAG_FLOW_OUT:
        out.append({"ph": "s", "cat": CATEGORY, "name": FLOW_NAME, "id": int(row["call_id"]),
                    "ts": _us(begin + inside), "pid": pid, "tid": tid})
    if flags & FLAG_FLOW_IN:
        out.append({"ph": "f", "bp": "e", "cat": CATEGORY, "name": FLOW_NAME, "id": int(row["call_id"]),
                    "ts": _us(end - inside), "pid": pid, "tid": tid})
    return out


def load_events(path: str) -> list[dict[str, Any]]:
    """Every event of a trace file as a dict (JSON, Perfetto, merged, cut short), in memory."""
    reader = open_reader(path)
    collect = _Collect()
    collect.info = TraceInfo(path, reader.format)
    reader.read(collect, collect.info)
    return collect.events


class EventsReader:
    """Reads a list of event dicts as a trace (the general path of the JSON reader)."""

    format = "json"

    def __init__(self, events: list[Any], path: str = "<events>") -> None:
        self.events = events
        self.path = path

    def read(self, visitor: Visitor, info: TraceInfo | None = None, progress: Any = None) -> TraceInfo:
        info = info or TraceInfo(self.path, self.format)
        side = ChromeJsonReader(self.path)
        converted: list[tuple] = []
        for start in range(0, len(self.events), 1 << 16):
            side._handle(info, self.events[start: start + (1 << 16)], visitor, converted)
            side._flush_converted(info, converted, visitor)
        info.array_closed = True
        return info
