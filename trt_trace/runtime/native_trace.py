"""A session's trace, Chrome JSON or native Perfetto, written by the native writer thread
(csrc/session/native_writer.h; the formats: csrc/session/trace_format.h).

The thread drains the rings every 50 ms, resolves GPU spans, places tracks, formats and writes the file
without Python, so a serving thread that keeps the GIL busy cannot starve it. This class is the
session's control of it, nothing per event: it encodes the start metadata, hands it with its settings
to the session's one start op (start_session) and reads the thread's counts; the session's stop op
builds the end record natively (csrc/session/session_control.h). The start metadata is encoded as each
format holds it: JSON text (orjson), or a Perfetto instant's debug annotations
(writers/perfetto_trace.metadata_annotations, the encoding of the Python writer); any other format gets the
metadata object as JSON text and makes its own start of it (csrc/session/trace_format.h FormatStart). The
formats are the native writer's, each registered by its own C++ file and in io/formats.py. The flight recorder's
control (flight.NativeFlight) is this class with the thread in flight mode.

It is both the session's writer (the counts of writers/trace_file.StreamedTrace) and its drainer
(drain_once, discard_pending, held), so the session and the tests use it as they use those.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import orjson

from ..io import formats
from ..io.perfetto_protos import protos
from ..io.writers import perfetto_trace
from ..native import ops
from ..schema.trace_format import METADATA_EVENT

T = TypeVar("T")

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


class StatusField(Generic[T]):
    """One count of the writer's status as an attribute: read from the thread while the session runs, from
    the last counts once it has ended (NativeTrace.status)."""

    def __init__(self, kind: Callable[[Any], T]) -> None:
        self.kind = kind
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: NativeTrace, owner: type | None = None) -> T:
        return self.kind(obj.status()[self.name])


class NativeTrace:
    def __init__(self, path: str, lazy: bool = False, max_bytes: int = 0, split: bool = True,
                 fmt: str = "json") -> None:
        """fmt: a format of formats.written() ("perfetto" needs the `perfetto` package's protos: ImportError
        here)."""
        if fmt not in formats.written():
            raise ValueError(f"the native writer writes {' or '.join(formats.written())}, not {fmt!r}")
        if fmt == "perfetto":
            protos()  # the start metadata is encoded with them: fail at start
        self.path = path
        self.format = fmt
        self._lazy = lazy
        self._max_bytes = max_bytes
        self._split = split
        self._pid = os.getpid()
        self._head = b""
        self._process_name = ""
        self._start_ns = 0
        self._status: dict[str, Any] | None = None  # the last counts once stopped (they change no more)

    # -- the writer's side ------------------------------------------------------------------------

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        """JSON: the array's first events (the process's name and the start metadata); Perfetto: the process
        track's name and the start metadata instant's annotations (every part starts with them); another
        format: the process's name and the metadata object."""
        if self.format == "json":
            self._head = process_head(self._pid, process_name, metadata)
            return
        if self.format != "perfetto":
            self._head = orjson.dumps(metadata)
            self._process_name = perfetto_trace._text(process_name)  # (valid UTF-8 for the op)
            self._start_ns = int(metadata.get("monotonic_ns") or 0)
            return
        metadata = perfetto_trace.start_metadata(metadata)
        self._head = perfetto_trace.metadata_annotations(metadata)
        self._process_name = perfetto_trace._text(process_name)
        self._start_ns = int(metadata.get("monotonic_ns") or 0)

    def status(self) -> dict[str, Any]:
        return self._status if self._status is not None else ops.writer_status()

    created = StatusField(bool)
    # The path another process was writing, where this one wrote `<stem>.<pid><suffix>` instead ("" if none).
    in_use = StatusField(str)
    events_written = StatusField(int)
    bytes_written = StatusField(int)
    events_not_written = StatusField(int)

    @property
    def paths(self) -> list[str]:
        return list(self.status()["paths"]) or [self.path]

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    def abandon(self) -> None:
        """Closes the file without a write (a forked child's copy; the fork handler has done it already)."""
        ops.writer_abandon()

    def freeze(self) -> None:
        """The session has ended: its counts, read once, change no more."""
        self._status = ops.writer_status()

    # -- the session's start: one op (csrc/session/session_control.h) --------------------------------

    def start_session(self, settings: dict[str, int | bool]) -> tuple[int, str, dict[str, bool]]:
        """idle -> recording with the C++ settings `settings` (config.Settings.native()) and this writer
        (after begin()); (refused, message, available) as ops.session_start returns them."""
        return ops.session_start(settings, self.path, self.format, self._lazy, self._max_bytes, self._split,
                                 self._pid, self._head, self._process_name, self._start_ns)

    # -- the drainer's side -----------------------------------------------------------------------

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

    records_drained = StatusField(int)
    wakes = StatusField(int)
    failed = StatusField(bool)
    error = StatusField(str)
