"""Layer records (Phase.LAYER, TRT_TRACE_LAYERS) in a writer's batches: their tracks and names.

Both writers take a batch's layer records out (`split`) and hand the rest to their usual path. A
profiled call's layers lie end to end on its engine's "layers" track; a call's layers stay on one
lane, and the calls of an engine that would overlap there (rare: a profiled engine runs one call at
a time) go to the next lane, as calls do on host tracks. Names are interned once in C++
(csrc/layers/layer_names.h); a record carries its layer's id, this class keeps the names the
formatters need (JSON string literals; the Perfetto writer interns them in the trace as well).
"""

from __future__ import annotations

import numpy as np
import orjson

from .. import ops
from ..trace_format import Phase
from ..tracks import LaneAssigner


def split(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the batch without its layer records, its layer records); no copy when it has none."""
    layers = records["phase"] == Phase.LAYER
    if not layers.any():
        return records, records[:0]
    return records[~layers], records[layers]


class LayerTracks:
    def __init__(self) -> None:
        self._lanes = LaneAssigner()  # per engine, like host lanes: one call's layers are one span
        self.names: list[str] = []  # layer names by id
        self.json_names: list[str] = []  # the same as JSON string literals

    def lanes(self, layers: np.ndarray) -> np.ndarray:
        """The lane of each layer record: all of one call's on the lane its span [first begin, last end) fits."""
        lanes = np.zeros(len(layers), dtype=np.int64)
        call_ids = layers["call_id"]
        starts = np.flatnonzero(np.concatenate(([True], call_ids[1:] != call_ids[:-1])))
        bounds = np.append(starts, len(layers))
        begins, ends, engines = layers["begin_ns"], layers["end_ns"], layers["engine_id"]
        order = np.argsort(begins[starts], kind="stable")  # place calls in time order
        for g in order.tolist():
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            lanes[lo:hi] = self._lanes._place(int(engines[lo]), int(begins[lo]), int(ends[lo:hi].max()))
        return lanes

    def refresh(self, layers: np.ndarray) -> list[int]:
        """Makes sure every layer id of the batch has its name; returns the ids new to this writer."""
        top = int(layers["stream"].max()) if len(layers) else -1
        if top < len(self.names):
            return []
        first = len(self.names)
        self.names = ops.layer_names()
        self.json_names = [orjson.dumps(n).decode() for n in self.names]
        if top >= len(self.names):
            raise ValueError(f"layer record with id {top}, but only {len(self.names)} layer names are interned")
        return list(range(first, len(self.names)))
