"""Places calls on tracks so that every track nests (Perfetto's rule for JSON slices).

One engine normally has one track. Calls of one engine that overlap in time (several threads, or
the part of a call before the engine's lock) would partially overlap on that track, which Perfetto
cannot show where they belong; such a call goes to the engine's next lane instead, shown as a
second track "<engine> (2)" right under the first. A call's phases always share its lane.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .records import PHASE_CALL

# Calls whose phase records may still arrive in the next drained batch.
_REMEMBERED_CALLS = 8192


class LaneAssigner:
    def __init__(self) -> None:
        self._lane_ends: dict[int, list[int]] = {}  # engine id -> end ns of each lane's last call
        self._call_lane: OrderedDict[int, int] = OrderedDict()

    def assign(self, records: np.ndarray) -> np.ndarray:
        """Lane (0, 1, ...) for each record of a drained batch."""
        lanes = np.zeros(len(records), dtype=np.int64)
        is_call = records["phase"] == PHASE_CALL
        call_idx = np.flatnonzero(is_call)
        # Greedy in begin order: a lane takes a call that begins after the lane's last end.
        order = call_idx[np.argsort(records["begin_ns"][call_idx], kind="stable")]
        begins = records["begin_ns"].tolist()
        ends = records["end_ns"].tolist()
        engines = records["engine_id"].tolist()
        call_ids = records["call_id"].tolist()
        for i in order.tolist():
            lanes[i] = self._call_lane[call_ids[i]] = self._place(engines[i], begins[i], ends[i])
        while len(self._call_lane) > _REMEMBERED_CALLS:
            self._call_lane.popitem(last=False)
        for i in np.flatnonzero(~is_call).tolist():
            lanes[i] = self._call_lane.get(call_ids[i], 0)
        return lanes

    def assign_spans(self, records: np.ndarray) -> np.ndarray:
        """Lanes for standalone spans (GPU records): every record is placed on its own."""
        lanes = np.zeros(len(records), dtype=np.int64)
        order = np.argsort(records["begin_ns"], kind="stable").tolist()
        begins = records["begin_ns"].tolist()
        ends = records["end_ns"].tolist()
        engines = records["engine_id"].tolist()
        for i in order:
            lanes[i] = self._place(engines[i], begins[i], ends[i])
        return lanes

    def _place(self, engine: int, begin: int, end: int) -> int:
        """The first lane of `engine` whose last slice ended by `begin` (or a new lane)."""
        lane_ends = self._lane_ends.setdefault(engine, [])
        lane = 0
        while lane < len(lane_ends) and lane_ends[lane] > begin:
            lane += 1
        if lane == len(lane_ends):
            lane_ends.append(end)
        else:
            lane_ends[lane] = end
        return lane
