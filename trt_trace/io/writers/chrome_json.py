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
  under its host track(s), and the number reads as engine id and track; an engine's layer track(s)
  (TRT_TRACE_LAYERS, docs/layers.md), "<engine> layers", are + 950 + lane. (Past 500 lanes of one
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

from ...native import ops
from ...schema.trace_format import (
    INFERENCE_CATEGORY,
    INFERENCE_KINDS,
    INFERENCE_NAME,
    LAYERS_TRACK,
    METADATA_EVENT,
    Flag,
)
from .. import formats
from ..tracks import TrackBook, inference_track_id, layer_track_ids, track_id, track_ids
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
        # Tracks, lanes, engine and layer names: this writer only encodes them.
        self._book = TrackBook(engine_names, ops.layer_names)
        self._engine_json: list[str] = []  # names as JSON string literals, for the C++ formatter
        self._process_meta: list[dict[str, Any]] = []
        self.gpu_flows = True  # set False when GPU timing is off (no GPU slice to point at)
        self._pid = os.getpid()
        self._format_buffer = ops.FormatBuffer()  # the formatter's output, reused from batch to batch
        self._layer_json: list[str] = []  # layer names as JSON string literals (TRT_TRACE_LAYERS)
        self._layer_buffer = ops.FormatBuffer()
        self._inference_tids: dict[int, int] = {}  # calling thread -> its inference track's tid

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

    def _write_inferences(self, inferences: np.ndarray) -> None:
        """Inference slices (docs/inference.md) on one "inference · <thread>" track per calling thread.
        Encoded here, a few per batch, as csrc/format/inference_events.h does (byte for byte)."""
        meta: list[dict[str, Any]] = []
        events = []
        pid = self._pid
        for r in inferences.tolist():  # (begin, end, call id, engine id, thread, phase, flags, device, stream)
            begin, end, call_id, thread = int(r[0]), int(r[1]), int(r[2]), int(r[4])
            tid = self._inference_tids.get(thread)
            if tid is None:
                tid = self._inference_tids[thread] = inference_track_id(len(self._inference_tids))
                meta += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                          "args": {"name": f"{INFERENCE_NAME} \u00b7 {thread}"}},
                         {"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}}]
            error = ',"error":true' if int(r[6]) & Flag.ERROR else ""
            kind = INFERENCE_KINDS.get(int(r[8]), "other")
            events.append(f'{{"ph":"X","cat":"{INFERENCE_CATEGORY}","name":"{INFERENCE_NAME}","ts":{_us(begin)},'
                          f'"dur":{_us(end - begin)},"pid":{pid},"tid":{tid},"args":{{"kind":"{kind}",'
                          f'"call_id":{call_id},"thread":{thread}{error}}}}}')
        self._track_meta += meta
        body = ",\n".join(events).encode()
        self._file.write(orjson.dumps(meta)[1:-1] if meta else b"", body, len(inferences),
                         int(inferences["begin_ns"].min()))

    def _refresh_engine_json(self, top_engine_id: int) -> None:
        if len(self._engine_json) < len(self._book.names) or top_engine_id >= len(self._engine_json):
            self._book.engine_name(top_engine_id)  # refresh the names
            self._engine_json = [orjson.dumps(n).decode() for n in self._book.names] or ['""']

    def _write_calls(self, records: np.ndarray) -> None:
        placed = self._book.place(records)
        tids = track_ids(records["engine_id"], placed.lanes, placed.is_gpu)
        # Names for tracks seen for the first time.
        meta: list[dict[str, Any]] = []
        for track in placed.new_tracks:
            meta += self._track_events(track.engine_id, track.lane, track.gpu)
        self._refresh_engine_json(int(records["engine_id"].max()))
        body = ops.chrome_json_events(records, tids, self._pid, self._engine_json, self.gpu_flows, self._format_buffer)
        new_tracks = orjson.dumps(meta)[1:-1] if meta else b""
        self._file.write(new_tracks, body, len(records), int(records["begin_ns"].min()))

    def _write_layers(self, layers: np.ndarray) -> None:
        """Layer slices (docs/layers.md) on "<engine> layers" tracks, named once per track."""
        placed, new_ids = self._book.place_layers(layers)
        if new_ids:
            self._layer_json += [orjson.dumps(self._book.layer_names[i]).decode() for i in new_ids]
        tids = layer_track_ids(layers["engine_id"], placed.lanes)
        meta: list[dict[str, Any]] = []
        for track in placed.new_tracks:
            tid = int(layer_track_ids(np.array([track.engine_id]), np.array([track.lane]))[0])
            name = f"{self._book.engine_name(track.engine_id)} {LAYERS_TRACK}" + (
                "" if track.lane == 0 else f" ({track.lane + 1})")
            meta += [{"ph": "M", "name": "thread_name", "pid": self._pid, "tid": tid, "args": {"name": name}},
                     {"ph": "M", "name": "thread_sort_index", "pid": self._pid, "tid": tid,
                      "args": {"sort_index": tid}}]
        self._track_meta += meta
        self._refresh_engine_json(int(layers["engine_id"].max()))
        body = ops.layer_json_events(layers, tids, self._pid, self._engine_json, self._layer_json, self._layer_buffer)
        self._file.write(orjson.dumps(meta)[1:-1] if meta else b"", body, len(layers), int(layers["begin_ns"].min()))

    def _metadata_event(self, args: dict[str, Any]) -> bytes:
        return orjson.dumps({"ph": "M", "name": METADATA_EVENT, "pid": self._pid, "tid": 0, "args": args})

    def finish(self, end_metadata: dict[str, Any]) -> None:
        self._file.finish(self._metadata_event(self.end_record(end_metadata)), first_ns=0)

    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool:
        """Ends the file after a failed write, with what it holds up to its last whole batch; False: no end."""
        end = dict(self.end_record(end_metadata), ended="write failed", error=error)
        return self._file.finish_after_failure(self._metadata_event(end))


def _us(ns: int) -> str:
    """ns as microseconds with exactly three decimals, as the native formatter writes them (JsonOut::us)."""
    sign, ns = ("-", -ns) if ns < 0 else ("", ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


formats.register_writer("json", ChromeJsonWriter)
