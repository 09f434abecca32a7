"""The one registry of trace formats: what each is called, how a file of it is recognised (by its
content, its suffix as a hint), and which class reads and which writes it. Writers (the session, the
flight recorder's dumps), readers (io/readers/opening.py), configuration (TRT_TRACE_FORMAT) and the
CLI's choices all ask this module.

It knows no format itself: each is registered by the module that implements it, so the arrows point
down to here and a reader never imports a writer (or the other way round). The module that reads a
format registers it (`register`: name, suffixes, sniff, reader class); the module that writes it adds
its writer (`register_writer`). io/__init__.py imports the readers and writers, so that any use of
this module finds trt_trace's own formats; trt_trace/__init__.py imports trt_trace/captures, whose
readers register the kinds it reads but does not write.

A format a session writes has its native writer in csrc/session, registered there under the same name by
the file that implements it (csrc/session/trace_format.h); `native=True` says so here. Such a format needs
no Python writer (json and perfetto have one too: the byte references the native writers are held to) and
may have no reader (`reader=None`: the reading verbs then say, in one line, that trt_trace does not read it).
A new one is its C++ file and its one `register(...)` line
(docs/architecture.md#adding-a-host-phase-or-an-output-format).

Input kinds that trt_trace reads but does not write (another tool's traces, e.g. torch.profiler's
Chrome JSON or an Nsight Systems SQLite export) have no writer and a `sniff` that looks at the
file's first bytes; `priority` orders the sniffs (a specific kind before the generic Chrome JSON it
is a case of).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


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
    reader: type | None  # its reader: reader(path), then .read(visitor) (io/readers); None: not read back
    priority: int = 0  # higher sniffs first
    description: str = ""  # what a file of it is, in a sentence ("writing Chrome trace JSON")
    noun: str = "trace"  # a file of it, in "x is not a <noun> file"
    native: bool = False  # a session writes it: the native writer has a format of this name (csrc/session)

    @property
    def writer(self) -> type | None:
        """Its writer (a TraceWriter), None for kinds trt_trace only reads."""
        return _WRITERS.get(self.name)

    def writer_class(self) -> type:
        writer = self.writer
        if writer is None:
            raise ValueError(f"trt_trace reads {self.name} traces but does not write them")
        return writer


_REGISTRY: dict[str, TraceFormat] = {}
_WRITERS: dict[str, type] = {}


def register(fmt: TraceFormat) -> TraceFormat:
    """A format, by the module that reads it."""
    _REGISTRY[fmt.name] = fmt
    return fmt


def register_writer(name: str, writer: type) -> type:
    """The writer of format `name`, by the module that holds it (the format itself comes from its reader's)."""
    _WRITERS[name] = writer
    return writer


def get(name: str) -> TraceFormat:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown trace format {name!r}; use one of {', '.join(written())}") from None


def all_formats() -> list[TraceFormat]:
    return sorted(_REGISTRY.values(), key=lambda f: -f.priority)


def written() -> tuple[str, ...]:
    """The formats a session can write (TRT_TRACE_FORMAT, `trt-trace run --format`): the native writer's."""
    return tuple(name for name, fmt in _REGISTRY.items() if fmt.native)


def by_suffix(path: str) -> TraceFormat | None:
    for fmt in all_formats():
        if fmt.native and path.endswith(fmt.suffixes):
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
