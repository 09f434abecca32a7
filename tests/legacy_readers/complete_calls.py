# ruff: noqa
# Today's reader as it was before trt_trace/io/readers (issue 24), kept as the oracle that
# tests/test_readers_oracle.py compares the streaming readers with. Not used by the package.
"""Which engine calls of a trace are whole: a file cut mid-write (a process killed) can hold a
call's `execute_engine` event with only some of its phases, or phases without their call.

A call is whole when its event is there and its host phases add up to it: the four phases
partition every call (csrc/hook/call_scope.h) and phases of no duration are not written, so the
sum is the test. Summaries and merges leave partial calls out, so every row still adds up.
"""

from __future__ import annotations

from typing import Any

from trt_trace.schema.trace_format import CATEGORY, HOST_PHASES, PHASE_NAMES, Phase

_CALL = PHASE_NAMES[Phase.CALL]
_HOST_PHASES = frozenset(HOST_PHASES)


def _ns(us: Any) -> int:
    return round(float(us) * 1000.0)


def partial_calls(events: list[dict[str, Any]]) -> set[tuple[int, int]]:
    """(pid, call_id) of every call whose event or host phases are incomplete."""
    call_ns: dict[tuple[int, int], int] = {}
    phase_ns: dict[tuple[int, int], int] = {}
    phase_count: dict[tuple[int, int], int] = {}
    for ev in events:
        if ev.get("ph") != "X" or ev.get("cat") != CATEGORY:
            continue
        name = ev.get("name")
        if name != _CALL and name not in _HOST_PHASES:
            continue
        call_id = ev.get("args", {}).get("call_id")
        if call_id is None:
            continue
        key = (int(ev.get("pid", 0)), int(call_id))
        if name == _CALL:
            call_ns[key] = _ns(ev.get("dur", 0.0))
        else:
            phase_ns[key] = phase_ns.get(key, 0) + _ns(ev.get("dur", 0.0))
            phase_count[key] = phase_count.get(key, 0) + 1
    partial = {key for key in phase_ns if key not in call_ns}
    for key, total in call_ns.items():
        # Each duration is rounded to the ns once it is written in microseconds: one ns per phase.
        if abs(total - phase_ns.get(key, 0)) > phase_count.get(key, 0) + 1:
            partial.add(key)
    return partial


def drop_partial_calls(events: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The events without those of partial calls (their GPU spans too), and how many calls went."""
    partial = partial_calls(events)
    if not partial:
        return events, 0
    kept = []
    for ev in events:
        if ev.get("cat") == CATEGORY and ev.get("ph") != "M":
            # Slices name their call in args; launch flow events (s/f) by their id.
            call_id = ev.get("id") if ev.get("ph") in ("s", "f") else ev.get("args", {}).get("call_id")
            if call_id is not None and (int(ev.get("pid", 0)), int(call_id)) in partial:
                continue
        kept.append(ev)
    return kept, len(partial)


def cut_short_note(n_partial: int) -> str:
    """The one line that says what was left out."""
    return f"cut short: {n_partial} partial call{'s' if n_partial != 1 else ''} left out"
