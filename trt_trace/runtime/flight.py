"""The flight recorder: tracing runs all the time, only the last SECONDS of calls are kept, in
bounded memory, and nothing is written until something asks for it (a dump).

The window lives on the native writer thread (csrc/session/flight_window.h): the thread drains the
rings into it every 50 ms with no Python and no GIL, lets the oldest calls go once they fall out of the
window or past the memory cap, and a dump writes the window's whole calls through the session format's
native writer (csrc/session/native_writer.h), so each dump is a complete trace that every reader opens.
SIGUSR1 is taken by the native side too: its dump is written by the writer thread even while the
program's main thread is busy in C++ or holds the GIL. This class is the session's control of it:
start, dump on a Python trigger (dump(), an unhandled exception, the exit), stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..io.writers import perfetto_trace
from ..native import ops
from ..schema.records import RECORD_DTYPE
from . import process_hooks
from .native_trace import NativeTrace, StatusField, _as_os_error


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
        """The one line a trigger prints: where the dump went and the window it really holds (worded by the
        native side, which prints it itself for SIGUSR1)."""
        return ops.flight_line(self.trigger, self.path, self.calls, self.window_s, self.held_s, self.capped,
                               self.max_bytes)


class NativeFlight(NativeTrace):
    """The session's writer and drainer in flight mode: the native writer thread keeps the last `seconds`
    of records, at most `max_bytes` of them, and writes them out on dump()."""

    def __init__(self, path: str, seconds: float, max_bytes: int, on_exit: bool = False, fmt: str = "json",
                 file_max_bytes: int = 0, split: bool = True) -> None:
        """max_bytes: the memory cap; file_max_bytes and split: each dump's size limit (as a session's file)."""
        super().__init__(path, lazy=False, max_bytes=file_max_bytes, split=split, fmt=fmt)
        self.seconds = seconds
        self.memory_bytes = max_bytes
        self.max_records = max(1, max_bytes // RECORD_DTYPE.itemsize)
        self.on_exit = on_exit
        self.last_dump: Dump | None = None

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        """The start metadata every dump starts with (each adds its `flight` entry): JSON, the object alone
        (the native side writes the process name event around it); Perfetto, as a session's."""
        super().begin(process_name, metadata)
        if self.format == "json":
            self._head = orjson.dumps(metadata)
            self._process_name = perfetto_trace._text(process_name)  # (valid UTF-8 for the op)

    def start_session(self, settings: dict[str, int | bool]) -> tuple[int, str, dict[str, bool]]:
        """As NativeTrace's, in flight mode; SIGUSR1 is taken natively where the program left it free."""
        return ops.session_start(settings, self.path, self.format, False, self._max_bytes, self._split, self._pid,
                                 self._head, self._process_name, self._start_ns, flight_s=self.seconds,
                                 flight_memory_bytes=self.memory_bytes, take_sigusr1=process_hooks.sigusr1_is_free())

    def dump(self, trigger: str, now_ns: int | None = None) -> Dump:
        """Writes the window as it is at now_ns (default: now) as a complete trace, the next dump number;
        returns what it holds. OSError where the file cannot be written."""
        try:
            paths, _, calls, held_s, capped, _, _ = ops.writer_flight_dump(
                trigger, ops.clock_now_ns() if now_ns is None else now_ns)
        except RuntimeError as exc:
            raise _as_os_error(exc) from None
        self.last_dump = Dump(paths[0], trigger, calls, self.seconds, held_s, capped, self.memory_bytes)
        return self.last_dump

    records_held = StatusField(int)  # records kept in memory now (at most max_records)
    records_let_go = StatusField(int)  # records the memory cap let go before they fell out of the window
    dumps = StatusField(int)
