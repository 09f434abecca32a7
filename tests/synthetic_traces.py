"""Traces built from records with exact durations, written by trt_trace's own writers: the
readers' and diff's tests use them instead of timing real calls, so every figure they check is a
constructed quantity (no wall-clock noise)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase

GAP_NS = 1_000_000  # calls of one engine 1 ms apart


def call_rows(call_id: int, engine: int, begin: int, phases: list[int], device: int | None = None,
              gpu_ns: int | None = None, flags: int = 0) -> list[tuple]:
    """A call of the given host phase durations (ns; 0: the phase is not written, as a call with
    pre-allocated outputs has no outputs phase), and its GPU span."""
    dev = 0xFFFF if device is None else device
    total = sum(phases)
    rows = [(begin, begin + total, call_id, engine, 42, Phase.CALL, flags, dev, 0)]
    t = begin
    # By name: a phase added to the list is simply absent from these calls (its duration 0).
    for p, ns in zip((Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE), phases, strict=True):
        if ns:
            rows.append((t, t + ns, call_id, engine, 42, p, flags, dev, 0))
        t += ns
    if gpu_ns is not None:
        rows.append((begin + phases[0], begin + phases[0] + gpu_ns, call_id, engine, 42, Phase.GPU, flags, dev, 7))
    return rows


def engine_calls(engine: int, durations: np.ndarray, first_call: int, first_begin: int = 10**9,
                 **kw) -> list[tuple]:
    """Calls of one engine with the given totals: 5% workspace, 10% inputs, 5% outputs, the rest enqueue."""
    rows = []
    for k, total in enumerate(durations.tolist()):
        total = int(total)
        ws, inp, out = total // 20, total // 10, total // 20
        rows += call_rows(first_call + k, engine, first_begin + k * GAP_NS, [ws, inp, out, total - ws - inp - out],
                          **kw)
    return rows


def write_trace(path: Path, rows: list[tuple] | list[np.ndarray], names: list[str], end: dict | None = None,
                batches: int = 1, **metadata) -> Path:
    """The records through the real writer of the path's format, in `batches` drained batches, with
    start and end metadata as a session writes them (end=None: no end at all, as after a kill)."""
    records = rows if isinstance(rows, np.ndarray) else np.array(rows, dtype=RECORD_DTYPE)
    writer = (PerfettoTraceWriter if path.suffix == ".pftrace" else ChromeJsonWriter)(str(path), lambda: names)
    writer.begin("synthetic", {"tool": "trt_trace", "pid": metadata.pop("pid", 4242), "host": "h",
                               "monotonic_ns": 1, "wall_ns": 1_750_000_000 * 10**9, **metadata})
    for part in np.array_split(records, batches):
        writer.write(part)
    if end is not None:
        if end:  # the end a test asks for ("size limit", "split", ...) over the one the writer would say
            own_end = writer.end_record
            writer.end_record = lambda metadata: {**own_end(metadata), **end}  # type: ignore[method-assign]
        writer.finish({"dropped_events": 0, "threads": [], "monotonic_ns": 10**12,
                       "wall_ns": 1_750_000_000 * 10**9 + 10**12, "records_written": len(records), **end})
    else:
        writer._file._file.close()  # the process died: no end metadata, no closing bracket
    return path


def engines_trace(path: Path, engines: dict[str, np.ndarray], end: dict | None = None, **kw) -> Path:
    """One engine per entry (name -> its calls' totals in ns)."""
    rows: list[tuple] = []
    call = 1
    for i, durations in enumerate(engines.values()):
        rows += engine_calls(i + 1, durations, call, first_begin=10**9 + i * 1000)
        call += len(durations)
    return write_trace(path, rows, ["", *engines], end={} if end is None else end, **kw)
