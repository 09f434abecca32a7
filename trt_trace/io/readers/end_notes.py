"""What a reader says about how a trace ended and what it could not read: one line each, for
stderr (`trt-trace summary: ...`) and for tables, and the same facts as JSON fields."""

from __future__ import annotations

from typing import Any

from .trace_info import CLOSED, CUT_SHORT, SIZE_LIMIT, SPLIT, WRITE_FAILED, ProcessInfo, TraceInfo


def _count(meta: dict[str, Any], key: str) -> int | None:
    value = meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def end_line(what: str, ended: str, end: dict[str, Any] | None, partial: int) -> str | None:
    """One line for an end other than closed (None for closed)."""
    end = end or {}
    if ended == CLOSED:
        return None
    if ended == CUT_SHORT:
        line = f"{what} was cut short: no end record (process killed?)"
        return line + (f"; {_plural(partial, 'partial call')} left out" if partial else "")
    if ended == SIZE_LIMIT:
        n = _count(end, "events_not_written")
        return f"{what} stopped at the size limit" + (f": {_plural(n, 'event')} not written" if n is not None else "")
    if ended == SPLIT:
        nxt = end.get("next_part")
        goes_on = f": it goes on in {nxt}" if isinstance(nxt, str) and nxt else ""
        return (f"{what} is one part of a split trace{goes_on} (merge every part into one: "
                "trt-trace merge PART ... -o all.json)")
    if ended == WRITE_FAILED:
        n = _count(end, "events_not_written")
        return f"{what}: writing failed before the end" + (f" ({_plural(n, 'event')} not written)" if n else "")
    return f"{what} ended: {ended}"


def process_ended(p: ProcessInfo) -> str:
    return p.ended


def end_notes(read: Any) -> list[str]:
    """The lines for a file read by readers.read_calls (CallsRead): its end, each merged process's
    end other than closed, malformed events, GPU spans without their call."""
    info: TraceInfo = read.info
    partial = read.partial_by_pid()
    notes = []
    line = end_line(info.path, info.ended, info.last_metadata, sum(partial.values()))
    if line:
        notes.append(line)
    if info.merged is not None:
        for p in info.processes.values():
            if not p.metas:
                continue
            if p.ended != CLOSED:
                line = end_line(f"{info.path}: {p.label or f'pid {p.pid}'}", p.ended, p.end_metadata,
                                partial.get(p.pid, 0))
                if line:
                    notes.append(line)
    if info.malformed:
        notes.append(f"{info.path}: {_plural(info.malformed, 'malformed event')} left out "
                     "(a field of the wrong type or out of range)")
    notes.extend(utf8_notes(info))
    notes.extend(empty_window_notes(read))
    return notes


def empty_window_notes(read: Any) -> list[str]:
    """Where a window kept no call of a trace that has some: the trace's span, in the window's seconds."""
    span = getattr(read, "calls_span_ns", None)
    if not getattr(read, "windowed", False) or read.kept or not read.calls or span is None:
        return []
    origin = read.info.origin_ns if read.info.origin_ns is not None else span[0]
    first, last = (span[0] - origin) / 1e9, (span[1] - origin) / 1e9
    return [f"{read.info.path}: no call in the window; the trace's {_plural(read.calls, 'call')} begin at "
            f"{first:.3f} s and end by {last:.3f} s (--from/--to count from its first event)"]


def utf8_notes(info: TraceInfo) -> list[str]:
    """The line for invalid UTF-8 replaced while reading (none when there was none)."""
    if not info.bad_utf8:
        return []
    return [f"{info.path}: {_plural(info.bad_utf8, 'invalid UTF-8 sequence')} in event text (an engine name?) "
            "replaced by U+FFFD; the events are kept"]


def state_fields(s: Any) -> dict[str, Any]:
    """The JSON fields of a summary's end (readers' TraceSummary or anything with the same fields)."""
    out: dict[str, Any] = {"ended": s.ended}
    if s.malformed:
        out["malformed_events"] = s.malformed
    return out
