"""Streams records as a Chrome trace JSON array, as Perfetto's JSON importer reads it.

Format decisions (see ../shared/notes/trace-formats.md):
* A top-level JSON *array*, flushed after every batch: if the process is killed the file still
  loads (Perfetto drops the half-written last event). A clean finish closes the array, so strict
  JSON parsers read it too.
* One track per engine: pid = the process, tid = a synthetic track id per (engine, lane) named by a
  `thread_name` metadata event; the calling OS thread goes into each slice's args. The Perfetto UI
  (v52) lists a process's thread tracks by tid, ignoring `thread_sort_index`, and shows each as
  "<thread name> <tid>"; so tids are small and ordered as the tracks should be: engine id * 1000,
  + lane for the host lanes, + 500 + lane for the GPU lanes ("_run_on_acc_0_engine 1000",
  "_run_on_acc_0_engine GPU 1500", "_run_on_acc_1_engine 2000"): each engine's GPU track right
  under its host track(s), and the number reads as engine id and track. (Past 500 lanes of one
  kind, lanes go to tids above 2**31, listed after all others. `thread_sort_index` is still written
  for viewers that honor it.)
* Complete events ("X") with ts/dur in microseconds with three decimals (ns precision).
* Trace-level facts (clock, versions, drops) ride on `trt_trace_metadata` M events, which viewers
  ignore and `trt-trace summary` reads.
* Size limit (the Perfetto UI cannot open multi-GB JSON): past `max_bytes` the writer either
  continues in numbered files (trace.1.json, trace.2.json, ...; each a complete trace with its own
  track names) or stops writing and counts what it left out.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np
import orjson

from .. import ops
from ..tracks import LaneAssigner, decode_track, place_on_lanes, present_codes, track_codes

CATEGORY = "trt_trace"
ENGINE_TRACKS = 1000  # track ids of one engine: engine id * 1000 + ...
GPU_LANES = 500  # ... + lane (host) or + 500 + lane (GPU)
OVERFLOW_TRACKS = 1 << 31  # lanes past 500: OVERFLOW_TRACKS + (engine id * 2 + gpu) * 2**16 + lane
METADATA_EVENT = "trt_trace_metadata"
FLOW_NAME = "launch"  # enqueue slice -> the call's GPU slice


def _write_all(f: BinaryIO, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[f.write(view) :]


def track_id(engine_id: int, lane: int, gpu: bool = False) -> int:
    return int(track_ids(np.array([engine_id]), np.array([lane]), np.array([gpu]))[0])


def track_ids(engine_ids: np.ndarray, lanes: np.ndarray, is_gpu: np.ndarray) -> np.ndarray:
    """The tid of each record's track (see the module docstring), vectorised."""
    engines = engine_ids.astype(np.int64)
    tids = engines * ENGINE_TRACKS + is_gpu * GPU_LANES + lanes
    past = lanes >= GPU_LANES
    if past.any():  # hundreds of simultaneous calls of one engine: still a track of their own
        tids[past] = OVERFLOW_TRACKS + ((engines[past] * 2 + is_gpu[past]) << 16) + lanes[past] - GPU_LANES
    return tids


class ChromeJsonWriter:
    """`write(records)` for each drained batch, then `finish(end_metadata)` once."""

    def __init__(self, path: str, engine_names: Callable[[], list[str]], lazy: bool = False,
                 max_bytes: int = 0, split: bool = True) -> None:
        """lazy=True: the file is created at the first engine event, so processes that import torch
        but never run an engine (compile workers, data loaders) leave no empty trace behind.
        max_bytes > 0: size limit per file; split=True continues in numbered files, False stops."""
        self.path = path
        self.paths = [path]  # every file written, in order
        self._max_bytes = max_bytes
        self._split = split
        self._file_bytes = 0
        self.events_not_written = 0  # past the limit with split=False
        self._track_meta: list[dict[str, Any]] = []  # every track's name events, for each new file
        self._engine_names = engine_names
        self._names: list[str] = []
        self._engine_json: list[str] = []  # names as JSON string literals, for the C++ formatter
        self._file: BinaryIO | None = None if lazy else open(path, "wb", buffering=0)  # noqa: SIM115 (closed in finish)
        self._header: list[dict[str, Any]] = []
        self._process_meta: list[dict[str, Any]] = []
        self.gpu_flows = True  # set False when GPU timing is off (no GPU slice to point at)
        self._pid = os.getpid()
        self._lanes = LaneAssigner()
        self._gpu_lanes = LaneAssigner()
        self._named_tracks: set[int] = set()
        self._first = True
        self.events_written = 0
        self.bytes_written = 0
        self._format_buffer = ops.FormatBuffer()  # the formatter's output, reused from batch to batch

    # -- writing ---------------------------------------------------------------------------------

    def _emit(self, events: list[dict[str, Any]], body: bytes | memoryview = b"", count: int = 0) -> None:
        """Writes `events` (dicts), then `body` (`count` events already formatted, comma-separated)."""
        pieces = []
        if events:
            pieces.append(orjson.dumps(events)[1:-1])  # the list's items, comma-separated
            count += len(events)
        if len(body):
            pieces.append(body)
        if not pieces:
            return
        if self._max_bytes and self._file_bytes >= self._max_bytes:
            if not self._split:
                self.events_not_written += count
                return
            self._next_file()
        if self._file is None:
            self._file = open(self.path, "wb", buffering=0)  # noqa: SIM115 (closed in finish)
        # Unbuffered, whole batches: nothing sits in a Python buffer that a forked child could flush
        # into this file, and a killed process leaves every drained batch on disk.
        size = 0
        for piece in pieces:
            sep = b"[\n" if self._first else b",\n"
            self._first = False
            _write_all(self._file, sep)
            _write_all(self._file, piece)
            size += len(sep) + len(piece)
        self.events_written += count
        self.bytes_written += size
        self._file_bytes += size

    def _next_file(self) -> None:
        """Closes the full file and opens the next numbered one, starting with every track's name."""
        assert self._file is not None
        _write_all(self._file, b"\n]\n")
        self._file.close()
        stem, dot, suffix = self.path.rpartition(".")
        base = stem if dot else self.path
        self.paths.append(f"{base}.{len(self.paths)}{dot}{suffix if dot else ''}")
        self._file = open(self.paths[-1], "wb", buffering=0)  # noqa: SIM115 (closed in finish)
        self._first = True
        self._file_bytes = 0
        self._emit(self._process_meta + self._track_meta)

    @property
    def created(self) -> bool:
        return self._file is not None

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        self._header = [
            {"ph": "M", "name": "process_name", "pid": self._pid, "tid": 0, "args": {"name": process_name}},
            {"ph": "M", "name": METADATA_EVENT, "pid": self._pid, "tid": 0, "args": metadata},
        ]
        self._process_meta = list(self._header)
        if self._file is not None:
            self._emit(self._header)
            self._header = []

    def _engine_name(self, engine_id: int) -> str:
        if engine_id >= len(self._names):
            self._names = self._engine_names()
        return self._names[engine_id] if engine_id < len(self._names) else f"engine_{engine_id}"

    def _track_events(self, engine_id: int, lane: int, gpu: bool = False) -> list[dict[str, Any]]:
        tid = track_id(engine_id, lane, gpu)
        if tid in self._named_tracks:
            return []
        self._named_tracks.add(tid)
        name = self._engine_name(engine_id) + (" GPU" if gpu else "") + ("" if lane == 0 else f" ({lane + 1})")
        meta = [  # the tid order is the designed order; the sort index says so to viewers that read it
            {"ph": "M", "name": "thread_name", "pid": self._pid, "tid": tid, "args": {"name": name}},
            {"ph": "M", "name": "thread_sort_index", "pid": self._pid, "tid": tid, "args": {"sort_index": tid}},
        ]
        self._track_meta += meta
        return meta

    def write(self, records: np.ndarray) -> None:
        if len(records) == 0:
            return
        lanes, is_gpu = place_on_lanes(records, self._lanes, self._gpu_lanes)
        tids = track_ids(records["engine_id"], lanes, is_gpu)
        # Names for tracks seen for the first time (few per batch: a Python loop over the ones present).
        meta: list[dict[str, Any]] = self._header
        self._header = []
        codes, stride = track_codes(records, lanes, is_gpu)
        for code in present_codes(codes).tolist():
            engine, lane, gpu = decode_track(code, stride)
            if track_id(engine, lane, gpu) not in self._named_tracks:
                meta += self._track_events(engine, lane, gpu)
        if len(self._engine_json) < len(self._names) or int(records["engine_id"].max()) >= len(self._engine_json):
            self._engine_name(int(records["engine_id"].max()))  # refresh the names
            self._engine_json = [orjson.dumps(n).decode() for n in self._names] or ['""']
        body = ops.chrome_json_events(records, tids, self._pid, self._engine_json, self.gpu_flows, self._format_buffer)
        self._emit(meta, body, len(records))

    def finish(self, end_metadata: dict[str, Any]) -> None:
        if self._file is None:  # lazy and nothing was traced: no file
            return
        end_metadata = dict(end_metadata, files=self.paths, events_not_written=self.events_not_written)
        limit, self._max_bytes = self._max_bytes, 0  # the closing metadata always fits
        self._emit([{"ph": "M", "name": METADATA_EVENT, "pid": self._pid, "tid": 0, "args": end_metadata}])
        self._max_bytes = limit
        _write_all(self._file, b"\n]\n")
        self._file.close()

    def abandon(self) -> None:
        """Closes the file without finishing it (a fork child's copy must not write)."""
        try:
            if self._file is not None:
                self._file.close()
        except Exception:
            pass
