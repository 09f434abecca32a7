"""The flight recorder: tracing runs all the time, only the last SECONDS of calls are kept, in
bounded memory, and nothing is written until something asks for it (a dump).

A FlightWindow stands where a session's file writer would: the drainer hands it every batch as
usual, it keeps copies of the batches and lets the oldest go once they fall out of the window or
past the memory cap. A dump writes the calls that began inside the window through a fresh file
writer of the session's format, so each dump is a complete trace that every reader opens. The
traced threads never see any of this: they write into their rings as in any session.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..io.formats import TraceWriter
from ..io.writers.trace_file import before_suffix
from ..native import ops
from ..schema.records import RECORD_DTYPE
from ..schema.trace_format import Phase
from .config import mib


@dataclass(frozen=True)
class Dump:
    """What one dump holds: its file, its calls, and the window it really covers."""

    path: str
    trigger: str
    calls: int
    window_s: float  # the window asked for
    held_s: float  # the window the dump covers: window_s, or less where the memory cap let older calls go
    capped: bool  # the memory cap let calls of the window go (held_s < window_s)
    max_bytes: int

    def line(self) -> str:
        """The one line a trigger prints: where the dump went and the window it really holds."""
        calls = f"{self.calls} call{'' if self.calls == 1 else 's'}"
        if not self.capped:
            return f"flight recorder ({self.trigger}): last {self.window_s:g} s written to {self.path} ({calls})"
        return (f"flight recorder ({self.trigger}): {self.held_s:.3g} s of the last {self.window_s:g} s written to "
                f"{self.path} ({calls}; the memory cap of {mib(self.max_bytes)} MiB let older calls "
                "go: raise TRT_TRACE_FLIGHT_MAX_MB or flight(max_bytes=) for the whole window)")


def dump_path(path: str, number: int) -> str:
    """trace.json -> trace.dump1.json."""
    return before_suffix(path, f"dump{number}")


class FlightWindow:
    """The session's writer in flight mode: keeps the last `seconds` of records, at most
    `max_bytes` of them, and writes them out on dump()."""

    def __init__(self, path: str, make_writer: Callable[[str], TraceWriter], seconds: float, max_bytes: int,
                 on_exit: bool = False) -> None:
        self.path = path
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.max_records = max(1, max_bytes // RECORD_DTYPE.itemsize)
        self.on_exit = on_exit
        self._make_writer = make_writer
        self._chunks: collections.deque[np.ndarray] = collections.deque()
        self._records = 0
        self._lock = threading.Lock()
        self._process_name = ""
        self._metadata: dict[str, Any] = {}
        self.gpu_flows = True
        self.paths: list[str] = []  # every dump written, in order
        self.dumps = 0
        self.records_let_go = 0  # fell out of the window early, past the memory cap
        self._let_go_until_ns = 0  # the latest end of a record the memory cap let go
        self.events_not_written = 0
        self.last_dump: Dump | None = None

    @property
    def created(self) -> bool:
        return bool(self.paths)

    @property
    def records_held(self) -> int:
        """Records kept in memory now (at most max_records)."""
        return self._records

    # -- the writer interface the session drives -------------------------------------------------

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        self._process_name = process_name
        self._metadata = metadata

    def write(self, records: np.ndarray) -> None:
        if len(records) == 0:
            return
        chunk = records.copy()  # the drainer reuses its buffer
        with self._lock:
            self._chunks.append(chunk)
            self._records += len(chunk)
            self._trim(ops.clock_now_ns())

    def finish(self, end_metadata: dict[str, Any]) -> None:
        if self.on_exit:
            self.dump(end_metadata, "exit")

    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool:
        return False  # the window is in memory: a failed dump has said so where it failed

    def abandon(self) -> None:
        with self._lock:
            self._chunks.clear()
            self._records = 0

    # -- the window --------------------------------------------------------------------------------

    def _trim(self, now_ns: int) -> None:
        """Lets the oldest batches go: those that ended before the window, then, past the cap, the
        oldest whatever their age. Whole batches; dump() cuts the window exactly."""
        cutoff = now_ns - int(self.seconds * 1e9)
        while self._chunks and (int(self._chunks[0]["end_ns"].max()) < cutoff):
            self._records -= len(self._chunks.popleft())
        while self._chunks and self._records - len(self._chunks[0]) >= self.max_records:
            gone = self._chunks.popleft()
            self._records -= len(gone)
            self.records_let_go += len(gone)
            self._let_go_until_ns = max(self._let_go_until_ns, int(gone["end_ns"].max()))
        if self._chunks and self._records > self.max_records:  # one batch larger than the cap
            keep = self.max_records - (self._records - len(self._chunks[0]))
            first = self._chunks.popleft()
            self.records_let_go += len(first) - keep
            self._let_go_until_ns = max(self._let_go_until_ns, int(first[:len(first) - keep]["end_ns"].max()))
            self._chunks.appendleft(first[len(first) - keep:])
            self._records = self.max_records

    def window(self, now_ns: int | None = None) -> np.ndarray:
        """The records of every call that began in the last `seconds` (with its phases and GPU span)."""
        return self._window(ops.clock_now_ns() if now_ns is None else now_ns)[0]

    def _window(self, now_ns: int) -> tuple[np.ndarray, bool]:
        """window(), and whether the memory cap let calls of it go."""
        with self._lock:
            self._trim(now_ns)
            records = np.concatenate(list(self._chunks)) if self._chunks else np.zeros(0, dtype=RECORD_DTYPE)
            let_go_until = self._let_go_until_ns
        cutoff = now_ns - int(self.seconds * 1e9)
        calls = records[(records["phase"] == Phase.CALL) & (records["begin_ns"] >= cutoff)]
        # Whole calls only: a call whose own record went (past the cap) leaves its phases out too.
        return records[np.isin(records["call_id"], calls["call_id"])], let_go_until >= cutoff

    def dump(self, end_metadata: dict[str, Any], trigger: str) -> Dump:
        """Writes the window as a complete trace (the next dump number); returns what it holds."""
        now_ns = ops.clock_now_ns()
        records, capped = self._window(now_ns)
        with self._lock:
            self.dumps += 1
            number = self.dumps
        path = dump_path(self.path, number)
        writer = self._make_writer(path)
        writer.gpu_flows = self.gpu_flows
        call_begins = records["begin_ns"][records["phase"] == Phase.CALL]
        # The window the dump really covers: as asked, or from its oldest call where the cap cut it.
        held_s = (now_ns - int(call_begins.min())) / 1e9 if capped and len(call_begins) else (
            0.0 if capped else self.seconds)
        held_s = round(held_s, 6)  # one value for the file and the line (each rounds it again to print it)
        flight = {"window_s": self.seconds, "held_s": held_s, "capped": capped, "dump": number,
                  "trigger": trigger, "calls": len(call_begins), "records_let_go": self.records_let_go,
                  "max_records": self.max_records}
        writer.begin(self._process_name, dict(self._metadata, flight=flight))
        writer.write(records)
        writer.finish(dict(end_metadata, flight=flight))
        self.events_not_written += writer.events_not_written
        self.paths += writer.paths
        self.last_dump = Dump(writer.paths[0], trigger, len(call_begins), self.seconds, held_s, capped,
                              self.max_bytes)
        return self.last_dump
