"""What a reader learns besides the slices: small, set by the number of processes, engines and
tracks, never by the file's length. Also the rules for the trace-level facts in it: why a trace
ended (the `ended` of its last metadata event) and how many events could not be read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...schema.trace_format import METADATA_EVENT

CLOSED, SIZE_LIMIT, SPLIT, WRITE_FAILED, CUT_SHORT = "closed", "size limit", "split", "write failed", "cut short"
ENDS = (CLOSED, SIZE_LIMIT, SPLIT, WRITE_FAILED)


class TraceFileError(ValueError):
    """A trace that cannot be read (the message is one line and names the file)."""


class NotATrace(TraceFileError):
    """A file that is no trace at all (`{"a":1}`, `[]`): every verb refuses it in one line, exit code 2."""


def bad_input_rc(exc: BaseException) -> int:
    """The exit code of a verb that could not read its input: 2 for a file that is not a trace, else 1."""
    return 2 if isinstance(exc, NotATrace) or getattr(exc, "rc", 1) == 2 else 1


def is_end_metadata(args: dict[str, Any]) -> bool:
    """The end metadata event: it says why the trace ended; older ones count the records written,
    and every writer's finish() adds the events it did not write."""
    return "ended" in args or "records_written" in args or "events_not_written" in args


def ended_of(args: dict[str, Any]) -> str:
    value = args.get("ended", CLOSED)  # written before `ended` existed: a finished trace
    return value if isinstance(value, str) and value else CLOSED


@dataclass
class ProcessInfo:
    """One pid of the trace (a merged trace holds one per rank)."""

    pid: int
    order: int  # when it was first seen
    metas: list[dict[str, Any]] = field(default_factory=list)  # trt_trace_metadata args, in file order
    label: str = ""
    sort_index: int | None = None
    engines: dict[int, str] = field(default_factory=dict)  # engine id -> name (its first call's)

    @property
    def meta(self) -> dict[str, Any]:
        """Start and end metadata in one dict (the end's values win)."""
        out: dict[str, Any] = {}
        for m in self.metas:
            out.update(m)
        return out

    @property
    def end_metadata(self) -> dict[str, Any] | None:
        """The process's own end metadata (a merge's or a slice's metadata is the file's, not its)."""
        ends = [m for m in self.metas if is_end_metadata(m) and "merged" not in m]
        # A merge of a split trace holds every part's end: the process ended where its last part did (the one
        # end that is not "split"), in whatever order the parts were merged.
        whole = [m for m in ends if ended_of(m) != SPLIT]
        return whole[-1] if whole else ends[-1] if ends else None

    @property
    def ended(self) -> str:
        """Why this process's trace ended: its end metadata's `ended`, or `cut short` without one."""
        end = self.end_metadata
        return ended_of(end) if end is not None else CUT_SHORT


@dataclass
class TraceInfo:
    path: str
    format: str
    processes: dict[int, ProcessInfo] = field(default_factory=dict)
    malformed: int = 0  # events with fields of the wrong type or out of range: left out
    trace_events: int = 0  # events with a phase ("ph") read through orjson: another tool's count too
    bad_utf8: int = 0  # invalid UTF-8 sequences in event text (an engine name): replaced by U+FFFD, the events kept
    slices: int = 0  # events read (slices and flows)
    origin_ns: int | None = None  # the earliest slice begin
    last_metadata: dict[str, Any] | None = None  # the file's last trt_trace_metadata event
    array_closed: bool = True  # JSON: the array's closing bracket is there
    bytes_read: int = 0
    capture: Any = None  # another profiler's capture (captures.model.CaptureCalls): its calls' kernels

    def process(self, pid: int) -> ProcessInfo:
        p = self.processes.get(pid)
        if p is None:
            p = self.processes[pid] = ProcessInfo(pid, len(self.processes))
        return p

    def metadata_event(self, pid: int, args: Any) -> None:
        if not isinstance(args, dict):
            self.malformed += 1
            return
        self.process(pid).metas.append(args)
        self.last_metadata = args

    def m_event(self, pid: int, ev: dict[str, Any]) -> None:
        """A JSON M event: process names, sort indexes and trt_trace's metadata."""
        name = ev.get("name")
        args = ev.get("args")
        if name == METADATA_EVENT:
            self.metadata_event(pid, args)
        elif name == "process_name":
            self.process(pid).label = str(args.get("name", "")) if isinstance(args, dict) else ""
        elif name == "process_sort_index":
            index = args.get("sort_index") if isinstance(args, dict) else None
            if isinstance(index, int) and not isinstance(index, bool):
                self.process(pid).sort_index = index
            elif isinstance(index, float) and index.is_integer():
                self.process(pid).sort_index = int(index)
            else:
                self.process(pid).sort_index = 0
        else:
            self.process(pid)

    @property
    def merged(self) -> dict[str, Any] | None:
        for p in self.processes.values():
            for m in p.metas:
                if isinstance(m.get("merged"), dict):
                    return m["merged"]
        return None

    @property
    def ended(self) -> str:
        """Why the file ended (SHARED rules): its last metadata event's `ended` where that is an end
        event; a merged trace written before the merge had an end event of its own: closed when its
        array is; anything else: cut short."""
        last = self.last_metadata
        if last is not None and is_end_metadata(last):
            return ended_of(last)
        if self.merged is not None and self.format == "json" and self.array_closed:
            return CLOSED
        return CUT_SHORT
