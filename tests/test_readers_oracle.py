"""The streaming readers (trt_trace/io/readers) against today's readers (tests/legacy_readers, the code
they replaced): the same tables, per-process tables, diffs and merges, to the ns, on every kind of
trace the suite makes: JSON and Perfetto, merged, cut short (inside an event, inside a call, at a
packet boundary), split parts, GPU spans and caller-stream waits, errors, sampled GPU timing,
overlapping calls on lanes, pre-allocated outputs. And the native fast paths against the general
ones (orjson, protobuf) on the same traces; the Perfetto general path also against the JSON writer's
events of the same records, and on trt_trace files edited into another tool's shape (packets out of
order, slices off the engines' lanes, no process track, deep track trees).

One deliberate difference: a Perfetto trace's process is named after its process track (today's
reader called it "pid 0"), so labels are compared for JSON only."""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
import test_layers_reading as layers_reading
import torch
from legacy_readers import diff as legacy_diff
from legacy_readers import merge as legacy_merge
from legacy_readers import trace_summary as legacy
from synthetic_traces import call_rows, write_trace
from test_gpu_tracks import call_records
from test_inference import _records as inference_records
from trace_checks import load_strict

import trt_trace
from trt_trace import standin
from trt_trace.analysis import diff, merge, trace_summary
from trt_trace.io.perfetto_protos import protos
from trt_trace.io.readers import Visitor, in_memory, load_events, read_calls
from trt_trace.io.readers.chrome_json import ChromeJsonReader
from trt_trace.io.readers.perfetto import PerfettoReader
from trt_trace.io.readers.perfetto import _varint as pf_varint
from trt_trace.io.readers.perfetto_general import lane_of
from trt_trace.io.readers.trace_info import TraceInfo
from trt_trace.io.tracks import track_id
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.native import ops
from trt_trace.schema.phases import STATS_COLUMNS
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import (
    CATEGORY,
    DURATIONS,
    ENGINE_UUID_BASE,
    INFERENCE_CATEGORY,
    LAYER_CATEGORY,
    Phase,
)

# Keys the readers of the oracle's day did not write; the inference ones are checked by tests/test_inference.py (these
# traces hold no inference: both are null here).
NEW_KEYS = ("ended", "malformed_events", "sorted_by", "engines_left_out", "profiled_calls", "profiled_included",
            "inferences", "outside_engines")
NEW_ROW_KEYS = ("min_ms", "mean_ms", "max_ms", "stddev_ms")  # checked by tests/test_table_options.py


def _run(path: Path, engines, calls: int, threads: int = 1, batches: int = 1, **kw) -> Path:
    def work():
        for k in range(calls):
            for e in engines:
                try:
                    torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
                except RuntimeError:
                    pass
            if batches > 1 and k % (calls // batches) == 0:
                trt_trace.active().drainer.drain_once()  # a batch of its own (a part of its own past the limit)

    with trt_trace.tracing(str(path), **kw):
        if threads == 1:
            work()
        else:
            ts = [threading.Thread(target=work) for _ in range(threads)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
    return path


def _written(path: Path, batches, names, pid: int = 7, **metadata) -> Path:
    writer = (ChromeJsonWriter if path.suffix == ".json" else PerfettoTraceWriter)(str(path), lambda: names)
    writer.begin("oracle", {"tool": "trt_trace", "pid": pid, "host": "h", "monotonic_ns": pid, "wall_ns": 5 * 10**18,
                            **metadata})
    for b in batches:
        writer.write(b)
    writer.finish({"dropped_events": 0, "threads": [], "monotonic_ns": 10**10, "wall_ns": 5 * 10**18 + 10**10,
                   "records_written": sum(len(b) for b in batches)})
    return path


def _gpu_records(sampled: bool) -> list[np.ndarray]:
    rows = []
    for k in range(40):
        wait = (1_000_000 * k + 25_000, 1_000_000 * k + 400_000) if k % 3 == 0 else None
        rows += call_records(k + 1, 1 + k % 2, 1_000_000 * (k + 1), 1_000_000 * (k + 1) + 30_000,
                             1_000_000 * (k + 1) + 200_000 + 1000 * k, stream=7 + k % 2, wait=wait,
                             flags=1 if k == 5 else (4 if k == 6 else 0))
    records = np.array(rows, dtype=RECORD_DTYPE)
    if sampled:  # 1 in 4 calls measured: the others' GPU spans (and waits) never came
        gpuish = np.isin(records["phase"], (Phase.GPU, Phase.CALLER_WAIT))
        records = records[~gpuish | (records["call_id"] % 4 == 1)]
    gpu = np.isin(records["phase"], (Phase.GPU, Phase.CALLER_WAIT))
    return [records[~gpu], records[gpu]]  # spans a batch later, as the resolver hands them over


def _overlapping() -> np.ndarray:
    """Calls of one engine from 3 threads, 100 µs long, 50 µs apart: two at a time, on two lanes."""
    rows = []
    for k in range(30):
        begin = 1_000_000 + (k // 3) * 500_000 + (k % 3) * 50_000
        for row in call_records(k + 1, 1, begin, begin + 30_000, begin + 200_000)[:5]:  # host records only
            rows.append(row[:4] + (100 + k % 3,) + row[5:])
    return np.array(rows, dtype=RECORD_DTYPE)


def _cut(src: Path, dst: Path, fraction: float) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: int(len(data) * fraction)])
    return dst


def _cut_at_packet(src: Path, dst: Path, fraction: float) -> Path:
    data = src.read_bytes()
    pos = 0
    ends = []
    while pos < len(data):
        size, shift, p = 0, 0, pos + 1
        while data[p] & 0x80:
            size |= (data[p] & 0x7F) << shift
            shift += 7
            p += 1
        size |= data[p] << shift
        pos = p + 1 + size
        ends.append(pos)
    dst.write_bytes(data[: ends[int(len(ends) * fraction)]])
    return dst


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("oracle")
    standin.load()
    out: dict[str, Path] = {}
    plain = [standin.make_engine(f"oracle_{i}", host_us=10 * (i + 1)) for i in range(3)]
    faulty = standin.make_engine("oracle_faulty", fail_every=3)
    prealloc = standin.make_engine("oracle_prealloc")
    prealloc.use_pre_allocated_outputs = True
    for suffix in (".json", ".pftrace"):
        key = suffix[1:]
        out[f"plain {key}"] = _run(d / f"plain{suffix}", plain, 40)
        out[f"errors {key}"] = _run(d / f"errors{suffix}", [faulty, prealloc, plain[0]], 30)
        out[f"threads {key}"] = _run(d / f"threads{suffix}", [plain[1]], 25, threads=4)
        out[f"lanes {key}"] = _written(d / f"lanes{suffix}", [_overlapping()], ["", "l_a"])
        out[f"gpu {key}"] = _written(d / f"gpu{suffix}", _gpu_records(False), ["", "g_a", "g_b"], gpu_timing=True)
        out[f"sampled {key}"] = _written(d / f"sampled{suffix}", _gpu_records(True), ["", "g_a", "g_b"],
                                         gpu_timing=True, gpu_every=4)
        _run(d / f"split{suffix}", plain, 60, batches=6, max_bytes=4_000)
        for part in sorted(d.glob(f"split*{suffix}")):
            out[f"split part {part.name}"] = part
        if suffix == ".json":
            out["cut json mid-event"] = _cut(out["plain json"], d / "cut1.json", 0.61)
            out["cut json inside a call"] = _cut(out["gpu json"], d / "cut2.json", 0.43)
        else:
            out["cut pftrace mid-packet"] = _cut(out["plain pftrace"], d / "cut1.pftrace", 0.57)
            out["cut pftrace at a packet"] = _cut_at_packet(out["gpu pftrace"], d / "cut2.pftrace", 0.5)
    ranks = []
    for rank in (0, 1):
        ranks.append(_written(d / f"rank{rank}.json", _gpu_records(rank == 1), ["", "g_a", "g_b"], pid=70 + rank,
                              rank=rank, world_size=2, gpu_timing=True))
    out["merged"] = d / "merged.json"
    legacy_merge.merge([str(p) for p in ranks], str(out["merged"]))
    out["ranks"] = ranks  # type: ignore[assignment]
    return out


KINDS = ["plain json", "plain pftrace", "errors json", "errors pftrace", "threads json", "threads pftrace",
         "lanes json", "lanes pftrace", "gpu json",
         "gpu pftrace", "sampled json", "sampled pftrace", "cut json mid-event", "cut json inside a call",
         "cut pftrace mid-packet", "cut pftrace at a packet", "merged", "split parts"]


def _paths(traces, kind: str) -> list[Path]:
    if kind == "split parts":
        return [p for k, p in traces.items() if k.startswith("split part")]
    return [traces[kind]]


def _doc(text: str, label: bool) -> object:
    doc = json.loads(text)
    for d in doc if isinstance(doc, list) else [doc]:
        for k in NEW_KEYS:
            d.pop(k, None)
        for row in [*d.get("engines", []), d.get("all") or {}]:
            for k in NEW_ROW_KEYS:
                row.pop(k, None)
        if not label:
            d.pop("process", None)
    return doc


@pytest.mark.parametrize("kind", KINDS)
def test_tables_equal_todays_readers(traces, kind):
    for path in _paths(traces, kind):
        label = path.suffix == ".json"
        for phase in DURATIONS:
            for by_process in (False, True):
                old = legacy.summary_text(str(path), by_process=by_process, phase=phase, json=True)
                new = trace_summary.summary_text(str(path), by_process=by_process, phase=phase, json=True)
                assert _doc(new, label) == _doc(old, label), (path.name, phase, by_process)
        old_text = legacy.summary_text(str(path))
        new_text = trace_summary.summary_text(str(path))
        notes = trace_summary.aggregate_file(str(path)).notes
        if label:  # the text table too, then the end notes (new)
            assert_same_table_text(new_text, old_text + "".join(n + "\n" for n in notes))


def _last_place(token: str) -> float:
    return 10.0 ** -len(token.partition(".")[2]) if "." in token else 1.0


def assert_same_table_text(new: str, old: str) -> None:
    """The same text, but for a printed number one unit off in its last place: the two readers sum a share in
    another order, so a value at a rounding edge (47.05 %) may print either way (seen: 47.1 vs 47.0 of a real
    run's split parts)."""
    new_lines, old_lines = new.splitlines(), old.splitlines()
    assert len(new_lines) == len(old_lines), (new, old)
    for a, b in zip(new_lines, old_lines, strict=True):
        ta, tb = a.split(), b.split()
        assert len(ta) == len(tb) and (a == b or len(a) == len(b)), (a, b)  # the same columns, aligned alike
        for x, y in zip(ta, tb, strict=True):
            if x == y:
                continue
            try:
                fx, fy = float(x.replace(",", "")), float(y.replace(",", ""))
            except ValueError:
                raise AssertionError((a, b)) from None
            assert _last_place(x) == _last_place(y) and abs(fx - fy) <= _last_place(x) * 1.0001, (a, b)


@pytest.mark.parametrize("kind", ["plain json", "errors pftrace", "gpu json", "sampled pftrace", "merged"])
def test_diffs_equal_todays_diff(traces, kind):
    base = traces[kind]
    for new in (traces["gpu json"], traces["sampled json"], traces["plain pftrace"]):
        old = legacy_diff.to_json(legacy_diff.diff_files(str(base), str(new)))
        try:
            cur = diff.to_json(diff.diff_files(str(base), str(new)))
        except diff.NoCommonEngine:
            assert all(e["only_in"] for e in old["engines"])  # today's diff said "no regression" here
            continue
        cur.pop("notes")
        for doc in (old, cur):
            for e in doc["engines"]:
                for d in e["durations"]:
                    d["p_value"] = None if d["p_value"] is None else round(d["p_value"], 12)
                    for side in ("base", "new"):
                        if d[side]:
                            d[side]["mean_ns"] = round(d[side]["mean_ns"], 6)
        assert cur == old


def _canonical(events: list[dict]) -> list:
    """A merged file's events, order and number notation aside."""
    out = []
    for e in events:
        if e.get("name") == "trt_trace_metadata" and "merged" in (e.get("args") or {}):
            continue
        e = dict(e)
        if "ts" in e:
            e["ts"] = round(float(e["ts"]) * 1000)
        if "dur" in e:
            e["dur"] = round(float(e["dur"]) * 1000)
        out.append(orjson.dumps(e, option=orjson.OPT_SORT_KEYS))
    return sorted(out)


@pytest.mark.parametrize("inputs", ["ranks", "split", "cut", "pftrace"])
def test_merges_equal_todays_merge(traces, tmp_path, inputs):
    paths = {"ranks": [str(p) for p in traces["ranks"]],
             "split": [str(traces[k]) for k in traces if k.startswith("split part") and k.endswith(".json")],
             "cut": [str(traces["cut json inside a call"])],
             "pftrace": [str(traces["plain pftrace"]), str(traces["errors pftrace"])]}[inputs]
    old_meta = legacy_merge.merge(paths, str(tmp_path / "old.json"))
    new_meta = merge.merge(paths, str(tmp_path / "new.json"))
    for i in new_meta["inputs"]:
        i.pop("ended")
    # The same files of each input, listed in part order now (the first part, then .1, .2, ...); today's
    # merge listed them in the order it was given them.
    for a, b in zip(new_meta["inputs"], old_meta["inputs"], strict=True):
        assert sorted(a["files"]) == sorted(b["files"])
        names = [Path(f).name for f in a["files"]]
        parts = [int(n.split(".")[1]) if n.count(".") > 1 else 0 for n in names]
        assert parts == sorted(parts), a["files"]
        a["files"] = b["files"]
    assert new_meta == old_meta
    old_events = orjson.loads((tmp_path / "old.json").read_bytes())
    new_events = orjson.loads((tmp_path / "new.json").read_bytes())
    assert _canonical(new_events) == _canonical(old_events)
    assert legacy.summary_text(str(tmp_path / "new.json"), by_process=True) == \
        legacy.summary_text(str(tmp_path / "old.json"), by_process=True)


class _Slices(Visitor):
    def __init__(self) -> None:
        self.rows: list[tuple] = []

    def slices(self, s: np.ndarray, buf) -> None:
        for r in s:
            self.rows.append((int(r["kind"]), int(r["phase"]), int(r["begin_ns"]), int(r["end_ns"]),
                              int(r["call_id"]), int(r["engine_id"]), int(r["thread_id"]), int(r["flags"]) & 15,
                              int(r["device"]), int(r["stream"]), int(r["pid"]), int(r["tid"])))
            self.flow_bits = getattr(self, "flow_bits", 0) + bin(int(r["flags"]) >> 6).count("1")


def _fallback_json(src: Path, dst: Path) -> Path:
    """The same trace with every event written by orjson (another notation: 12.5, not 12.500), so
    that no line is in the writer's own layout and every one goes through the general path."""
    lines = []
    for line in src.read_bytes().splitlines():
        text = line.strip().rstrip(b",")
        if text in (b"[", b"]", b""):
            lines.append(text)
            continue
        events = orjson.loads(b"[" + text.lstrip(b"[").rstrip(b"]") + b"]")
        lines.append(b",".join(orjson.dumps(e) for e in events) + b",")
    dst.write_bytes(b"\n".join(lines).replace(b",\n]", b"\n]"))
    return dst


@pytest.mark.parametrize("kind", ["plain json", "errors json", "gpu json", "sampled json", "merged"])
def test_the_json_fast_path_and_the_general_path_agree(traces, tmp_path, kind):
    src = traces[kind]
    general = _fallback_json(src, tmp_path / "general.json")
    a, b = _Slices(), _Slices()
    ChromeJsonReader(str(src)).read(a)
    ChromeJsonReader(str(general)).read(b)
    flows = sum(1 for r in a.rows if r[0] != 0)
    assert sorted(a.rows) == sorted(b.rows) and len(a.rows) > flows > 0 if "gpu" in kind else True
    assert sorted(a.rows) == sorted(b.rows)
    for phase in ("total", "gpu"):
        assert trace_summary.summary_text(str(src), phase=phase, json=True) == \
            trace_summary.summary_text(str(general), phase=phase, json=True)


@pytest.mark.parametrize("kind", ["plain pftrace", "errors pftrace", "gpu pftrace", "sampled pftrace",
                                  "cut pftrace at a packet"])
def test_the_perfetto_fast_path_and_the_general_path_agree(traces, kind):
    src = str(traces[kind])
    fast, general = _Slices(), _Slices()
    PerfettoReader(src).read(fast)
    reader = PerfettoReader(src)
    reader.force_general = True
    reader.read(general)
    # Slices alike; launch flows are flags of a slice on the fast path, events of their own on the general one.
    slices = sorted(r for r in general.rows if r[0] == 0)
    assert len(fast.rows) > 0 and sorted(fast.rows) == slices
    flows = [r for r in general.rows if r[0] != 0]
    assert len(flows) == getattr(fast, "flow_bits", 0)
    a = read_calls(src, lambda calls, info: None)
    assert a.calls > 0


def test_every_perfetto_trace_trt_trace_writes_is_read_by_the_fast_path_alone(traces, tmp_path, monkeypatch):
    """trt_trace's own Perfetto files, whole or cut (mid-packet, at a packet), with inference tracks,
    never fall back to the general path, which holds the rest of the file in memory: every slice comes
    from the native decoder, every inference from the fast path's pairing."""
    def general(*args, **kw):
        raise AssertionError("the general (in-memory) path read a trt_trace file")

    monkeypatch.setattr(PerfettoReader, "_general", general)
    kinds = [k for k in traces if k.endswith("pftrace") or "pftrace " in k]
    assert len(kinds) >= 6
    for kind in kinds:
        rows = _Slices()
        PerfettoReader(str(traces[kind])).read(rows)
        assert len(rows.rows) > 0, kind
    inferences = write_trace(tmp_path / "inferences.pftrace", inference_records(3), ["", "eng"], end={})
    events = load_events(str(inferences))
    assert sum(e.get("cat") == INFERENCE_CATEGORY for e in events) >= 3


def _events_of(path: str, general: bool) -> Counter:
    """Every event as load_events gives it (slices, launch flows, metadata), by the fast path or the general one."""
    reader = PerfettoReader(path)
    reader.force_general = general
    collect = in_memory._Collect()
    collect.info = TraceInfo(path, reader.format)
    reader.read(collect, collect.info)
    return Counter(json.dumps(e, sort_keys=True) for e in collect.events)


@pytest.mark.parametrize("kind", ["plain pftrace", "errors pftrace", "threads pftrace", "lanes pftrace", "gpu pftrace",
                                  "cut pftrace at a packet"])
def test_the_perfetto_general_path_gives_the_fast_paths_events(traces, kind):
    """The general path (another tool's packets: a replay of begins and ends) rebuilds every event as
    the fast path hands it out: each slice on its lane's tid (host and GPU lanes past the first), with its
    engine and arguments, each launch flow, the metadata; a cut file's open begins left out alike."""
    fast = _events_of(str(traces[kind]), False)
    assert fast == _events_of(str(traces[kind]), True)
    names = Counter(json.loads(e)["name"] for e in fast.elements())
    assert names["execute_engine"] > 0 and names["trt_trace_metadata"] > 0


def _twins(tmp_path: Path, name: str, rows: list[tuple] | np.ndarray, names: list[str], **end) -> tuple[str, str]:
    return tuple(str(write_trace(tmp_path / f"{name}{suffix}", rows, names, end=end))  # type: ignore[return-value]
                 for suffix in (".json", ".pftrace"))


def test_the_perfetto_general_path_gives_the_json_writers_events_of_the_same_records(tmp_path, monkeypatch):
    """The general path shares the reader's track table (lane names, engines) with the fast path, so it
    is checked against the JSON writer too: the same records in both formats, the Perfetto file read by
    its general path, give the JSON file's slices, launch flows, inferences and layer slices: second host
    and GPU lanes, one inference track per calling thread, a GPU span of 0 ns with its flow, two layers lanes."""
    monkeypatch.setattr(ops, "layer_names", lambda: list(layers_reading.LAYER_NAMES))
    gpu = _gpu_records(False)
    zero = call_records(99, 1, 60_000_000, 60_040_000, 60_040_000)  # a GPU span of 0 ns: its flow ends at it
    layer_rows: list[tuple] = []
    for call_id, begin in ((2, 10**9), (3, 10**9 + 5_000)):  # two overlapping profiled calls: two layers lanes
        layer_rows += call_rows(call_id, 1, begin, layers_reading.PHASES, device=0, gpu_ns=500_000)
        layer_rows += layers_reading.layer_rows(call_id, 1, begin, {"conv": 300_000, "fc": 100_000}, 0)
    layer_rows.sort(key=lambda r: r[0])
    pairs = [_twins(tmp_path, "lanes", _overlapping(), ["", "l_a"]),
             _twins(tmp_path, "gpu", np.concatenate([*gpu, np.array(zero, dtype=RECORD_DTYPE)]), ["", "g_a", "g_b"]),
             _twins(tmp_path, "inferences", inference_records(3), ["", "eng"]),
             _twins(tmp_path, "layers", layer_rows, layers_reading.ENGINES, layers=layers_reading.REPORT)]
    kinds: Counter = Counter()
    kept = ("X", "s", "f")  # slices and launch flows
    for json_path, pf_path in pairs:
        want = Counter(json.dumps(e, sort_keys=True) for e in load_strict(Path(json_path)) if e["ph"] in kept)
        got = Counter(e for e in _events_of(pf_path, True).elements() if json.loads(e)["ph"] in kept)
        assert got == want, json_path
        kinds.update((json.loads(e)["cat"], json.loads(e)["ph"]) for e in want)
    assert {(CATEGORY, "s"), (CATEGORY, "f"), (INFERENCE_CATEGORY, "X"), (LAYER_CATEGORY, "X")} <= set(kinds)


def _names_written_out(path: Path) -> Any:
    """A trt_trace Perfetto file as another tool might write it: every event and argument name in its
    event (no interned ids), so that packets can be moved or added."""
    pb = protos()
    trace = pb.Trace.FromString(path.read_bytes())
    names: dict[int, str] = {}
    annotation_names: dict[int, str] = {}
    for packet in trace.packet:
        names.update((e.iid, e.name) for e in packet.interned_data.event_names)
        annotation_names.update((a.iid, a.name) for a in packet.interned_data.debug_annotation_names)
        packet.ClearField("interned_data")
        if packet.HasField("track_event"):
            ev = packet.track_event
            if ev.HasField("name_iid"):
                ev.name = names[ev.name_iid]
            for a in ev.debug_annotations:
                if a.HasField("name_iid"):
                    a.name = annotation_names[a.name_iid]
    return trace


def test_the_perfetto_general_path_replays_packets_out_of_order_and_skips_other_instants(traces, tmp_path):
    """Another tool's file: the gpu trace's packets with every name written out (no interned ids), its
    slice packets latest first (those of one timestamp in their order), and an instant that is no
    metadata on a lane. The replay goes by timestamp, not by file order, and takes only the metadata
    instants: the same events as the file."""
    pb = protos()
    trace = _names_written_out(traces["gpu pftrace"])
    slices = [k for k, p in enumerate(trace.packet) if p.track_event.type in (pb.TrackEvent.TYPE_SLICE_BEGIN,
                                                                               pb.TrackEvent.TYPE_SLICE_END)]
    reordered = pb.Trace()
    order = list(range(len(trace.packet)))
    backwards = sorted(slices, key=lambda k: (-trace.packet[k].timestamp, k))  # equal times keep their order
    for k, j in zip(slices, backwards, strict=True):
        order[k] = j
    reordered.packet.extend(trace.packet[j] for j in order)
    other = reordered.packet.add()
    other.CopyFrom(trace.packet[slices[0]])
    other.track_event.type = pb.TrackEvent.TYPE_INSTANT
    other.track_event.name = "another tool's instant"
    path = tmp_path / "reordered.pftrace"
    path.write_bytes(reordered.SerializeToString())
    want = _events_of(str(traces["gpu pftrace"]), True)
    assert sum(json.loads(e)["ph"] == "X" for e in want.elements()) > 100
    assert _events_of(str(path), True) == want


def test_the_perfetto_general_path_reads_slices_off_the_engines_lanes_and_a_file_without_a_process(traces,
                                                                                                      tmp_path):
    """Another tool's tracks: a slice on a track of no engine (even one named like a layers lane) gets
    that track's uuid as its thread and engine id 0, as a JSON slice without them does; one on an
    engine's own track (engine id 0 too, named like a GPU lane), the engine and the track's uuid. A file
    without a process track reads as process 0, as JSON events without a pid do."""
    pb = protos()
    trace = _names_written_out(traces["gpu pftrace"])
    process = next(p for p in trace.packet if p.track_descriptor.HasField("process"))
    engine = next(p.track_descriptor.uuid for p in trace.packet if p.track_descriptor.uuid >= ENGINE_UUID_BASE)
    begin = next(p for p in trace.packet if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN)
    end = next(p for p in trace.packet if p.track_event.type == pb.TrackEvent.TYPE_SLICE_END
               and p.track_event.track_uuid == begin.track_event.track_uuid)
    for uuid, name in ((99, "layers (2)"), (ENGINE_UUID_BASE, "GPU (2)")):
        other = trace.packet.add()
        other.CopyFrom(process)
        other.track_descriptor.ClearField("process")
        other.track_descriptor.uuid, other.track_descriptor.parent_uuid = uuid, process.track_descriptor.uuid
        other.track_descriptor.name = name
    for track, ts in ((99, 900_000_000), (engine, 901_000_000), (ENGINE_UUID_BASE, 902_000_000)):
        for packet, at in ((begin, ts), (end, ts + 5_000)):
            added = trace.packet.add()
            added.CopyFrom(packet)
            added.timestamp, added.track_event.track_uuid = at, track
    path = tmp_path / "tracks.pftrace"
    path.write_bytes(trace.SerializeToString())
    events = [json.loads(e) for e in (_events_of(str(path), True) - _events_of(str(traces["gpu pftrace"]), True))]
    got = sorted((e["ts"], e["tid"], e["args"]["engine_id"], e["args"]["engine"]) for e in events)
    assert got == [(900_000.0, 99, 0, ""), (901_000.0, engine & 0xFFFFFFFF, engine - ENGINE_UUID_BASE, "g_a"),
                   (902_000.0, 0, 0, "GPU (2)")]

    trace.packet.remove(process)
    path.write_bytes(trace.SerializeToString())
    pids = Counter(json.loads(e)["pid"] for e in _events_of(str(path), True).elements() if json.loads(e)["ph"] == "X")
    assert list(pids) == [0] and pids[0] > 100


def test_a_lane_is_its_engines_through_62_tracks_between_them_and_no_more(traces, tmp_path):
    """The reader walks up from a lane to its engine through at most 62 tracks between them (the guard
    against a loop of parents stops after 64 steps): a lane 62 tracks below its engine keeps its engine
    and thread; one 63 below is no engine's (its uuid as its thread, engine id 0)."""
    pb = protos()
    trace = _names_written_out(traces["gpu pftrace"])
    lanes = [p.track_descriptor for p in trace.packet if p.track_descriptor.parent_uuid >= ENGINE_UUID_BASE]
    near, far = lanes[0], lanes[1]
    tids = [track_id(lane.parent_uuid - ENGINE_UUID_BASE, *lane_of(lane.name)) for lane in (near, far)]
    chains = pb.Trace()
    for lane, between, first in ((near, 62, 1000), (far, 63, 2000)):
        parent = lane.parent_uuid
        for k in range(between):
            level = chains.packet.add().track_descriptor
            level.uuid, level.parent_uuid, level.name = first + k, parent, f"level {k}"
            parent = first + k
        lane.parent_uuid = parent
    chains.packet.extend(trace.packet)
    path = tmp_path / "deep.pftrace"
    path.write_bytes(chains.SerializeToString())

    def slices(p: Path) -> Counter:
        return Counter(e for e in _events_of(str(p), True).elements() if json.loads(e)["ph"] == "X")

    before, after = slices(traces["gpu pftrace"]), slices(path)
    moved = [json.loads(e) for e in (before - after).elements()]
    assert moved and {e["tid"] for e in moved} == {tids[1]}
    for e in moved:
        e["tid"], e["args"]["engine"], e["args"]["engine_id"] = far.uuid & 0xFFFFFFFF, "", 0
    assert Counter(json.dumps(e, sort_keys=True) for e in moved) == after - before
    assert any(json.loads(e)["tid"] == tids[0] for e in after)


def test_every_trace_kind_was_made(traces):
    """The fixture made what the tests above claim: cut files are cut, parts are parts, spans are there."""
    assert len([k for k in traces if k.startswith("split part")]) >= 4
    for kind, ended in (("cut json mid-event", "cut short"), ("cut pftrace at a packet", "cut short"),
                        ("plain json", "closed"), ("merged", "closed")):
        assert trace_summary.aggregate_file(str(traces[kind])).ended == ended, kind
    gpu = trace_summary.aggregate_file(str(traces["sampled json"]))
    measured, sampled_out = STATS_COLUMNS.index("gpu_calls"), STATS_COLUMNS.index("gpu_sampled_out")
    assert int(gpu.stats[:, measured].sum()) == 10 and int(gpu.stats[:, sampled_out].sum()) > 0
    errors = trace_summary.aggregate_file(str(traces["errors json"]))
    assert int(errors.stats[:, 1].sum()) == 10 and "oracle_prealloc" in errors.names
    lanes = {e["args"]["name"] for e in trace_summary.load_events(str(traces["lanes json"]))
             if e.get("name") == "thread_name"}
    assert lanes == {"l_a", "l_a (2)"}  # overlapping calls of one engine went to a second lane


def _x_rows(path: Path, general_calls: list | None = None, monkeypatch: Any = None) -> list[tuple]:
    """The X slices the Perfetto reader hands out, sorted; where general_calls is given, each call of the
    general path is recorded in it (which still reads)."""
    if general_calls is not None:
        original = PerfettoReader._general

        def general(self, *args, **kw):
            general_calls.append(args[-1])
            return original(self, *args, **kw)

        monkeypatch.setattr(PerfettoReader, "_general", general)
    rows = _Slices()
    PerfettoReader(str(path)).read(rows)
    return sorted(r for r in rows.rows if r[0] == 0)


def _with_packet(trace: Any, packet: Any, at: int) -> Any:
    out = protos().Trace()
    out.packet.extend(trace.packet[:at])
    out.packet.add().CopyFrom(packet)
    out.packet.extend(trace.packet[at:])
    return out


def test_the_perfetto_fast_path_keeps_to_the_files_first_sequence_whatever_its_id(traces, tmp_path, monkeypatch):
    """The fast path trusts the sequence of the first packet that names one: a trt_trace file whose
    packets were renumbered (sequence 7, as a tool that concatenates traces may do), and one with a clock
    snapshot of another sequence (the tracing service's own) among its packets, are read by the fast
    path alone, slice for slice as written."""
    pb = protos()
    src = traces["gpu pftrace"]
    want = _x_rows(src)
    renumbered = pb.Trace.FromString(src.read_bytes())
    for packet in renumbered.packet:
        if packet.HasField("trusted_packet_sequence_id"):
            packet.trusted_packet_sequence_id = 7
    other = pb.TracePacket(trusted_packet_sequence_id=9)
    other.clock_snapshot.clocks.add(clock_id=6, timestamp=1)
    at = next(k for k in range(len(renumbered.packet) // 2, len(renumbered.packet))  # not inside a begin-end pair
              if renumbered.packet[k - 1].track_event.type != pb.TrackEvent.TYPE_SLICE_BEGIN)
    mixed = _with_packet(pb.Trace.FromString(src.read_bytes()), other, at)
    for name, trace in (("renumbered", renumbered), ("mixed", mixed)):
        path = tmp_path / f"{name}.pftrace"
        path.write_bytes(trace.SerializeToString())
        calls: list = []
        assert _x_rows(path, calls, monkeypatch) == want and len(want) > 100, name
        assert calls == [], name


def test_interned_ids_past_the_fast_paths_tables_are_no_phase_and_no_argument(traces, tmp_path, monkeypatch):
    """The fast path's tables hold interned ids 1-255; another tool's file may intern more (here an event
    name and an argument name at id 256, and 300): they are left out of the tables, and the file reads
    slice for slice as before."""
    pb = protos()
    src = traces["gpu pftrace"]
    names = pb.TracePacket(trusted_packet_sequence_id=1)
    for iid in (256, 300):
        names.interned_data.event_names.add(iid=iid, name=f"another tool's event {iid}")
        names.interned_data.debug_annotation_names.add(iid=iid, name=f"another tool's argument {iid}")
    path = tmp_path / "interned.pftrace"
    path.write_bytes(_with_packet(pb.Trace.FromString(src.read_bytes()), names, 3).SerializeToString())
    calls: list = []
    assert _x_rows(path, calls, monkeypatch) == _x_rows(src) and calls == []


def test_a_file_the_general_path_takes_over_counts_each_byte_once(traces, tmp_path, monkeypatch):
    """Another tool's names (written out, not interned): the fast path hands the file over at its first
    slice packet with what it had read, and the general path reads the rest; the bytes read are the file's."""
    path = tmp_path / "names.pftrace"
    path.write_bytes(_names_written_out(traces["gpu pftrace"]).SerializeToString())
    calls: list = []
    rows = _x_rows(path, calls, monkeypatch)
    assert len(calls) == 1 and rows == _x_rows(traces["gpu pftrace"])
    info = PerfettoReader(str(path)).read(Visitor())
    assert info.bytes_read == path.stat().st_size


def test_a_lane_of_a_track_uuid_past_the_fast_paths_table_is_read_by_the_general_path(traces, tmp_path,
                                                                                     monkeypatch):
    """The fast path's track table ends below MAX_TRACKS (a uuid of another tool's may be any 64-bit
    number); a lane whose uuid is MAX_TRACKS itself goes to the general path, which reads it as written."""
    import trt_trace.io.readers.perfetto as perfetto_reader

    pb = protos()
    src = traces["gpu pftrace"]
    trace = pb.Trace.FromString(src.read_bytes())
    lanes = [p.track_descriptor.uuid for p in trace.packet if p.HasField("track_descriptor")
             and p.track_descriptor.parent_uuid >= ENGINE_UUID_BASE]  # an engine's host or GPU lane
    first_table = len(PerfettoReader(str(src)).track_engine)
    # A uuid four times the first table's size: the table grows to it at once (fast path); MAX_TRACKS: general.
    for new, general_calls in ((4 * first_table, 0), (perfetto_reader.MAX_TRACKS, 1)):
        old = lanes[0]
        assert old < new
        for packet in trace.packet:
            if packet.HasField("track_descriptor") and packet.track_descriptor.uuid == old:
                packet.track_descriptor.uuid = new
            if packet.HasField("track_event") and packet.track_event.track_uuid == old:
                packet.track_event.track_uuid = new
        lanes[0] = new
        path = tmp_path / f"far_lane_{new}.pftrace"
        path.write_bytes(trace.SerializeToString())
        calls: list = []
        assert _x_rows(path, calls, monkeypatch) == _x_rows(src) and len(calls) == general_calls, new
        monkeypatch.undo()


def test_an_instant_that_is_no_metadata_is_left_out_by_the_fast_path(traces, tmp_path, monkeypatch):
    """Another tool's instant (a name of its own, with an argument) after the end metadata of a trt_trace
    file: the fast path reads no metadata of it, so the trace still ended as its end metadata says."""
    pb = protos()
    src = traces["gpu pftrace"]
    trace = pb.Trace.FromString(src.read_bytes())
    meta = [p for p in trace.packet if p.track_event.type == pb.TrackEvent.TYPE_INSTANT]
    other = pb.TracePacket()
    other.CopyFrom(meta[-1])
    other.track_event.ClearField("name_iid")
    other.track_event.name = "another tool's instant"
    del other.track_event.debug_annotations[:]
    other.track_event.debug_annotations.add(name="ended", string_value="not an end")
    trace.packet.add().CopyFrom(other)
    path = tmp_path / "instant.pftrace"
    path.write_bytes(trace.SerializeToString())
    seen: list[dict] = []

    class Events(Visitor):
        def event(self, ev) -> None:
            seen.append(ev)

    want = PerfettoReader(str(src)).read(Visitor())
    info = PerfettoReader(str(path)).read(Events())
    assert (info.ended, info.last_metadata) == (want.ended, want.last_metadata) and want.ended == "closed"
    assert not any(ev.get("args", {}).get("ended") == "not an end" for ev in seen)


def test_slices_of_a_second_sequence_are_left_to_the_general_path(traces, tmp_path, monkeypatch):
    """Interned ids are per sequence, so the fast path trusts the first sequence alone: a slice of another
    sequence (a copy of the file's first call, 1 s later) hands the file to the general path."""
    pb = protos()
    src = traces["gpu pftrace"]
    trace = pb.Trace.FromString(src.read_bytes())
    begin = next(k for k, p in enumerate(trace.packet) if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN)
    for k in (begin, begin + 1):
        packet = trace.packet.add()
        packet.CopyFrom(trace.packet[k])
        packet.trusted_packet_sequence_id = 9
        packet.timestamp += 10**9
    path = tmp_path / "two_sequences.pftrace"
    path.write_bytes(trace.SerializeToString())
    calls: list = []
    rows = _x_rows(path, calls, monkeypatch)
    assert len(calls) == 1 and len(rows) == len(_x_rows(src)) + 1


def test_the_engine_track_of_engine_id_0_names_its_engine(traces, tmp_path):
    """Engine tracks have uuids from ENGINE_UUID_BASE (engine id 0, which another tool's file may use,
    at the base itself): each names its engine, the one at the base included."""
    pb = protos()
    trace = pb.Trace.FromString(traces["gpu pftrace"].read_bytes())
    engine = next(p for p in trace.packet if p.track_descriptor.uuid > ENGINE_UUID_BASE)
    zero = trace.packet.add()
    zero.CopyFrom(engine)
    zero.track_descriptor.uuid = ENGINE_UUID_BASE
    zero.track_descriptor.name = "engine zero"
    path = tmp_path / "engine0.pftrace"
    path.write_bytes(trace.SerializeToString())
    info = PerfettoReader(str(path)).read(Visitor())
    engines = next(p.engines for p in info.processes.values() if p.engines)
    assert engines[0] == "engine zero" and engines[engine.track_descriptor.uuid - ENGINE_UUID_BASE] == "g_a"


def test_a_packet_cut_at_any_byte_is_left_out_as_if_the_file_ended_before_it(traces, tmp_path):
    """A file cut inside one of its packets reads, by either path, as the file cut where that packet
    begins: a packet that goes on past the end is left out, also where its first fields decode (here
    the last slice's end, given a field after its track event, as another tool's packets may have: cut
    in that field, the end is whole but its packet is not)."""
    pb = protos()
    trace = pb.Trace.FromString(traces["lanes pftrace"].read_bytes())
    end = max(k for k, p in enumerate(trace.packet) if p.track_event.type == pb.TrackEvent.TYPE_SLICE_END)
    trace.packet[end].sequence_flags = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE  # field 13, after track_event (11)
    data = trace.SerializeToString()
    starts, pos = [], 0
    while pos < len(data):  # each packet: its tag (0x0A), its length, its bytes
        length, at = pf_varint(bytearray(data), pos + 1, len(data))
        starts.append(pos)
        pos = at + length
    path = tmp_path / "cut.pftrace"

    def rows(cut: int, general: bool) -> list[tuple]:
        path.write_bytes(data[:cut])
        got = _Slices()
        reader = PerfettoReader(str(path))
        reader.force_general = general
        reader.read(got)
        return sorted(got.rows)

    for k in (end - 1, end):  # the last slice's begin and end packets
        for general in (False, True):
            whole = rows(starts[k], general)
            assert whole, (k, general)
            for cut in range(starts[k] + 1, starts[k + 1]):
                assert rows(cut, general) == whole, (cut, general)


def test_a_slice_named_by_another_tools_interned_name_is_no_call_or_phase(traces, tmp_path):
    """Another tool's name interned beside trt_trace's (here on a copy of a call's slice, 1 s later, on
    the call's own lane): no phase of trt_trace's, so no call or phase slice is read of it."""
    pb = protos()
    src = traces["gpu pftrace"]
    trace = pb.Trace.FromString(src.read_bytes())
    names = trace.packet.add()
    names.trusted_packet_sequence_id = 1
    names.interned_data.event_names.add(iid=200, name="another tool's slice")
    begin = next(k for k, p in enumerate(trace.packet) if p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN)
    for k in (begin, begin + 1):
        packet = trace.packet.add()
        packet.CopyFrom(trace.packet[k])
        packet.timestamp += 10**9
        if k == begin:
            packet.track_event.name_iid = 200
    path = tmp_path / "named.pftrace"
    path.write_bytes(trace.SerializeToString())
    assert _x_rows(path) == _x_rows(src)


def test_the_perfetto_reader_names_each_lane_as_the_json_writer_does(traces):
    """Overlapping calls of one engine: the second lane's thread is named "<engine> (2)" in both formats
    (the Perfetto reader makes the name from the lane number)."""
    names = {}
    for fmt in ("json", "pftrace"):
        names[fmt] = sorted(e["args"]["name"] for e in in_memory.load_events(str(traces[f"lanes {fmt}"]))
                            if e.get("name") == "thread_name")
    assert names["pftrace"] == names["json"] and "l_a (2)" in names["json"]
