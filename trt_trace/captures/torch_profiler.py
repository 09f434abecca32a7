"""torch.profiler captures: the engine calls of an `export_chrome_trace` file (JSON, or gzipped).

With trt_trace imported, every engine call that a torch.profiler session records is a user scope
`trt::<engine>/execute_engine` (category `user_annotation`) on the calling thread, holding one scope
per host phase, `trt::<engine>/<phase>` (csrc/hook/profiler_scopes.h). With CUDA activity recorded
the same file holds, per CUDA API call, a `cuda_runtime` (or `cuda_driver`) event on the calling
thread and, per launched piece of work, a `kernel`, `gpu_memcpy` or `gpu_memset` event on the device's
row, both carrying CUPTI's correlation id as `args.correlation` (the id the `ac2g` flow arrows join).
join.py turns those into per-call rows: kernels found through that id, never by time overlap.

Times: Kineto writes `ts` in µs from `baseTimeNanoseconds` (the Unix epoch in ns); the rows are
`baseTimeNanoseconds + ts` in ns, i.e. wall-clock ns, where the header has it.
"""

from __future__ import annotations

import re
import zlib
from typing import Any

import numpy as np

from .chrome_stream import CHUNK_BYTES, ChromeStream
from .join import JoinInput, join
from .model import KERNEL, MEMCPY, MEMSET, SCOPE_PHASE_CODES, CaptureCalls

SOURCE = "torch.profiler"
SCOPE_PREFIX = "trt::"
_PHASE = SCOPE_PHASE_CODES  # trt::<engine>::<phase> scopes
_API_CATEGORIES = frozenset(("cuda_runtime", "cuda_driver", "runtime", "driver"))
_DEVICE_KINDS = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET, "memset": MEMSET}
# API calls that put work on a device: a capture missing their activity says so (launches_unmatched).
_LAUNCH = re.compile(r"^(cuda|cu)(Launch|Memcpy|Memset|GraphLaunch)")
# The bytes every event this reader uses holds (its name's prefix or its category): other events, most of
# a capture, are never parsed (chrome_stream.ChromeStream markers).
_MARKERS = (b"trt::", *(b'"%s"' % c.encode() for c in (*_API_CATEGORIES, *_DEVICE_KINDS)))
_HINTS = (b'"schemaVersion"', b'"deviceProperties"', b'"baseTimeNanoseconds"', b'"displayTimeUnit"',
          b'"cpu_op"', b'"user_annotation"', b'"cuda_runtime"', b'"PyTorch Profiler')


def sniff(head: bytes) -> bool:
    """Whether a file's first bytes (say 64 KiB) look like a torch.profiler Chrome trace (for a readers
    registry that picks a reader by content). trt_trace's own JSON traces are arrays of `trt_trace`
    events and do not match."""
    if head[:2] == b"\x1f\x8b":
        head = _gunzip_start(head)
    text = head.lstrip()
    if text[:1] not in (b"{", b"["):
        return False
    if b'"trt_trace_metadata"' in text or b'"cat": "trt_trace"' in text or b'"cat":"trt_trace"' in text:
        return False
    return (text[:1] == b"{" and b'"traceEvents"' in text) or any(h in text for h in _HINTS)


def _gunzip_start(head: bytes) -> bytes:
    """What the first bytes of a gzip file decompress to (the sniff window cuts the stream)."""
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 20)
    except zlib.error:
        return b""


def _int_or(value: Any, default: int = -1) -> int:
    """Kineto's pids and tids are ints for threads and devices, strings for its own rows ("Spans")."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _columns(blocks: list[np.ndarray], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    table = np.concatenate(blocks) if blocks else np.zeros((0, len(names)), dtype=np.int64)
    return {n: table[:, i].copy() for i, n in enumerate(names)}


def read(path: str, chunk_bytes: int = CHUNK_BYTES) -> CaptureCalls:
    """The engine calls of a torch.profiler trace. Raises CaptureError (one line) on a file that is
    not one; a file cut short gives the calls before the cut, with a note."""
    stream = ChromeStream(path, chunk_bytes, _MARKERS)
    threads: dict[tuple[Any, Any], int] = {}
    engines: dict[str, int] = {}
    names: dict[str, int] = {}
    launch_names: dict[str, int] = {}
    parts: dict[str, list[np.ndarray]] = {"scopes": [], "api": [], "device": []}
    scopes: list[tuple[int, ...]] = []
    api: list[tuple[int, ...]] = []
    device: list[tuple[int, ...]] = []
    skipped = 0
    for events in stream:
        for e in events:
            if e.get("ph") != "X":
                continue
            cat = e.get("cat")
            name = e.get("name")
            try:
                if isinstance(name, str) and name.startswith(SCOPE_PREFIX) and cat not in _DEVICE_KINDS \
                        and not (isinstance(cat, str) and cat.startswith("gpu")):
                    engine, _, phase = name[len(SCOPE_PREFIX):].rpartition("/")
                    code = _PHASE.get(phase)
                    if code is None or not engine:
                        continue
                    th = threads.setdefault((e.get("pid"), e.get("tid")), len(threads))
                    begin = round(float(e["ts"]) * 1000.0)
                    scopes.append((th, begin, begin + round(float(e.get("dur", 0)) * 1000.0),
                                   engines.setdefault(engine, len(engines)), code, -1))
                elif cat in _API_CATEGORIES:
                    args = e.get("args")
                    corr = args.get("correlation") if isinstance(args, dict) else None
                    if corr is None:
                        continue
                    th = threads.setdefault((e.get("pid"), e.get("tid")), len(threads))
                    launch = launch_names.get(name)
                    if launch is None:
                        launch = launch_names[name] = int(bool(_LAUNCH.match(str(name))))
                    begin = round(float(e["ts"]) * 1000.0)
                    api.append((th, begin, begin + round(float(e.get("dur", 0)) * 1000.0), int(corr), launch))
                elif cat in _DEVICE_KINDS:
                    args = e.get("args")
                    if not isinstance(args, dict) or args.get("correlation") is None:
                        continue
                    begin = round(float(e["ts"]) * 1000.0)
                    device.append((int(args["correlation"]), _DEVICE_KINDS[cat],
                                   names.setdefault(str(name), len(names)), begin,
                                   begin + round(float(e.get("dur", 0)) * 1000.0),
                                   _int_or(args.get("device", e.get("pid"))),
                                   _int_or(args.get("stream", e.get("tid")))))
            except (KeyError, TypeError, ValueError, OverflowError):
                skipped += 1  # an event without a usable ts, dur or id: not one the profiler wrote
        for key, rows in (("scopes", scopes), ("api", api), ("device", device)):
            if rows:  # per chunk into int64 blocks: no Python tuple outlives its chunk
                try:
                    parts[key].append(np.asarray(rows, dtype=np.int64))
                except OverflowError:  # a value past int64 (not a profiler's): those rows one by one
                    for r in rows:
                        try:
                            parts[key].append(np.asarray([r], dtype=np.int64))
                        except OverflowError:
                            skipped += 1
                rows.clear()
    header = stream.header
    base = header.get("baseTimeNanoseconds")
    base = base if isinstance(base, int) and not isinstance(base, bool) else 0
    clock = ("Unix epoch ns (baseTimeNanoseconds + ts)" if base else "the trace's ts (µs) in ns")
    thread_keys = list(threads)
    inp = JoinInput(
        scopes=_columns(parts["scopes"], ("thread", "begin", "end", "engine", "phase", "call_id")),
        api=_columns(parts["api"], ("thread", "begin", "end", "corr", "launch")),
        device=_columns(parts["device"], ("corr", "kind", "name", "begin", "end", "device", "stream")),
        thread_pid=np.asarray([_int_or(k[0]) for k in thread_keys], dtype=np.int64),
        thread_tid=np.asarray([_int_or(k[1]) for k in thread_keys], dtype=np.int64),
        engines=list(engines), activity_names=list(names), has_device_activity=bool(parts["device"]))
    for cols in (inp.scopes, inp.api):
        cols["begin"] += base
        cols["end"] += base
    inp.device["begin"] += base
    inp.device["end"] += base
    calls, notes = join(inp, SOURCE, path, clock)
    if stream.cut:
        notes.insert(0, f"the file ends inside its events (cut short after {stream.bytes_read} bytes): calls "
                        "whose scopes came later are missing")
    if skipped:
        notes.append(f"{skipped} event(s) without a usable ts, dur or correlation id skipped")
    if not len(calls):
        notes.append("no trt:: engine scopes: trt_trace was not imported while the profiler recorded, or no "
                     "engine call ran")
    calls.metadata = {k: v for k, v in header.items() if isinstance(v, (str, int, float, bool))}
    if isinstance(header.get("deviceProperties"), list):
        calls.metadata["devices"] = [d.get("name") for d in header["deviceProperties"] if isinstance(d, dict)]
    calls.notes = notes
    return calls

