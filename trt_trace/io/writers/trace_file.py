"""One trace on disk, streamed: what both writers share about files.

* Lazy creation: with lazy=True the file is created at the first engine event, so processes that
  import torch but never run an engine (compile workers, data loaders) leave no empty trace. Without
  it the file is opened at once, so that a path that cannot be written fails at start.
* Parts: a part starts with what its writer says every part starts with (`part_start`, given the
  part's first timestamp) and ends with `part_end`. Past `max_bytes` the trace either continues in a
  numbered part (trace.json, trace.1.json, trace.2.json, ...: each one complete on its own, ending
  with an end record `{"ended": "split", "next_part": ...}` encoded by the writer's `end_event`) or
  stops writing and counts the events it left out.
* Why it ended: every finished file's last metadata says so (`ended`: "closed", "size limit",
  "split", "write failed"; StreamedTrace.end_record). A file with no end record was cut short.
* Unbuffered, whole writes: nothing sits in a Python buffer that a forked child could flush into the
  file, and a killed process leaves every batch written so far on disk.
* After a failed write (a full disk) the file is cut back to its last whole piece and, where that
  works, ended with `"ended": "write failed"` (finish_after_failure): what was written still loads.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from ..tracks import split_inferences, split_layers


def before_suffix(path: str, tag: str) -> str:
    """trace.json, "1" -> trace.1.json: the suffix kept, so the format still reads off the name; a
    name without a suffix gets `.tag` appended."""
    stem, dot, suffix = path.rpartition(".")
    if not dot or "/" in suffix:
        return f"{path}.{tag}"
    return f"{stem}.{tag}.{suffix}"


def part_path(path: str, number: int) -> str:
    """The numbered part past the size limit: trace.json -> trace.1.json (number >= 1)."""
    return before_suffix(path, str(number))


def _write_all(f: BinaryIO, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[f.write(view) :]


class TraceFile:
    """The file (and its numbered parts) under a writer. The writer hands over pieces already
    encoded; `separator` goes between two pieces of a part (a JSON array's comma)."""

    def __init__(self, path: str, part_start: Callable[[int], bytes], part_end: bytes = b"",
                 separator: bytes = b"", lazy: bool = False, max_bytes: int = 0, split: bool = True,
                 end_event: Callable[[dict[str, Any]], bytes] | None = None) -> None:
        """end_event: encodes a metadata event (the end record of a part that the trace goes on from)."""
        self.path = path
        self.paths = [path]  # every file written, in order
        self.events_written = 0  # engine events in the files (whole batches only)
        self.bytes_written = 0
        self.events_not_written = 0  # past the limit with split=False
        self.max_bytes = max_bytes
        self._part_start = part_start
        self._part_end = part_end
        self._end_event = end_event
        self._part_events = 0
        self._good_bytes = 0  # the current part's length up to its last whole piece (0: its start is not whole)
        self._separator = separator
        self._split = split
        self._part_bytes = 0
        self._started = False  # the current part's start is written
        self._file: BinaryIO | None = None if lazy else open(path, "wb", buffering=0)  # noqa: SIM115 (closed in finish)
        self._created = self._file is not None

    @property
    def created(self) -> bool:
        """Whether a file exists (also after finish)."""
        return self._created

    def _put(self, data: bytes | memoryview) -> None:
        assert self._file is not None
        _write_all(self._file, data)
        self.bytes_written += len(data)
        self._part_bytes += len(data)

    def _piece(self, data: bytes | memoryview) -> None:
        if len(data):
            self._put(self._separator)
            self._put(data)
            self._good_bytes = self._part_bytes

    def _start(self, first_ns: int) -> None:
        if self._file is None:
            self._file = open(self.paths[-1], "wb", buffering=0)  # noqa: SIM115 (closed in finish)
            self._created = True
        self._good_bytes = 0
        self._put(self._part_start(first_ns))
        self._good_bytes = self._part_bytes
        self._started = True

    def write(self, new_tracks: bytes, body: bytes | memoryview, count: int, first_ns: int) -> None:
        """Appends a batch: the descriptions of tracks it uses for the first time, then its `count`
        events, the earliest at `first_ns`. A part that starts here starts with every track already."""
        if self._started and self.max_bytes and self._part_bytes >= self.max_bytes:
            if not self._split:
                self.events_not_written += count
                return
            next_part = part_path(self.path, len(self.paths))
            if self._end_event is not None:  # the part says where the trace goes on
                self._piece(self._end_event({"ended": "split", "next_part": os.path.basename(next_part),
                                             "part": len(self.paths) - 1, "events": self._part_events}))
            self._end_part()
            self.paths.append(next_part)
        if not self._started:
            self._start(first_ns)
        else:
            self._piece(new_tracks)
        self._piece(body)
        self.events_written += count
        self._part_events += count

    def _end_part(self) -> None:
        assert self._file is not None
        self._put(self._part_end)
        self._file.close()
        self._file = None
        self._part_bytes = 0
        self._part_events = 0
        self._good_bytes = 0
        self._started = False

    def finish(self, closing: bytes, first_ns: int, count: int = 0) -> None:
        """Ends the trace with `closing` (written past any size limit); `first_ns` stamps a part that
        got no batch. No file at all if it was lazy and nothing came."""
        if self._file is None:
            return
        if not self._started:
            self._start(first_ns)
        self._piece(closing)
        self.events_written += count
        self._end_part()

    def finish_after_failure(self, closing: bytes) -> bool:
        """After a write failed: cuts the current part back to its last whole piece and ends it with
        `closing` (no size limit applies). False where that cannot be done (not a regular file, the
        part's start not whole, a second failure): the file then simply has no end."""
        f, self._file = self._file, None
        if f is None:
            return False
        try:
            if self._good_bytes == 0 or not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return False
            f.truncate(self._good_bytes)
            f.seek(self._good_bytes)
            try:
                for data in (self._separator, closing, self._part_end):
                    _write_all(f, data)
            except OSError:  # no room even for the end: back to the last whole piece, with no end
                f.truncate(self._good_bytes)
                return False
            return True
        except (OSError, ValueError):
            return False
        finally:
            try:
                f.close()
            except OSError:
                pass

    def abandon(self) -> None:
        """Closes the file without finishing it (a fork child's copy must not write)."""
        try:
            if self._file is not None:
                self._file.close()
        except Exception:
            pass


class FileFact:
    """An attribute of a writer that is its TraceFile's (`self._file`) attribute of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: StreamedTrace, owner: type | None = None) -> Any:
        return getattr(obj._file, self.name)


class StreamedTrace:
    """What a writer shows of its TraceFile (`self._file`): the session and the tests read these. A batch
    of records is split once into calls, layer records and inference records (`write`); each format writes
    the three kinds."""

    _file: TraceFile
    created = FileFact()
    paths = FileFact()
    events_written = FileFact()
    bytes_written = FileFact()
    events_not_written = FileFact()
    max_bytes = FileFact()

    def write(self, records: np.ndarray) -> None:
        records, inferences = split_inferences(records)
        records, layers = split_layers(records)
        if len(records):
            self._write_calls(records)
        if len(layers):
            self._write_layers(layers)
        if len(inferences):
            self._write_inferences(inferences)

    def _write_calls(self, records: np.ndarray) -> None:
        raise NotImplementedError  # each format's own

    def _write_layers(self, layers: np.ndarray) -> None:
        raise NotImplementedError  # each format's own

    def _write_inferences(self, inferences: np.ndarray) -> None:
        raise NotImplementedError  # each format's own

    def end_record(self, end_metadata: dict[str, Any]) -> dict[str, Any]:
        """The trace's end metadata as written: what the session passed, and what the file itself knows
        (why it ended, its parts, the events in them and those left out)."""
        f = self._file
        end = dict(end_metadata, ended="size limit" if f.events_not_written else "closed", files=f.paths,
                   records_written=f.events_written, events_not_written=f.events_not_written)
        if f.events_not_written:
            end["limit_bytes"] = f.max_bytes
        return end

    def abandon(self) -> None:
        """Closes the file without finishing it (a fork child's copy must not write)."""
        self._file.abandon()
