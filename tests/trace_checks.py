"""Checks of a Chrome JSON trace against Perfetto's importer rules (docs/trace-formats.md)."""

from __future__ import annotations

from collections import defaultdict

import orjson


def load_strict(path) -> list[dict]:
    with open(path, "rb") as f:
        doc = orjson.loads(f.read())
    assert isinstance(doc, list), "the trace must be a top-level JSON array"
    return doc


def to_ns(us: float) -> int:
    return round(us * 1000)  # Perfetto: llround(x * 1000)


def check_trace(events: list[dict]) -> dict:
    """Asserts the importer rules; returns {track tid: track name} for a trace of one process, and
    {(pid, tid): name} for one of several (a merge keeps each process's tids: viewers key a thread
    by pid and tid)."""
    track_names: dict[tuple[int, int], str] = {}
    slices = defaultdict(list)
    for ev in events:
        assert ev["ph"] in ("X", "M", "i", "s", "f"), ev
        assert 0 <= ev["pid"] < 2**32 and 0 <= ev["tid"] < 2**32
        if ev["ph"] == "M" and ev["name"] == "thread_name":
            assert (ev["pid"], ev["tid"]) not in track_names, "one thread_name per track"
            track_names[(ev["pid"], ev["tid"])] = ev["args"]["name"]
        if ev["ph"] == "X":
            assert ev["ts"] >= 0 and ev["dur"] >= 0
            if ev["cat"] == "trt_trace.inference":  # a whole inference (docs/inference.md): no engine
                assert ev["name"] == "inference" and {"kind", "call_id", "thread"} <= set(ev["args"])
            else:
                assert ev["cat"] == "trt_trace"
                assert {"engine", "call_id", "thread"} <= set(ev["args"])
            begin = to_ns(ev["ts"])
            slices[(ev["pid"], ev["tid"])].append((begin, begin + to_ns(ev["dur"]), ev["name"]))
    for (pid, tid), items in slices.items():
        assert (pid, tid) in track_names, f"track {tid} of pid {pid} has no name"
        check_nesting(items)
    if len({pid for pid, _tid in track_names}) <= 1:
        return {tid: name for (_pid, tid), name in track_names.items()}
    return track_names


def check_nesting(items: list[tuple[int, int, str]]) -> None:
    """Every pair of slices on one track is either disjoint or nested (no partial overlap)."""
    # Perfetto's order: by ts, then longer first.
    items = sorted(items, key=lambda s: (s[0], -(s[1] - s[0])))
    stack: list[tuple[int, int, str]] = []
    for b, e, name in items:
        while stack and stack[-1][1] <= b:
            stack.pop()
        if stack:
            pb, pe, pname = stack[-1]
            assert e <= pe, f"partial overlap on a track: {name} [{b},{e}] vs {pname} [{pb},{pe}]"
        stack.append((b, e, name))
