"""Layer slices (TRT_TRACE_LAYERS, docs/layers.md) as the readers hand them out: one event dict each,
in the Chrome JSON writer's shape, whatever the file's format.

    {"ph": "X", "cat": LAYER_CATEGORY, "name": <layer>, "ts", "dur", "pid", "tid",
     "args": {"engine", "engine_id", "call_id", "layer", "thread"[, "device"]}}

In a JSON trace they are lines of their own category, which the native fast path leaves to orjson
(few: N calls per engine). In a Perfetto trace they lie on an engine's "layers" track, their names
interned past the 256 ids the native fast path tables: the Perfetto reader marks those tracks
(PYTHON_LANE), the native loop hands their begin and end packets back one by one, and `LayerPairs`
pairs them here (the writer puts a layer's end right after its begin). Every verb then sees the same
events: `layers` reads them, `merge` and `slice` keep those of the calls they keep, and the call and
phase arithmetic never sees them (their category is not trt_trace's)."""

from __future__ import annotations

from typing import Any

from ...schema.trace_format import LAYER_CATEGORY, LAYERS_TRACK
from ..tracks import layer_track_id

PYTHON_LANE = -2  # the Perfetto reader's track_engine mark (csrc/readers/perfetto_packets.cpp: kPythonLane)


def layers_lane(track_name: str) -> int | None:
    """The lane of a native lane track named "layers", "layers (2)", ...; None for any other track."""
    kind, _, rest = track_name.partition(" (")
    if kind != LAYERS_TRACK:
        return None
    rest = rest.rstrip(")")
    return max(int(rest) - 1, 0) if rest.isdigit() else 0


def track_label(engine_name: str, lane: int) -> str:
    """The JSON writer's name of a layers track."""
    return f"{engine_name} {LAYERS_TRACK}" + ("" if lane == 0 else f" ({lane + 1})")


def track_tid(engine_id: int, lane: int) -> int:
    return layer_track_id(engine_id, lane) & 0xFFFFFFFF


def layer_event(name: str, begin_ns: int, end_ns: int, pid: int, tid: int, engine_id: int, engine_name: str,
                args: dict[str, Any]) -> dict[str, Any]:
    """A layer slice as the JSON writer writes it (args: the slice's own annotations; its `engine` and
    `layer` are interned strings in a native trace: the engine's name and the slice's name instead)."""
    out_args = dict(args, engine=engine_name, engine_id=engine_id, layer=name)
    return {"ph": "X", "cat": LAYER_CATEGORY, "name": name, "ts": begin_ns / 1000.0,
            "dur": (end_ns - begin_ns) / 1000.0, "pid": pid, "tid": tid, "args": out_args}


class LayerPairs:
    """Begin and end packets of layer slices, paired per track (an end closes its track's open begin)."""

    def __init__(self) -> None:
        self._open: dict[int, tuple[int, str, dict[str, Any]]] = {}  # track uuid -> (begin ns, name, args)

    def begin(self, track: int, ts: int, name: str, args: dict[str, Any]) -> None:
        self._open[track] = (ts, name, args)

    def end(self, track: int, ts: int) -> tuple[int, str, dict[str, Any]] | None:
        """(begin ns, name, args) of the slice this end closes; None for an end without its begin."""
        return self._open.pop(track, None)

    @property
    def unclosed(self) -> int:
        """Begins still waiting for their end (a file cut between the two)."""
        return len(self._open)
