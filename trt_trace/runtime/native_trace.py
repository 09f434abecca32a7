"""A session's trace, Chrome JSON or native Perfetto, written by the native writer thread
(csrc/session/native_writer.h; the formats: csrc/session/trace_format.h).

The thread drains the rings every 50 ms, resolves GPU spans, places tracks, formats and writes the file
without Python, so a serving thread that keeps the GIL busy cannot starve it. This class is the
session's control of it, nothing per event: it encodes the start metadata, starts and stops the
thread, reads its counts, and encodes the end record (the session's end metadata plus what the file
knows, as StreamedTrace.end_record does for the Python writers) for the thread to write. The metadata
is encoded here as each format holds it: JSON text (orjson), or a Perfetto instant's debug annotations
(writers/perfetto_trace.metadata_annotations, the encoding of the Python writer). The flight recorder's
control (flight.NativeFlight) is this class with the thread in flight mode.

It is both the session's writer (the interface of writers/trace_file.StreamedTrace) and its drainer
(start, stop, drain_once, discard_pending, held), so the session and the tests use it as they use those.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import Any

import orjson

from ..io.perfetto_protos import protos
from ..io.writers import perfetto_trace
from ..native import ops
from ..schema.trace_format import METADATA_EVENT

FORMATS = ("json", "perfetto")  # what the native writer writes (csrc/session/trace_format.h)

_OS_ERROR = re.compile(r"\[Errno (\d+)\] ([^\n]*)")


def _as_os_error(exc: RuntimeError) -> Exception:
    """The native writer's "[Errno N] words" as the OSError it stands for (else the error as it is)."""
    found = _OS_ERROR.search(str(exc))
    return OSError(int(found.group(1)), found.group(2)) if found else exc


def process_head(pid: int, process_name: str, metadata: dict[str, Any]) -> bytes:
    """The JSON array's first events, comma-separated: the process's name and the start metadata."""
    return orjson.dumps([
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process_name}},
        {"ph": "M", "name": METADATA_EVENT, "pid": pid, "tid": 0, "args": metadata},
    ])[1:-1]


class NativeTrace:
    def __init__(self, path: str, lazy: bool = False, max_bytes: int = 0, split: bool = True,
                 fmt: str = "json") -> None:
        """fmt: "json" or "perfetto" (the latter needs the `perfetto` package's protos: ImportError here)."""
        if fmt not in FORMATS:
            raise ValueError(f"the native writer writes json or perfetto, not {fmt!r}")
        if fmt == "perfetto":
            protos()  # the start and end metadata are encoded with them: fail at start
        self.path = path
        self.format = fmt
        self._lazy = lazy
        self._max_bytes = max_bytes
        self._split = split
        self._pid = os.getpid()
        self._head = b""
        self._process_name = ""
        self._start_ns = 0
        self.gpu_flows = True  # set False when GPU timing is off (no GPU slice to point at)
        self._status: dict[str, Any] | None = None  # the last counts once stopped (they change no more)

    # -- the writer's side ------------------------------------------------------------------------

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        """JSON: the array's first events (the process's name and the start metadata); Perfetto: the process
        track's name and the start metadata instant's annotations (every part starts with them)."""
        if self.format == "json":
            self._head = process_head(self._pid, process_name, metadata)
            return
        metadata = perfetto_trace.start_metadata(metadata)
        self._head = perfetto_trace.metadata_annotations(metadata)
        self._process_name = perfetto_trace._text(process_name)
        self._start_ns = int(metadata.get("monotonic_ns") or 0)

    def _end(self, end: dict[str, Any]) -> tuple[bytes, int]:
        """The end record as the format holds it, and (Perfetto) when the session ended (0: now)."""
        if self.format == "json":
            return orjson.dumps(end), 0
        return perfetto_trace.metadata_annotations(end), int(end.get("monotonic_ns") or 0)

    def status(self) -> dict[str, Any]:
        return self._status if self._status is not None else ops.writer_status()

    @property
    def created(self) -> bool:
        return bool(self.status()["created"])

    @property
    def paths(self) -> list[str]:
        return list(self.status()["paths"]) or [self.path]

    @property
    def in_use(self) -> str:
        """The path another process was writing, where this one wrote `<stem>.<pid><suffix>` instead ("" if none)."""
        return str(self.status()["in_use"])

    @property
    def events_written(self) -> int:
        return int(self.status()["events_written"])

    @property
    def bytes_written(self) -> int:
        return int(self.status()["bytes_written"])

    @property
    def events_not_written(self) -> int:
        return int(self.status()["events_not_written"])

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    def end_record(self, end_metadata: dict[str, Any]) -> dict[str, Any]:
        """The trace's end metadata as written: the session's, and what the file knows."""
        s = self.status()
        not_written = int(s["events_not_written"])
        end = dict(end_metadata, ended="size limit" if not_written else "closed", files=self.paths,
                   records_written=int(s["events_written"]), events_not_written=not_written)
        if not_written:
            end["limit_bytes"] = self._max_bytes
        return end

    def finish(self, end_metadata: dict[str, Any]) -> None:
        try:
            ops.writer_end(*self._end(self.end_record(end_metadata)))
        except RuntimeError as exc:
            raise _as_os_error(exc) from None
        self._status = ops.writer_status()

    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool:
        """Ends the file after a failed write, with what it holds up to its last whole batch; False: no end."""
        end = dict(self.end_record(end_metadata), ended="write failed", error=error)
        ended = ops.writer_end(*self._end(end), after_failure=True)
        self._status = ops.writer_status()
        return ended

    def abandon(self) -> None:
        """Closes the file without a write (a forked child's copy; the fork handler has done it already)."""
        ops.writer_abandon()

    # -- the drainer's side -----------------------------------------------------------------------

    def start(self) -> None:
        """Starts the thread (and opens the file unless lazy: OSError where it cannot)."""
        try:
            ops.writer_start(self.path, self.format, self._lazy, self._max_bytes, self._split, self._pid,
                             self.gpu_flows, self._head, self._process_name, self._start_ns)
        except RuntimeError as exc:
            raise _as_os_error(exc) from None

    def stop(self) -> None:
        """Stops the thread and drains what is left, waiting for GPU spans still in flight."""
        ops.writer_stop()

    def drain_once(self, wait_gpu: bool = False) -> int:
        """Drains and writes everything pending now, on the calling thread; the records moved."""
        return ops.writer_drain(wait_gpu)

    def discard_pending(self) -> int:
        """Drops every record the rings hold now (GPU spans waited for); how many."""
        return ops.writer_drain(True, discard=True)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """No drain by the thread inside the block (it wakes and waits for the block's end)."""
        ops.writer_hold(True)
        try:
            yield
        finally:
            ops.writer_hold(False)

    @property
    def records_drained(self) -> int:
        return int(self.status()["records_drained"])

    @property
    def wakes(self) -> int:
        return int(self.status()["wakes"])

    @property
    def failed(self) -> bool:
        return bool(self.status()["failed"])

    @property
    def error(self) -> str:
        return str(self.status()["error"])
