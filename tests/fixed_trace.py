"""A trace written from fixed records by trt_trace's own writers, with the process id and the clocks
pinned, so that its bytes depend on the writers alone: tests/test_writer_bytes.py holds them to the bytes
the writers wrote before the track book (c747573), for both formats."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase

NAMES = ["", "_run_on_acc_0_engine", 'quo"te engine', "naïve ✓ 引擎"]
PID = 4242
CLOCK_NS = 1_700_000_000_123_456_789


def records() -> np.ndarray:
    """Three engines; calls one after another, overlapping calls of one engine (lanes 2 and 3), nested and
    failing calls, GPU spans on the caller's and the engine's stream, caller-stream waits, a CPU call."""
    rows = []
    call = 1
    for engine in (1, 2, 3):
        for k in range(6):
            begin = 1_000_000 + k * 50_000 + engine * 7
            if engine == 2 and k in (2, 3):
                begin -= 40_000  # overlaps the call before: another lane
            dur = (11_000, 2_000, 3_000, 1_000, 5_000)
            end = begin + dur[0]
            flags = (1 if k == 4 else 0) | (2 if engine == 3 and k == 1 else 0)
            device = 0xFFFF if engine == 3 and k == 5 else 0
            rows.append((begin, end, call, engine, 77, 0, flags, device, 0))
            t = begin
            for phase, ns in zip((Phase.WORKSPACE, Phase.INPUTS, Phase.OUTPUTS, Phase.ENQUEUE), dur[1:], strict=True):
                rows.append((t, t + ns, call, engine, 77, phase, flags, device, 0))
                t += ns
            if device != 0xFFFF:
                g0 = begin + 6_500
                if engine == 1:  # on the engine's own stream, with the caller's wait around it
                    rows.append((g0 - 300, g0 + 9_300, call, engine, 77, Phase.CALLER_WAIT, flags | 8, device, 5))
                    rows.append((g0, g0 + 9_000, call, engine, 77, Phase.GPU, flags | 8, device, 9))
                else:
                    rows.append((g0, g0 + 8_000 + k * 100, call, engine, 77, Phase.GPU, flags, device, 3))
            call += 1
    out = np.array(rows, dtype=RECORD_DTYPE)
    return out[np.argsort(out["end_ns"], kind="stable")]


@contextmanager
def pinned():
    saved = os.getpid, time.clock_gettime_ns, time.time_ns
    os.getpid = lambda: PID
    time.clock_gettime_ns = lambda clock: CLOCK_NS + int(clock)
    time.time_ns = lambda: CLOCK_NS
    try:
        yield
    finally:
        os.getpid, time.clock_gettime_ns, time.time_ns = saved


def write(folder: Path) -> dict[str, bytes]:
    """Both formats, in batches of 7 records (tracks appear across batches): {file name: its bytes}."""
    out = {}
    recs = records()
    here = os.getcwd()
    for name, cls in (("fixed.json", ChromeJsonWriter), ("fixed.pftrace", PerfettoTraceWriter)):
        path = folder / name
        os.chdir(folder)  # the end record names the files as given: a relative name, the same everywhere
        try:
            with pinned():
                writer = cls(name, lambda: list(NAMES))
                writer.begin("fixed.py", {"tool": "trt_trace", "pid": PID, "clock": "CLOCK_MONOTONIC"})
                for i in range(0, len(recs), 7):
                    writer.write(recs[i:i + 7])
                writer.finish({"records_drained": len(recs), "dropped_events": 0})
        finally:
            os.chdir(here)
        out[name] = path.read_bytes()
    return out


def write_native(folder: Path, batch: int = 7) -> bytes:
    """fixed.json as the native writer (csrc/session) writes it from the same records and names."""
    import orjson
    import torch

    from trt_trace.native import ops
    from trt_trace.runtime.native_trace import process_head

    recs = records()
    path = folder / "fixed.json"
    head = process_head(PID, "fixed.py", {"tool": "trt_trace", "pid": PID, "clock": "CLOCK_MONOTONIC"})
    end = {"records_drained": len(recs), "dropped_events": 0, "ended": "closed", "files": ["fixed.json"],
           "records_written": len(recs), "events_not_written": 0}
    ops.json_trace_from_records(str(path), torch.from_numpy(recs.view(np.uint8).copy()), batch, PID, True, head,
                                NAMES, [], 0, True, orjson.dumps(end))
    return path.read_bytes()


def write_native_perfetto(folder: Path, batch: int = 7) -> bytes:
    """fixed.pftrace as the native writer (csrc/session) writes it from the same records, names and (pinned)
    clock readings, its metadata encoded as NativeTrace encodes it."""
    import torch

    from trt_trace.io.writers.perfetto_trace import metadata_annotations, start_metadata
    from trt_trace.native import ops

    recs = records()
    path = folder / "fixed.pftrace"
    start = start_metadata({"tool": "trt_trace", "pid": PID, "clock": "CLOCK_MONOTONIC"})
    end = {"records_drained": len(recs), "dropped_events": 0, "ended": "closed", "files": ["fixed.pftrace"],
           "records_written": len(recs), "events_not_written": 0}
    clocks = [CLOCK_NS + time.CLOCK_BOOTTIME, CLOCK_NS + time.CLOCK_MONOTONIC, CLOCK_NS]  # as pinned() reads them
    ops.perfetto_trace_from_records(str(path), torch.from_numpy(recs.view(np.uint8).copy()), batch, PID, True,
                                    "fixed.py", metadata_annotations(start), 0, NAMES, [], 0, True,
                                    metadata_annotations(end), CLOCK_NS + time.CLOCK_MONOTONIC, clocks)
    return path.read_bytes()


if __name__ == "__main__":  # the digests tests/test_writer_bytes.py checks against
    import hashlib
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for name, data in write(Path(d)).items():
            print(name, len(data), hashlib.sha256(data).hexdigest())
    sys.exit(0)
