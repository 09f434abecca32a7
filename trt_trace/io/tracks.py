"""Places calls on tracks so that every track nests (Perfetto's rule for JSON slices).

The TrackBook is the one place that decides tracks for both writers: engines' host and GPU lanes, and
the layer tracks of calls profiled per layer (TRT_TRACE_LAYERS, docs/layers.md), whose records it
takes out of a batch (`split_layers`) and whose layer names it keeps.

One engine normally has one track. Calls of one engine that overlap in time (several threads, or
the part of a call before the engine's lock) would partially overlap on that track, which Perfetto
cannot show where they belong; such a call goes to the engine's next lane instead, shown as a
second track "<engine> (2)" right under the first. A call's phases always share its lane.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..schema.phases import INFERENCE_RECORD, LAYER_RECORD
from ..schema.records import as_layers
from ..schema.trace_format import GPU_PHASES, Phase

# Calls whose phase records may still arrive in the next drained batch.
_REMEMBERED_CALLS = 8192


class LaneAssigner:
    def __init__(self) -> None:
        self._lane_ends: dict[int, list[int]] = {}  # engine id -> end ns of each lane's last call
        self._call_lane: OrderedDict[int, int] = OrderedDict()  # calls not on lane 0

    def assign(self, records: np.ndarray) -> np.ndarray:
        """Lane (0, 1, ...) for each record of a drained batch (calls and their phases)."""
        lanes = np.zeros(len(records), dtype=np.int64)
        call_idx = np.flatnonzero(records["phase"] == Phase.CALL)
        if len(call_idx) == 0:
            return self._phase_lanes(records, lanes)
        engines_all = records["engine_id"][call_idx]
        begins_all = records["begin_ns"][call_idx]
        order = call_idx[np.lexsort((begins_all, engines_all))]  # by engine, then begin
        engines = records["engine_id"][order]
        begins = records["begin_ns"][order]
        ends = records["end_ns"][order]
        # Vectorised: a call that begins before the previous call of its engine ended overlaps it.
        same_engine = engines[1:] == engines[:-1]
        overlapping = set(engines[1:][same_engine & (begins[1:] < ends[:-1])].tolist())
        starts = np.flatnonzero(np.concatenate(([True], ~same_engine)))
        bounds = np.append(starts, len(order)).tolist()
        for g, engine in enumerate(engines[starts].tolist()):
            lo, hi = bounds[g], bounds[g + 1]
            lane_ends = self._lane_ends.setdefault(engine, [])
            if engine not in overlapping and (not lane_ends or int(begins[lo]) >= max(lane_ends)):
                # The usual case: calls one after another, all on the engine's first lane.
                if lane_ends:
                    lane_ends[0] = int(ends[hi - 1])
                else:
                    lane_ends.append(int(ends[hi - 1]))
                continue
            # Overlapping calls: greedy in begin order; a lane takes a call that begins after its last end.
            for i, b, e in zip(order[lo:hi].tolist(), begins[lo:hi].tolist(), ends[lo:hi].tolist(), strict=True):
                lane = self._place(engine, b, e)
                lanes[i] = lane
                if lane:
                    self._call_lane[int(records["call_id"][i])] = lane
        while len(self._call_lane) > _REMEMBERED_CALLS:
            self._call_lane.popitem(last=False)
        return self._phase_lanes(records, lanes)

    def _phase_lanes(self, records: np.ndarray, lanes: np.ndarray) -> np.ndarray:
        if self._call_lane:  # phases follow their call's lane (also a call drained in an earlier batch)
            others = np.flatnonzero(records["phase"] != Phase.CALL)
            moved = others[np.isin(records["call_id"][others], np.fromiter(self._call_lane, dtype=np.uint64))]
            for i in moved.tolist():
                lanes[i] = self._call_lane[int(records["call_id"][i])]
        return lanes

    def assign_spans(self, records: np.ndarray) -> np.ndarray:
        """Lanes for standalone spans (GPU records): every record is placed on its own, except that a
        call's engine span goes on the lane of its caller-stream wait, which contains it (the resolver
        hands both over in one batch)."""
        lanes = np.zeros(len(records), dtype=np.int64)
        order = np.argsort(records["begin_ns"], kind="stable").tolist()
        begins = records["begin_ns"].tolist()
        ends = records["end_ns"].tolist()
        engines = records["engine_id"].tolist()
        waits = records["phase"] == Phase.CALLER_WAIT
        if not waits.any():
            for i in order:
                lanes[i] = self._place(engines[i], begins[i], ends[i])
            return lanes
        call_ids = records["call_id"]
        follows = ~waits & np.isin(call_ids, call_ids[waits])
        for i in order:  # the waits and lone spans first, in begin order
            if not follows[i]:
                lanes[i] = self._place(engines[i], begins[i], ends[i])
        lane_of_call = dict(zip(call_ids[waits].tolist(), lanes[waits].tolist(), strict=True))
        lanes[follows] = [lane_of_call[c] for c in call_ids[follows].tolist()]
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


def place_on_lanes(records: np.ndarray, host: LaneAssigner, gpu: LaneAssigner) -> tuple[np.ndarray, np.ndarray]:
    """(lane, is_gpu) of each record of a drained batch: host records follow their call, GPU spans of
    one engine get lanes of their own (they overlap when its calls run on several streams)."""
    is_gpu = np.isin(records["phase"], GPU_PHASES)
    if not is_gpu.any():  # host records only: no masked copy of the batch
        return host.assign(records), is_gpu
    lanes = np.empty(len(records), dtype=np.int64)
    lanes[~is_gpu] = host.assign(records[~is_gpu])
    lanes[is_gpu] = gpu.assign_spans(records[is_gpu])
    return lanes, is_gpu


def track_codes(records: np.ndarray, lanes: np.ndarray, is_gpu: np.ndarray) -> tuple[np.ndarray, int]:
    """A code per record for its track (engine, lane, host or GPU), sorted as the tracks are, and the
    stride that decode_track() needs."""
    engines = records["engine_id"].astype(np.int64)
    stride = int(engines.max()) + 1
    return (lanes * 2 + is_gpu) * stride + engines, stride


def present_codes(codes: np.ndarray) -> np.ndarray:
    """The distinct codes of a batch, sorted. Few engines and lanes: a counting pass over a small
    array, cheaper than np.unique's sort; a sort where the codes are sparse (large engine ids), so
    that the count array never grows past a few times the batch."""
    top = int(codes.max())
    if top < 4 * len(codes) + (1 << 16):
        return np.flatnonzero(np.bincount(codes, minlength=top + 1))
    return np.unique(codes)


def decode_track(code: int, stride: int) -> tuple[int, int, bool]:
    """(engine id, lane, GPU track) of a track_codes() code."""
    lane_gpu, engine = divmod(code, stride)
    return engine, lane_gpu // 2, bool(lane_gpu % 2)


@dataclass(frozen=True)
class Track:
    """One track of a trace: an engine's host or GPU lane, numbered in the order tracks first appear."""

    engine_id: int
    lane: int
    gpu: bool
    index: int  # 0, 1, ...: the order of first appearance (the Perfetto writer's uuids follow it)
    first_of_engine: bool  # the engine's first track (its parent track is new too)
    layers: bool = False  # a layer track: the layers of the engine's calls profiled per layer


@dataclass
class Placement:
    """Where the records of one batch go: each record's lane and kind, its track's code, and the tracks."""

    lanes: np.ndarray  # int64 per record
    is_gpu: np.ndarray  # bool per record
    codes: np.ndarray  # track_codes() per record
    present: np.ndarray  # the batch's distinct codes, sorted
    tracks: list[Track]  # the track of each code in `present`, in that order
    new_tracks: list[Track]  # those seen for the first time in this batch, in that order

    def track_index(self) -> np.ndarray:
        """Each record's Track.index (a gather: few distinct tracks per batch)."""
        index = np.fromiter((t.index for t in self.tracks), dtype=np.int64, count=len(self.tracks))
        return index[np.searchsorted(self.present, self.codes)]


class TrackBook:
    """The one place that assigns tracks, for every writer: lanes so that each track nests (host records
    follow their call, GPU spans get lanes of their own), the tracks of each batch and which are new, and
    the engines' names. The writers then only encode what it says (tids and name events in JSON, uuids and
    descriptors in Perfetto)."""

    def __init__(self, engine_names: Callable[[], list[str]],
                 layer_names: Callable[[], list[str]] | None = None) -> None:
        self._engine_names = engine_names
        self._layer_names = layer_names or (lambda: [])
        self.names: list[str] = []  # engine names by id, as last fetched
        self.layer_names: list[str] = []  # layer names by id (a LayerRecord's `name_id`), as last fetched
        self._host = LaneAssigner()
        self._gpu = LaneAssigner()
        self._layers = LaneAssigner()  # per engine, like host lanes: one call's layers are one span
        self._tracks: dict[tuple[int, int, bool | str], Track] = {}
        self._engines: set[int] = set()

    def engine_name(self, engine_id: int) -> str:
        if engine_id >= len(self.names):
            self.names = self._engine_names()
        return self.names[engine_id] if engine_id < len(self.names) else f"engine_{engine_id}"

    def place(self, records: np.ndarray) -> Placement:
        lanes, is_gpu = place_on_lanes(records, self._host, self._gpu)
        codes, stride = track_codes(records, lanes, is_gpu)
        present = present_codes(codes)
        tracks, new = [], []
        for code in present.tolist():  # few per batch: a Python loop over the ones present only
            tracks.append(self._track(decode_track(code, stride), new))
        return Placement(lanes, is_gpu, codes, present, tracks, new)

    def _track(self, key: tuple[int, int, bool | str], new: list[Track]) -> Track:
        track = self._tracks.get(key)
        if track is None:
            engine = key[0]
            track = Track(engine, key[1], key[2] is True, len(self._tracks), engine not in self._engines,
                          layers=key[2] == "layers")
            self._engines.add(engine)
            self._tracks[key] = track
            new.append(track)
        return track

    def place_layers(self, layers: np.ndarray) -> tuple[Placement, list[int]]:
        """Where a batch's layer records go (split_layers), and the layer ids new to this book (their names in
        `layer_names`). A profiled call's layers lie end to end on one lane of its engine's layer track; calls of
        an engine that would overlap there (rare: a profiled engine runs one call at a time) go to the next
        lane, as calls do on host tracks."""
        lanes = np.zeros(len(layers), dtype=np.int64)
        call_ids = layers["call_id"]
        starts = np.flatnonzero(np.concatenate(([True], call_ids[1:] != call_ids[:-1])))
        bounds = np.append(starts, len(layers))
        begins, ends, engines = layers["begin_ns"], layers["end_ns"], layers["engine_id"]
        for g in np.argsort(begins[starts], kind="stable").tolist():  # calls in time order
            lo, hi = int(bounds[g]), int(bounds[g + 1])
            lanes[lo:hi] = self._layers._place(int(engines[lo]), int(begins[lo]), int(ends[lo:hi].max()))
        stride = int(engines.max()) + 1
        codes = lanes * stride + engines.astype(np.int64)
        present = np.unique(codes)
        tracks: list[Track] = []
        new: list[Track] = []
        for code in present.tolist():  # a few tracks per batch
            tracks.append(self._track((code % stride, code // stride, "layers"), new))
        return Placement(lanes, np.zeros(len(layers), dtype=bool), codes, present, tracks, new), \
            self._refresh_layer_names(layers)

    def _refresh_layer_names(self, layers: np.ndarray) -> list[int]:
        """Makes sure every layer id of the batch has its name; returns the ids new to this book."""
        top = int(layers["name_id"].max()) if len(layers) else -1
        if top < len(self.layer_names):
            return []
        first = len(self.layer_names)
        self.layer_names = list(self._layer_names())
        if top >= len(self.layer_names):
            raise ValueError(f"layer record with id {top}, but only {len(self.layer_names)} layer names are interned")
        return list(range(first, len(self.layer_names)))


def split_layers(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the batch without its layer records, its layer records as LAYER_DTYPE); no copy when it has none."""
    layers = records["phase"] == LAYER_RECORD
    if not layers.any():
        return records, as_layers(records[:0])
    return records[~layers], as_layers(records[layers])


def split_inferences(records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the batch without its inference records, its inference records); no copy when it has none."""
    inferences = records["phase"] == INFERENCE_RECORD
    if not inferences.any():
        return records, records[:0]
    return records[~inferences], records[inferences]


def inference_track_id(n: int) -> int:
    """The tid of the n-th calling thread's inference track (from 0): below the first engine's, so that
    the Perfetto UI lists it first; past 999 threads in engine id 0's overflow range, which no engine
    uses (csrc/format/inference_events.h)."""
    return n + 1 if n < 999 else OVERFLOW_TRACKS + n - 999


# Chrome JSON track ids (tids), which the JSON writer writes and the Perfetto reader rebuilds: see
# writers/chrome_json.py for why they look like this.
ENGINE_TRACKS = 1000  # track ids of one engine: engine id * 1000 + ...
GPU_LANES = 500  # ... + lane (host), + 500 + lane (GPU) or + 950 + lane (layers)
LAYER_LANES = 950
OVERFLOW_TRACKS = 1 << 31  # lanes past those: OVERFLOW_TRACKS + (engine id * 2 + gpu) * 2**16 + lane (layers:
LAYER_OVERFLOW = 1 << 30  # + LAYER_OVERFLOW + (engine id mod 2**14) * 2**16 + lane)


def track_id(engine_id: int, lane: int, gpu: bool = False) -> int:
    return int(track_ids(np.array([engine_id]), np.array([lane]), np.array([gpu]))[0])


def track_ids(engine_ids: np.ndarray, lanes: np.ndarray, is_gpu: np.ndarray) -> np.ndarray:
    """The tid of each record's track (writers/chrome_json.py says why these numbers), vectorised."""
    engines = engine_ids.astype(np.int64)
    tids = engines * ENGINE_TRACKS + is_gpu * GPU_LANES + lanes
    limit = np.where(is_gpu, LAYER_LANES - GPU_LANES, GPU_LANES)  # GPU lanes stop below the layer tracks
    past = lanes >= limit
    if past.any():  # hundreds of simultaneous calls of one engine: still a track of their own
        tids[past] = OVERFLOW_TRACKS + ((engines[past] * 2 + is_gpu[past]) << 16) + lanes[past] - limit[past]
    return tids


def layer_track_ids(engine_ids: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    """The tid of each layer record's track: right after its engine's GPU tracks (docs/layers.md)."""
    engines = engine_ids.astype(np.int64)
    tids = engines * ENGINE_TRACKS + LAYER_LANES + lanes
    past = lanes >= ENGINE_TRACKS - LAYER_LANES
    if past.any():  # (a profiled engine's calls run one at a time: more than one lane is rare)
        tids[past] = (OVERFLOW_TRACKS + LAYER_OVERFLOW + ((engines[past] % (1 << 14)) << 16)
                      + lanes[past] - (ENGINE_TRACKS - LAYER_LANES))
    return tids


def layer_track_id(engine_id: int, lane: int) -> int:
    return int(layer_track_ids(np.array([engine_id]), np.array([lane]))[0])
