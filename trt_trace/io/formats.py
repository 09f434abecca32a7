"""The one registry of trace formats: what each is called, how a file of it is recognised (by its
content, its suffix as a hint), and which class reads and which writes it. Writers (session
start-up, writers/select.py), readers (trt_trace/io/readers), configuration (TRT_TRACE_FORMAT) and
the CLI's choices all ask this module, so a format is added in one place, and no reader imports a
writer or the summary module (or the other way round): entries name their classes as
"module:Class", imported on first use.

Input kinds that trt_trace reads but does not write (another tool's traces, e.g. torch.profiler's
Chrome JSON or an Nsight Systems SQLite export) register with `writer=None` and a `sniff` that
looks at the file's first bytes; `priority` orders the sniffs (a specific kind before the generic
Chrome JSON it is a case of).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

from ..schema.trace_format import JSON_SUFFIX, PERFETTO_SUFFIXES


class TraceWriter(Protocol):
    """What a registered writer is (the session and the flight recorder's dumps use no more of it): built as
    `Writer(path, engine_names, lazy=, max_bytes=, split=)`; then begin, write per drained batch, finish."""

    created: bool  # the file exists (a lazy writer creates it at its first batch)
    paths: list[str]  # every file written (parts past the size limit)
    gpu_flows: bool  # launch flows from enqueue to GPU slices (set before begin)
    events_not_written: int  # left out at the size limit with split=False
    events_written: int
    max_bytes: int

    def begin(self, process_name: str, metadata: dict[str, Any]) -> None: ...
    def write(self, records: np.ndarray) -> None: ...
    def finish(self, end_metadata: dict[str, Any]) -> None: ...
    def finish_after_failure(self, end_metadata: dict[str, Any], error: str) -> bool: ...
    def abandon(self) -> None: ...


SNIFF_BYTES = 4096  # what `sniff` functions are given: the file's first bytes


@dataclass(frozen=True)
class TraceFormat:
    name: str  # TRT_TRACE_FORMAT / --format value, and what readers report
    suffixes: tuple[str, ...]  # the file names it is written to (the first one is the usual)
    sniff: Callable[[bytes], bool]  # True where the file's first bytes are of this format
    reader: str  # "module:Class" under trt_trace, the reader of this format
    writer: str | None = None  # "module:Class" of its writer; None for kinds trt_trace only reads
    priority: int = 0  # higher sniffs first
    description: str = ""  # what a file of it is, in a sentence ("writing Chrome trace JSON")
    noun: str = "trace"  # a file of it, in "x is not a <noun> file"

    def reader_class(self) -> type:
        return _load(self.reader)

    def writer_class(self) -> type:
        if self.writer is None:
            raise ValueError(f"trt_trace reads {self.name} traces but does not write them")
        return _load(self.writer)


def _load(spec: str) -> Any:
    module, _, name = spec.partition(":")
    return getattr(importlib.import_module(f"trt_trace.{module}"), name)


_REGISTRY: dict[str, TraceFormat] = {}


def register(fmt: TraceFormat) -> TraceFormat:
    _REGISTRY[fmt.name] = fmt
    return fmt


def get(name: str) -> TraceFormat:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown trace format {name!r}; use one of {', '.join(written())}") from None


def all_formats() -> list[TraceFormat]:
    return sorted(_REGISTRY.values(), key=lambda f: -f.priority)


def written() -> tuple[str, ...]:
    """The formats a session can write (TRT_TRACE_FORMAT, `trt-trace run --format`)."""
    return tuple(f.name for f in _REGISTRY.values() if f.writer is not None)


def by_suffix(path: str) -> TraceFormat | None:
    for fmt in all_formats():
        if fmt.writer is not None and path.endswith(fmt.suffixes):
            return fmt
    return None


def sniff_bytes(head: bytes, path: str = "") -> TraceFormat | None:
    """The format of a file whose first bytes are `head`; an empty file goes by its suffix."""
    if not head:
        return by_suffix(path)
    for fmt in all_formats():
        if fmt.sniff(head):
            return fmt
    return None


def sniff(path: str) -> TraceFormat | None:
    """The format of the file at `path`, by content (None: no format knows it). OSError propagates."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
    return sniff_bytes(head, path)


def resolve_format(path: str, requested: str | None = None) -> str:
    """The format a session writes to `path`: the one asked for, else the one the suffix names
    (anything unknown: Chrome JSON, the format every older tool reads). Raises ValueError."""
    if requested is None or requested.strip().lower() in ("", "auto"):
        fmt = by_suffix(path)
        return fmt.name if fmt else "json"
    value = requested.strip().lower()
    if value not in written():
        raise ValueError(f"unknown trace format {requested!r}; use {' or '.join(written())}")
    return value


def suffix_matches(path: str, name: str) -> bool:
    return path.endswith(get(name).suffixes)


def _json_sniff(head: bytes) -> bool:
    return head.lstrip()[:1] in (b"[", b"{")


def _perfetto_sniff(head: bytes) -> bool:
    return head[:1] == b"\x0a"  # the Trace.packet field's tag


register(TraceFormat("json", (JSON_SUFFIX,), _json_sniff, reader="io.readers.chrome_json:ChromeJsonReader",
                     writer="io.writers.chrome_json:ChromeJsonWriter", description="Chrome trace JSON",
                     noun="trace JSON"))
register(TraceFormat("perfetto", PERFETTO_SUFFIXES, _perfetto_sniff, reader="io.readers.perfetto:PerfettoReader",
                     writer="io.writers.perfetto_trace:PerfettoTraceWriter",
                     description="a Perfetto protobuf trace", noun="Perfetto trace"))


def _capture_sniff(name: str) -> Callable[[bytes], bool]:
    """Another profiler's capture, told by content (trt_trace/captures: imported on first use)."""

    def sniff(head: bytes) -> bool:
        from ..captures import trace_readers

        return getattr(trace_readers, f"sniff_{name}")(head)

    return sniff


# Captures of the profilers that own CUPTI, read (summary, diff, merge, export) but never written.
register(TraceFormat("torch.profiler", (".json", ".json.gz"), _capture_sniff("torch_profiler"),
                     reader="captures.trace_readers:TorchProfilerReader", priority=10,
                     description="a torch.profiler capture (Chrome trace JSON)", noun="torch.profiler capture"))
register(TraceFormat("nsys", (".sqlite",), _capture_sniff("nsys"), reader="captures.trace_readers:NsysReader",
                     priority=10, description="an Nsight Systems SQLite export", noun="Nsight Systems SQLite export"))
