"""Streams records as a Chrome trace JSON array, as Perfetto's JSON importer reads it.

Format decisions (the importer's rules: docs/trace-formats.md):
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
* Size limit (the Perfetto UI cannot open multi-GB JSON): past `max_bytes` the trace either
  continues in numbered files (trace.1.json, trace.2.json, ...; each a complete trace with its own
  process and track names) or stops writing and counts what it left out (trace_file.py).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from .. import ops
from ..trace_format import METADATA_EVENT
from ..tracks import TrackBook, track_id, track_ids
from .trace_file import StreamedTrace, TraceFile


class ChromeJsonWriter(StreamedTrace):
    """`write(records)` for each drained batch, then `finish(end_metadata)` once."""

    def __init__(self, path: str, engine_names: Callable[[], list[str]], lazy: bool = False,
                 max_bytes: int = 0, split: bool = True) -> None:
        """lazy=True: the file is created at the first engine event. max_bytes > 0: size limit per
        file; split=True continues in numbered files, False stops writing (trace_file.py)."""
        self._file = TraceFile(path, self._part_start, part_end=b"\n]\n", separator=b",\n", lazy=lazy,
                               max_bytes=max_bytes, split=split, end_event=self._metadata_event)
        self.path = path
        self._track_meta: list[dict[str, Any]] = []  # every track's name events, for each new file
        self._book = TrackBook(engine_names)  # tracks, lanes and engine names: this writer only encodes them
        self._engine_json: list[str] = []  # names as JSON string literals, for the C++ formatter
        self._process_meta: list[dict[str, Any]] = []
        self.gpu_flows = True  # set False when GPU timing is off (no GPU slice to point at)
        self._pid = os.getpid()
        self._format_buffer = ops.FormatBuffer()  # the formatter's output, reused from batch to batch

    # -- the file ---------------------------------------------------------------------------------

    def _part_start(self, first_ns: int) -> bytes:
        """Every file opens the array with the process's names and metadata and every track's name."""
        return b"[\n" + orjson.dumps(self._process_meta + self._track_meta)[1:-1]

    # -- the writer interface --------------------------------------------------------------------

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None:
        self._process_meta = [
            {"ph": "M", "name": "process_name", "pid": self._pid, "tid": 0, "args": {"name": process_name}},
            {"ph": "M", "name": METADATA_EVENT, "pid": self._pid, "tid": 0, "args": metadata},
        ]

    def _track_events(self, engine_id: int, lane: int, gpu: bool = False) -> list[dict[str, Any]]:
        tid = track_id(engine_id, lane, gpu)
        name = self._book.engine_name(engine_id) + (" GPU" if gpu else "") + ("" if lane == 0 else f" ({lane + 1})")
        meta = [  # the tid order is the designed order; the sort index says so to viewers that read it
            {"ph": "M", "name": "thread_name", "pid": self._pid, "tid": tid, "args": {"name": name}},
            {"ph": "M", "name": "thread_sort_index", "pid": self._pid, "tid": tid, "args": {"sort_index": tid}},
        ]
        self._track_meta += meta
        return meta

    def write(self, records: np.ndarray) -> None:
        if len(records) == 0:
            return
        placed = self._book.place(records)
        tids = track_ids(records["engine_id"], placed.lanes, placed.is_gpu)
        # Names for tracks seen for the first time.
        meta: list[dict[str, Any]] = []
        for track in placed.new_tracks:
            meta += self._track_events(track.engine_id, track.lane, track.gpu)
        names = self._book.names
        if len(self._engine_json) < len(names) or int(records["engine_id"].max()) >= len(self._engine_json):
            self._book.engine_name(int(records["engine_id"].max()))  # refresh the names
            self._engine_json = [orjson.dumps(n).decode() for n in self._book.names] or ['""']
        body = ops.chrome_json_events(records, tids, self._pid, self._engine_json, self.gpu_flows, self._format_buffer)
        new_tracks = orjson.dumps(meta)[1:-1] if meta else b""
        self._file.write(new_tracks, body, len(records), int(records["begin_ns"].min()))

    def _metadata_event(self, args: dict[str, Any]) -> bytes:
        return orjson.dumps({"ph": "M", "name": METADATA_EVENT, "pid": self._pid, "tid": 0, "args": args})

    def finish(self, end_metadata: dict[str, Any]) -> None:
        self._file.finish(self._metadata_event(self.end_record(end_metadata)), first_ns=0)

    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool:
        """Ends the file after a failed write, with what it holds up to its last whole batch; False: no end."""
        end = dict(self.end_record(end_metadata), ended="write failed", error=error)
        return self._file.finish_after_failure(self._metadata_event(end))
