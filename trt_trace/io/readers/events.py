"""Events as dicts (another tool's lines, metadata, anything the fast paths hand back) turned into
slices by the rules today's summaries read them with, checked: a field of the wrong type or out of
range makes the event malformed (counted, left out) rather than an exception."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...schema.trace_format import CATEGORY, FLOW_NAME, LAYER_CATEGORY, PHASE_NAMES
from .columns import CONVERTED, FLOW_END, FLOW_START, SLICE_DTYPE, SLICE_X

PHASE_OF = {name: i for i, name in enumerate(PHASE_NAMES)}
U32, U64 = (1 << 32) - 1, (1 << 64) - 1
MAX_NS = 1 << 62


class Malformed(ValueError):
    pass


def integer(value: Any, top: int, default: int | None = None) -> int:
    """An id or count: an int (or an integral float) in 0..top."""
    if value is None and default is not None:
        return default
    if isinstance(value, bool):
        raise Malformed
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= top:
        raise Malformed
    return value


def ns_of_us(value: Any) -> int:
    """Microseconds (a JSON number) to ns: exact for what trt_trace writes (three decimals), as
    round(us * 1000) is below 2**53 ns; larger values are split first so that a long uptime keeps
    its nanoseconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Malformed
    if isinstance(value, int):
        ns = value * 1000
    else:
        if not math.isfinite(value):
            raise Malformed
        whole = int(value)
        ns = whole * 1000 + round((value - whole) * 1000.0)
    if not -MAX_NS <= ns <= MAX_NS:
        raise Malformed
    return ns


def layer_slice(ev: dict[str, Any]) -> tuple[dict[str, Any], int, int] | None:
    """A layer slice's args, pid and call id (docs/layers.md); None for any other event; Malformed where its
    args are not an object or its pid or call id not a number in range."""
    if ev.get("ph") != "X" or ev.get("cat") != LAYER_CATEGORY:
        return None
    args = ev.get("args")
    if not isinstance(args, dict):
        raise Malformed
    return args, integer(ev.get("pid", 0), U32), integer(args.get("call_id"), U64)


def slice_fields(ev: dict[str, Any]) -> tuple | None:
    """(phase, begin, end, call_id, engine_id, thread, device, has_device, stream, flags, pid, tid, engine name,
    kind) of one of our slices with a call id or of a launch flow's end (kind FLOW_START / FLOW_END, its id
    as call id, its ts as begin and end); None for any other event. Raises Malformed."""
    ph = ev.get("ph")
    if ph in ("s", "f") and ev.get("cat") == CATEGORY and ev.get("name") == FLOW_NAME and "id" in ev:
        ts = ns_of_us(ev.get("ts", 0))
        return (0, ts, ts, integer(ev["id"], U64), 0, 0, 0xFFFF, False, 0, 0, integer(ev.get("pid", 0), U32),
                integer(ev.get("tid", 0), U32), None, FLOW_END if ph == "f" else FLOW_START)
    if ph != "X" or ev.get("cat") != CATEGORY:
        return None
    phase = PHASE_OF.get(ev.get("name"))  # type: ignore[arg-type]
    if phase is None:
        return None
    args = ev.get("args", {})
    if not isinstance(args, dict):
        raise Malformed
    if args.get("call_id") is None:
        return None
    call_id = integer(args["call_id"], U64)
    pid = integer(ev.get("pid", 0), U32)
    tid = integer(ev.get("tid", 0), U32)
    begin = ns_of_us(ev.get("ts", 0))
    end = begin + ns_of_us(ev.get("dur", 0))
    engine_id = integer(args.get("engine_id", 0), U32)
    thread = integer(args.get("thread", 0), U32)
    has_device = args.get("device") is not None
    device = integer(args["device"], 0xFFFE) if has_device else 0xFFFF
    stream = integer(args.get("stream", 0), U32)
    flags = (1 if args.get("error") else 0) | (2 if args.get("nested") else 0) | (
        4 if args.get("captured") else 0) | (8 if args.get("engine_stream") else 0)
    name = args.get("engine")
    name = f"engine_{engine_id}" if name is None else str(name)
    return phase, begin, end, call_id, engine_id, thread, device, has_device, stream, flags, pid, tid, name, SLICE_X


def to_slices(rows: list[tuple]) -> np.ndarray:
    """Slice rows (kind X, origin CONVERTED) from slice_fields() tuples."""
    out = np.zeros(len(rows), dtype=SLICE_DTYPE)
    if rows:
        cols = list(zip(*rows, strict=True))
        for name, i in (("phase", 0), ("begin_ns", 1), ("end_ns", 2), ("call_id", 3), ("engine_id", 4),
                        ("thread_id", 5), ("device", 6), ("has_device", 7), ("stream", 8), ("flags", 9), ("pid", 10),
                        ("tid", 11), ("kind", 13)):
            out[name] = cols[i]
        out["origin"] = CONVERTED
    return out
