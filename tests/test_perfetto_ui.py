"""Every kind of trace trt_trace writes, opened in the real Perfetto UI (tests/perfetto_ui.py), in
both formats: it opens with no dialog and no import error, and the UI's own trace processor and
track list say what the trace is meant to say:
* per engine, the slices on its tracks are its calls (and only its calls);
* one flow per GPU span, from the call's enqueue slice to its gpu slice;
* every slice's args hold call_id, engine and thread;
* in the UI's order, each engine's GPU track(s) come right under its host track(s), named as
  designed (JSON: "<engine>[ GPU][ (k)] <tid>" with tid = engine id * 1000 + track, as the UI
  appends the tid; native: an engine group holding "host", "GPU", ... with no number at all).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import call_from_threads, demo_package_now, trt_trace_cli
from perfetto_ui import OpenedTrace, PerfettoUI, Track, loaded_content
from test_gpu_tracks import call_records

import trt_trace
from trt_trace import standin
from trt_trace.analysis.merge import merge
from trt_trace.analysis.perfetto_view import convert
from trt_trace.analysis.trace_summary import load_events
from trt_trace.demo import SERVE_SCRIPT
from trt_trace.io.writers import ChromeJsonWriter, PerfettoTraceWriter
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.schema.trace_format import Phase

FORMATS = ("json", "pftrace")
WEIRD_NAME = 'say "hi"\\ ünïcödé 名前\nsecond line'
JSON_TRACK = re.compile(r"^(?P<engine>.*?)(?P<gpu> GPU)?(?: \((?P<lane>\d+)\))? (?P<tid>\d+)$", re.S)
NATIVE_LANE = re.compile(r"^(?P<kind>host|GPU)(?: \((?P<lane>\d+)\))?$")


@dataclass
class EngineTrack:
    """One track of an engine as the UI lists it."""

    engine: str
    gpu: bool
    lane: int  # 0, 1, ...
    track_ids: list[int]
    label: str
    process: str


@dataclass
class Expected:
    calls: dict[str, int]  # engine -> calls in this file
    gpu_spans: int = 0
    threads: int | None = None  # distinct calling threads, where known
    processes: int = 1
    engine_ids: dict[str, int] = field(default_factory=dict)  # where known: engine -> id
    engine_order: list[str] | None = None  # where known: the engines in id order


def engine_tracks(tracks: list[Track], fmt: str) -> list[EngineTrack]:
    """The engines' tracks in the UI's order, parsed from the UI's names (asserting the design)."""
    out: list[EngineTrack] = []
    process = group = engine = ""
    for t in tracks:
        if t.depth == 0:
            process = t.name
            continue
        if process == "System":  # the UI's own group (native traces: the clock snapshots)
            continue
        if t.name.startswith("inference \u00b7 "):  # a thread's model calls (tests/test_inference_ui.py checks them)
            group = t.name
            continue
        if fmt == "json":
            if t.depth != 1 or t.name.startswith("trt_trace"):
                continue  # a thread's own slice track (depth 2) repeats its thread's name
            m = JSON_TRACK.match(t.name)
            assert m, f"unexpected JSON track name {t.name!r}"
            leaf_ids = [i for c in tracks_under(tracks, t) for i in c.track_ids]
            lane = int(m["lane"] or 1) - 1
            out.append(EngineTrack(m["engine"], bool(m["gpu"]), lane, leaf_ids, t.name, process))
            tid = int(m["tid"])
            assert tid % 1000 == (500 if m["gpu"] else 0) + lane, f"{t.name!r}: the tid says another track"
        else:  # process -> "engines" -> engine -> lanes
            if t.depth == 1:
                group = t.name
                assert t.name in ("engines", "trt_trace metadata"), f"unexpected native track {t.name!r}"
                continue
            if group.startswith("inference \u00b7 "):
                continue
            if t.depth == 2:
                engine = t.name
                continue
            m = NATIVE_LANE.match(t.name)
            assert t.depth == 3 and group == "engines" and m, f"unexpected native track {t.name!r} under {group!r}"
            out.append(EngineTrack(engine, m["kind"] == "GPU", int(m["lane"] or 1) - 1, t.track_ids,
                                   t.name, process))
    return out


def tracks_under(tracks: list[Track], node: Track) -> list[Track]:
    i = tracks.index(node)
    out = [node]
    for t in tracks[i + 1:]:
        if t.depth <= node.depth:
            break
        out.append(t)
    return out


def check_order(found: list[EngineTrack]) -> None:
    """Per process, each engine's tracks are together: host lanes in order, then GPU lanes in order."""
    seen: list[tuple[str, str]] = []
    for t in found:
        key = (t.process, t.engine)
        if not seen or seen[-1] != key:
            assert key not in seen, f"engine {t.engine!r}'s tracks are not together: {[x.label for x in found]}"
            seen.append(key)
    for key in seen:
        mine = [(t.gpu, t.lane) for t in found if (t.process, t.engine) == key]
        assert mine == sorted(mine) and mine[0] == (False, 0), f"{key}: tracks in the order {mine}"
        gpu = [lane for g, lane in mine if g]
        host = [lane for g, lane in mine if not g]
        assert host == list(range(len(host))) and gpu == list(range(len(gpu)))


def ids(track_ids: list[int]) -> str:
    return ",".join(map(str, track_ids)) or "-1"


def check_in_ui(ui: PerfettoUI, path: Path, expected: Expected, fmt: str) -> OpenedTrace:
    trace = ui.open(str(path))
    assert trace.import_errors() == [], path
    arg = "args." if fmt == "json" else "debug."
    found = engine_tracks(trace.tracks(), fmt)
    check_order(found)
    processes = {t.process for t in found}
    assert len(processes) == expected.processes, processes
    for process in processes:
        engines = list(dict.fromkeys(t.engine for t in found if t.process == process))  # in the UI's order
        assert set(engines) == set(expected.calls), (engines, set(expected.calls))
        order = expected.engine_order or (sorted(expected.engine_ids, key=expected.engine_ids.get)
                                          if expected.engine_ids else None)
        if order:
            assert engines == order, "engines are listed in engine-id order"
        for engine, calls in expected.calls.items():
            mine = [t for t in found if t.process == process and t.engine == engine]
            host = ids([i for t in mine if not t.gpu for i in t.track_ids])
            gpu = ids([i for t in mine if t.gpu for i in t.track_ids])
            rows = trace.query(f"select name, count(*) n, count(distinct extract_arg(arg_set_id, '{arg}engine')) e, "
                               f"min(extract_arg(arg_set_id, '{arg}engine')) engine from slice "
                               f"where track_id in ({host}) group by name")
            by_name = {r["name"]: r for r in rows}
            assert by_name["execute_engine"]["n"] == calls, (engine, rows)
            assert {r["e"] for r in rows} == {1} and {r["engine"] for r in rows} == {engine}, rows
            assert set(by_name) <= {"execute_engine", "workspace", "inputs", "outputs", "enqueue"}
            gpu_rows = trace.query(f"select name, count(*) n from slice where track_id in ({gpu}) group by name")
            assert {r["name"] for r in gpu_rows} <= {"gpu", "caller stream wait"}
            if fmt == "json" and expected.engine_ids.get(engine):  # the tid reads as the engine id
                assert all(int(t.label.rsplit(" ", 1)[1]) // 1000 == expected.engine_ids[engine] for t in mine)
    n_calls = trace.scalar("select count(*) from slice where name = 'execute_engine'")
    assert n_calls == sum(expected.calls.values()) * expected.processes
    # Flows: one per GPU span, from its call's enqueue slice to its gpu slice.
    spans = trace.scalar("select count(*) from slice where name = 'gpu'")
    assert spans == expected.gpu_spans * expected.processes
    assert trace.scalar("select count(*) from flow") == spans
    joined = trace.scalar(
        f"select count(*) from flow f join slice a on f.slice_out = a.id join slice b on f.slice_in = b.id "
        f"where a.name = 'enqueue' and b.name = 'gpu' "
        f"and extract_arg(a.arg_set_id, '{arg}call_id') = extract_arg(b.arg_set_id, '{arg}call_id')")
    assert joined == spans
    # Every slice of a call carries call_id, engine and thread (an inference slice has no engine: its own test,
    # tests/test_inference_ui.py).
    missing = trace.scalar(
        f"select count(*) from slice where name not in ('trt_trace_metadata', 'inference') and "
        f"(extract_arg(arg_set_id, '{arg}call_id') is null or extract_arg(arg_set_id, '{arg}engine') is null "
        f"or extract_arg(arg_set_id, '{arg}thread') is null)")
    assert missing == 0
    if expected.threads is not None:
        threads = trace.scalar(f"select count(distinct extract_arg(arg_set_id, '{arg}thread')) from slice "
                               "where name = 'execute_engine'")
        assert threads == expected.threads
    # The UI opens on the calls (for a package run: not on the seconds of loading before them).
    assert calls_span_fraction(trace) > 0.95
    return trace


def calls_span_fraction(trace: OpenedTrace) -> float:
    """How much of the timeline the UI opens on (the trace's bounds) the calls and GPU spans fill."""
    bounds = trace.query("select start_ts, end_ts from trace_bounds")[0]
    calls = trace.query("select min(ts) b, max(ts + dur) e from slice where name != 'trt_trace_metadata'")[0]
    return (calls["e"] - calls["b"]) / (bounds["end_ts"] - bounds["start_ts"])


def suffix(fmt: str) -> str:
    return ".json" if fmt == "json" else ".pftrace"


# -- the cases --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory) -> dict[str, Path]:
    """The demo: the 6-engine AOTInductor package run 25 times with only TRT_TRACE_OUT set, per format."""
    package, _specs = demo_package_now()
    out = {}
    for fmt in FORMATS:
        path = tmp_path_factory.mktemp("demo") / f"demo{suffix(fmt)}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
        env.update(TRT_TRACE_OUT=str(path), TRT_TRACE_QUIET="1")
        proc = subprocess.run([sys.executable, "-c", SERVE_SCRIPT, package, "25"], env=env, capture_output=True,
                              text=True, timeout=300, cwd=path.parent)
        assert proc.returncode == 0, proc.stderr
        out[fmt] = path
    return out


@pytest.mark.parametrize("fmt", FORMATS)
def test_demo_package(perfetto_ui, demo_runs, fmt):
    _package, specs = demo_package_now()
    names = [s.name for s in specs]  # the package calls them in this order: engine ids 1, 2, ...
    trace = check_in_ui(perfetto_ui, demo_runs[fmt], Expected(dict.fromkeys(names, 25), threads=1,
                                                              engine_order=names), fmt)
    picture = os.environ.get("TRT_TRACE_SCREENSHOT")  # the README's pictures: docs/perfetto-demo.png
    if picture:
        trace.screenshot(picture.replace(".png", f"-{fmt}.png"))
    trace.close()


def write_records(path: Path, batches: list[np.ndarray], names: list[str], **metadata) -> None:
    writer = (ChromeJsonWriter if path.suffix == ".json" else PerfettoTraceWriter)(str(path), lambda: names)
    writer.begin("gpu test", {"tool": "trt_trace", "monotonic_ns": 1, **metadata})
    for batch in batches:
        writer.write(batch)
    writer.finish({"dropped_events": 0, "threads": [], "monotonic_ns": 10**10})


@pytest.mark.parametrize("fmt", FORMATS)
def test_gpu_spans_with_launch_flows(perfetto_ui, tmp_path, fmt):
    rows = []
    # engine_a: two calls whose GPU spans overlap (two streams: two GPU lanes); engine_b: one call.
    rows += call_records(1, 1, 1_000_000, 1_030_000, 1_500_000, stream=7)
    rows += call_records(2, 1, 1_200_000, 1_230_000, 1_400_000, stream=9)
    rows += call_records(3, 2, 2_000_000, 2_040_000, 2_090_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    path = tmp_path / f"gpu{suffix(fmt)}"
    # Host records first, GPU spans a batch later (they resolve later).
    gpu = records["phase"] == Phase.GPU
    write_records(path, [records[~gpu], records[gpu]], ["", "engine_a", "engine_b"])
    trace = check_in_ui(perfetto_ui, path, Expected({"engine_a": 2, "engine_b": 1}, gpu_spans=3, threads=1,
                                                    engine_ids={"engine_a": 1, "engine_b": 2}), fmt)
    found = engine_tracks(trace.tracks(), fmt)
    assert [(t.engine, t.gpu, t.lane) for t in found] == [
        ("engine_a", False, 0), ("engine_a", True, 0), ("engine_a", True, 1),
        ("engine_b", False, 0), ("engine_b", True, 0)]
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_caller_stream_waits_hold_their_engine_spans(perfetto_ui, tmp_path, fmt):
    # An engine on a stream of its own (2.11): each call's caller-stream wait, with its engine span
    # nested inside on the same GPU track; one wait shares both ends with its span. The calls' GPU
    # work overlaps (two caller streams): the second call's pair goes on a second GPU lane, together.
    rows = []
    rows += call_records(1, 1, 1_000_000, 1_040_000, 1_300_000, wait=(1_030_000, 1_320_000))
    rows += call_records(2, 1, 1_100_000, 1_150_000, 1_250_000, stream=9, wait=(1_130_000, 1_260_000))
    rows += call_records(3, 2, 2_000_000, 2_040_000, 2_090_000, wait=(2_040_000, 2_090_000))
    records = np.array(rows, dtype=RECORD_DTYPE)
    gpu = np.isin(records["phase"], (Phase.GPU, Phase.CALLER_WAIT))
    path = tmp_path / f"waits{suffix(fmt)}"
    write_records(path, [records[~gpu], records[gpu]], ["", "engine_a", "engine_b"])
    trace = check_in_ui(perfetto_ui, path, Expected({"engine_a": 2, "engine_b": 1}, gpu_spans=3, threads=1), fmt)
    arg = "args." if fmt == "json" else "debug."
    rows = trace.query(
        f"select s.name, s.depth, s.ts, s.dur, s.track_id, p.name parent, "
        f"extract_arg(s.arg_set_id, '{arg}call_id') call, extract_arg(s.arg_set_id, '{arg}stream') stream, "
        f"extract_arg(s.arg_set_id, '{arg}engine_stream') engine_stream "
        f"from slice s left join slice p on s.parent_id = p.id "
        f"where s.name in ('gpu', 'caller stream wait') order by call, s.depth")
    by_call = {}
    for r in rows:
        by_call.setdefault(r["call"], []).append(r)
    assert sorted(by_call) == [1, 2, 3]
    for outer, inner in by_call.values():  # (call 3: equal extents, the wait still the outer one)
        assert outer["depth"] == 0 and inner["depth"] == 1 and outer["track_id"] == inner["track_id"], by_call
        assert inner["ts"] >= outer["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
        assert (outer["name"], inner["name"], inner["parent"]) == ("caller stream wait", "gpu", "caller stream wait")
        assert inner["engine_stream"] in (1, True) and outer["stream"] == 3
    assert by_call[1][0]["track_id"] != by_call[2][0]["track_id"]  # overlapping pairs: two lanes
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("span", ["short", "long"])
@pytest.mark.parametrize("batches", ["one batch", "GPU spans later"])
def test_gpu_spans_that_begin_with_their_enqueue_keep_their_flows(perfetto_ui, tmp_path, fmt, span, batches):
    # A span starts no earlier than its enqueue (it is clamped there): both begin at one ns. A
    # short one ends long before the enqueue's host work (its middle comes first), a long one after it.
    rows = []
    for call in range(1, 4):
        begin = call * 1_000_000
        end = begin + (31_000 if span == "short" else 400_000)
        rows += call_records(call, 1 + call % 2, begin, begin + 30_000, end)
    records = np.array(rows, dtype=RECORD_DTYPE)
    gpu = records["phase"] == Phase.GPU
    path = tmp_path / f"short{suffix(fmt)}"
    write_records(path, [records] if batches == "one batch" else [records[~gpu], records[gpu]],
                  ["", "engine_a", "engine_b"])
    check_in_ui(perfetto_ui, path, Expected({"engine_a": 1, "engine_b": 2}, gpu_spans=3, threads=1), fmt).close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_omnibox_sql_mode_gives_what_the_engine_gives(perfetto_ui, tmp_path, fmt):
    # The user's way to ask (`:` in the search box, the result table in the page) against the
    # harness's way (the UI's engine from page JS): the same rows.
    rows = call_records(1, 1, 1_000_000, 1_030_000, 1_500_000) + call_records(2, 2, 2_000_000, 2_040_000, 2_090_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    path = tmp_path / f"omnibox{suffix(fmt)}"
    write_records(path, [records], ["", "engine_a", "engine_b"])
    trace = perfetto_ui.open(str(path))
    sql = "select name, count(*) as n, sum(dur) as total from slice group by name order by name"
    typed = trace.omnibox_query(sql)
    asked = [{k: str(v) for k, v in r.items()} for r in trace.query(sql)]
    assert typed == asked and {r["name"] for r in typed} >= {"execute_engine", "gpu"}
    # A second query typed over the first, as a user goes on asking.
    again = "select count(*) as calls from slice where name = 'execute_engine'"
    assert trace.omnibox_query(again) == [{"calls": str(trace.scalar(again))}] == [{"calls": "2"}]
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_overlapping_calls_on_lanes(perfetto_ui, tmp_path, fmt):
    path = tmp_path / f"threads{suffix(fmt)}"
    slow = standin.make_engine("lanes_engine", host_us=300)
    with trt_trace.tracing(str(path)):
        # 25 calls each (7.5 ms of spinning per thread): on a loaded machine a thread can finish ten
        # before the others are scheduled at all, and then no two calls overlap.
        call_from_threads(slow, threads=4, calls=25)
    trace = check_in_ui(perfetto_ui, path, Expected({"lanes_engine": 100}, threads=4), fmt)
    lanes = [t for t in engine_tracks(trace.tracks(), fmt) if t.engine == "lanes_engine"]
    assert len(lanes) > 1, "calls of 4 threads at once overlap: more than one lane"
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_merge_of_two_ranks(perfetto_ui, tmp_path, monkeypatch, fmt):
    engines = [standin.make_engine("merge_a"), standin.make_engine("merge_b")]
    paths = []
    for rank in (1, 0):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        path = tmp_path / f"rank{rank}{suffix(fmt)}"
        with trt_trace.tracing(str(path)):
            for _ in range(5):
                for e in engines:
                    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
        paths.append(str(path))
    merge(paths, str(tmp_path / "all.json"))
    trace = check_in_ui(perfetto_ui, tmp_path / "all.json", Expected({"merge_a": 5, "merge_b": 5}, processes=2),
                        "json")
    groups = [t.name for t in trace.tracks() if t.depth == 0]
    assert [g.split(" · ")[0] for g in groups] == ["rank 0", "rank 1"], groups
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_merge_of_two_ranks_with_gpu_spans(perfetto_ui, tmp_path, fmt):
    paths = []
    for rank in (0, 1):
        rows = call_records(1, 1, 1_000_000, 1_030_000, 1_500_000) + call_records(2, 2, 2_000_000, 2_030_000, 2_050_000)
        records = np.array(rows, dtype=RECORD_DTYPE)
        paths.append(str(tmp_path / f"gpu{rank}{suffix(fmt)}"))
        # Rank 1 has the lower pid: the UI must still list rank 0 first.
        write_records(Path(paths[-1]), [records], ["", "engine_a", "engine_b"], rank=rank, pid=200 - rank,
                      host="node", monotonic_ns=1 + rank, wall_ns=10**18)
    merge(paths, str(tmp_path / "all.json"))
    trace = check_in_ui(perfetto_ui, tmp_path / "all.json", Expected({"engine_a": 1, "engine_b": 1}, gpu_spans=2,
                                                                    threads=1, processes=2), "json")
    groups = [t.name for t in trace.tracks() if t.depth == 0]
    assert [g.split(" · ")[0] for g in groups] == ["rank 0", "rank 1"], groups
    trace.close()


def test_a_merge_written_as_pftrace_is_the_json_merge_in_the_ui(perfetto_ui, tmp_path):
    """`merge -o all.pftrace` (writers/perfetto_view.py) against `-o all.json` of the same inputs, as the UI's
    trace processor loads them: the same slices (time to the ns, names, categories, thread tracks, processes,
    args), the same launch flows between the same slices, the processes in the same order (rank 0 first
    though its pid is higher), and trt_trace's metadata as instants of its own track."""
    paths = []
    for rank in (0, 1):
        rows = (call_records(1, 1, 1_000_000, 1_030_000, 1_500_000)
                + call_records(2, 2, 2_000_000, 2_030_000, 2_050_000)
                + call_records(3, 1, 3_000_000, 3_040_000, 3_100_000))
        paths.append(str(tmp_path / f"gpu{rank}.pftrace" if rank else tmp_path / f"gpu{rank}.json"))
        write_records(Path(paths[-1]), [np.array(rows, dtype=RECORD_DTYPE)], ["", "engine_a", "engine_b"], rank=rank,
                      pid=200 - rank, host="node", monotonic_ns=1 + rank, wall_ns=10**18)
    merge(paths, str(tmp_path / "all.json"))
    merged = merge(paths, str(tmp_path / "all.pftrace"))
    assert merged["notes"] == []
    assert (tmp_path / "all.pftrace").read_bytes()[:1] == b"\x0a"  # a Perfetto trace, not JSON
    # Read in the smallest chunks: slices and their flow events fall into different chunks.
    report = convert(str(tmp_path / "all.json"), str(tmp_path / "small.pftrace"), chunk_bytes=1024)
    assert (report.slices, report.flows, report.unbound_flows, report.other_events) == (36, 6, 0, 0)
    loaded = {}
    for name in ("all.json", "all.pftrace", "small.pftrace"):
        trace = perfetto_ui.open(str(tmp_path / name))
        try:
            assert trace.import_errors() == [], name
            loaded[name] = loaded_content(trace)
            meta = trace.query("select count(*) n from slice where name = 'trt_trace_metadata'")[0]["n"]
            assert meta == (0 if name == "all.json" else 5)  # 2 per input, the merge's own
        finally:
            trace.close()
    assert loaded["small.pftrace"] == loaded["all.pftrace"]
    (js, jf, jg), (ps, pf, pg) = loaded["all.json"], loaded["all.pftrace"]
    assert sum(js.values()) == 2 * 3 * 6 and js == ps  # 2 ranks x 3 calls x (5 host + 1 GPU slices)
    assert sum(jf.values()) == 6 and jf == pf
    assert all(dict(f)["out_name"] == "enqueue" and dict(f)["in_name"] == "gpu" for f in pf)
    assert [g.split(" · ")[0] for g in jg] == [g.split(" · ")[0] for g in pg if g != "trt_trace metadata"][:2] \
        == ["rank 0", "rank 1"], (jg, pg)


@pytest.mark.parametrize("fmt", FORMATS)
def test_numbered_parts_of_a_size_limited_trace(perfetto_ui, tmp_path, fmt):
    path = tmp_path / f"split{suffix(fmt)}"
    engine = standin.make_engine("split_engine")
    # About three parts: ~1.2 kB (JSON) / ~0.3 kB (native) per call of 5 slices.
    with trt_trace.tracing(str(path), max_bytes=240_000 if fmt == "json" else 60_000, split=True) as session:
        for _ in range(12):
            for _ in range(50):
                torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
            session.drainer.drain_once()  # a batch per round: the writer checks the limit between batches
    parts = sorted(tmp_path.glob(f"split*{suffix(fmt)}"))
    assert 2 <= len(parts) <= 8, parts
    total = 0
    for part in parts:  # each part is a complete trace of its own calls
        calls = sum(1 for e in load_events(str(part)) if e.get("ph") == "X" and e["name"] == "execute_engine")
        check_in_ui(perfetto_ui, part, Expected({"split_engine": calls}, threads=1), fmt).close()
        total += calls
    assert total == 600


KILLED_SCRIPT = """
import os, signal, sys, torch, trt_trace
from trt_trace import standin
e = standin.make_engine("killed_engine")
for _ in range(20):
    torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
trt_trace.active().drainer.drain_once()  # drained and written
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("fmt", FORMATS)
def test_file_cut_short_by_a_kill(perfetto_ui, tmp_path, fmt):
    path = tmp_path / f"killed{suffix(fmt)}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")}
    env["TRT_TRACE_OUT"] = str(path)
    proc = subprocess.run([sys.executable, "-c", KILLED_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    if fmt == "json":
        assert not path.read_bytes().rstrip().endswith(b"]"), "a killed process leaves no closing ]"
    check_in_ui(perfetto_ui, path, Expected({"killed_engine": 20}, threads=1), fmt).close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_engine_names_with_quotes_unicode_and_newlines(perfetto_ui, tmp_path, fmt):
    # Written by the writers directly: the runtime's engine string is line-based, so a name that
    # comes through the hook never holds a newline (engine_registry keeps its first line).
    path = tmp_path / f"names{suffix(fmt)}"
    rows = call_records(1, 1, 1_000_000, 1_030_000, 1_200_000) + call_records(2, 2, 1_500_000, 1_530_000, 1_700_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    gpu = records["phase"] == Phase.GPU
    write_records(path, [records[~gpu], records[gpu]], ["", WEIRD_NAME, "plain"])
    trace = check_in_ui(perfetto_ui, path, Expected({WEIRD_NAME: 1, "plain": 1}, gpu_spans=2, threads=1,
                                                    engine_ids={WEIRD_NAME: 1, "plain": 2}), fmt)
    found = Counter((t.engine, t.gpu) for t in engine_tracks(trace.tracks(), fmt))
    assert found[(WEIRD_NAME, False)] == found[(WEIRD_NAME, True)] == 1
    trace.close()


def test_native_metadata_never_holds_what_trace_processor_cannot(perfetto_ui, tmp_path):
    # Once, a JSON null annotation (legacy_json_value "null") made trace processor abort the whole load.
    path = tmp_path / "metadata.pftrace"
    odd = {"none": None, "empty_list": [], "empty_dict": {}, "nones": {"a": None, "b": [None]},
           "mixed": [1, None, "x", {"k": None, "v": 2}], "argv": ["serve.py", "caf\udce9"],  # undecodable byte
           "huge": 1 << 70, "rank": None, "text": 'q"\n名'}
    rows = call_records(1, 1, 1_000_000, 1_030_000, 1_200_000)
    writer = PerfettoTraceWriter(str(path), lambda: ["", "meta_engine"])
    writer.begin("metadata test", {"tool": "trt_trace", "monotonic_ns": 1, **odd})
    writer.write(np.array(rows, dtype=RECORD_DTYPE))
    writer.finish({"dropped_events": 0, "threads": [], "monotonic_ns": 10**10, "gpu_clock": {"offset": None}})
    trace = check_in_ui(perfetto_ui, path, Expected({"meta_engine": 1}, gpu_spans=1, threads=1), "pftrace")
    args = {r["key"]: r["value"] for r in trace.query(
        "select key, display_value as value from args where arg_set_id in "
        "(select arg_set_id from slice where name = 'trt_trace_metadata')")}
    assert args["debug.text"] == 'q"\n名' and args["debug.mixed[0]"] == "1" and args["debug.mixed[1]"] == "x"
    assert args["debug.mixed[2].v"] == "2" and args["debug.huge"] == str(1 << 70)
    assert args["debug.argv[1]"] == "caf\\udce9"
    assert not any(k.startswith(("debug.none", "debug.empty", "debug.nones", "debug.rank")) for k in args)
    trace.close()


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_sliced_window_of_a_trace(perfetto_ui, tmp_path, fmt):
    """`trt-trace slice` of either format: a Chrome JSON window that the UI opens with exactly the calls,
    GPU spans and launch flows of the window's engine, and a timeline that opens on them."""
    rows = []
    for k in range(200):  # 1 ms apart, engines alternating
        begin = 1_000_000_000 + k * 1_000_000
        rows += call_records(k + 1, 1 + k % 2, begin, begin + 30_000, begin + 400_000)
    records = np.array(rows, dtype=RECORD_DTYPE)
    gpu = records["phase"] == Phase.GPU
    path = tmp_path / f"big{suffix(fmt)}"
    write_records(path, [records[~gpu], records[gpu]], ["", "engine_a", "engine_b"])
    out = tmp_path / "window.json"
    proc = subprocess.run(trt_trace_cli() + ["slice", str(path), "-o", str(out), "--from", "0.05", "--to", "0.1",
                                             "--engines", "engine_a"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.startswith("25 of 200 engine calls"), proc.stderr
    trace = check_in_ui(perfetto_ui, out, Expected({"engine_a": 25}, gpu_spans=25, threads=1,
                                                   engine_ids={"engine_a": 1}), "json")
    first = trace.scalar("select min(extract_arg(arg_set_id, 'args.call_id')) from slice where name = 'execute_engine'")
    assert first == 51  # call 51 (engine_a) begins 50 ms after the first call
    trace.close()
