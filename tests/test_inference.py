"""The whole inference (docs/inference.md): each call of an AOTInductor package's runner (with TRT_TRACE_OUT
alone) or of a module traced with trt_trace.inference() is a slice on its thread's inference track with its
engine calls inside it; the table's inference line and `(outside engines)` row agree with the slices counted
by brute force; the native and Python writers write the same bytes for inference records; readers and verbs
count no inference as an engine call."""

from __future__ import annotations

import os
import subprocess
import sys
import types
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson
import pytest
import torch
from conftest import Frozen, run_python, trt_trace_cli
from trace_checks import check_trace, load_strict

import trt_trace
from trt_trace.analysis.trace_summary import load_events
from trt_trace.native import ops
from trt_trace.runtime import inference
from trt_trace.runtime.native_trace import process_head
from trt_trace.schema.records import RECORD_DTYPE
from trt_trace.standin import model

ENGINES = 3
# Both formats carry the inferences (docs/inference.md): each test that traces reads its file in either.
FORMATS = pytest.mark.parametrize("suffix", [".json", ".pftrace"])


def _load(path: Path) -> list[dict]:
    """The file's events as the JSON writer writes them (a Perfetto trace read back by trt_trace's reader)."""
    return load_strict(path) if path.suffix == ".json" else load_events(str(path))


def _inferences(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("cat") == "trt_trace.inference"]


def _calls(events: list[dict]) -> list[dict]:
    return [e for e in events if e.get("cat") == "trt_trace" and e.get("name") == "execute_engine"]


def _inside(inf: dict, calls: list[dict]) -> list[dict]:
    """Brute force: the outer engine calls of the inference's thread that began inside it."""
    b, e = round(inf["ts"] * 1000), round((inf["ts"] + inf["dur"]) * 1000)
    return [c for c in calls if c["args"]["thread"] == inf["args"]["thread"] and not c["args"].get("nested")
            and b <= round(c["ts"] * 1000) < e]


def _summary(path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*trt_trace_cli(), "summary", str(path), *args], capture_output=True, text=True,
                          timeout=300)


@FORMATS
def test_a_traced_forward_is_one_inference_with_its_engine_calls_inside(tmp_path, suffix):
    m = trt_trace.inference(model.StandInModel(model.demo_specs(ENGINES)))
    assert trt_trace.inference(m) is m  # once: a second wrap changes nothing
    x = torch.randn(8, 64)
    m(x)  # not tracing: no inference, the call works
    out = tmp_path / f"t{suffix}"
    with trt_trace.tracing(str(out)):
        for _ in range(20):
            m(x)
        torch.ops.tensorrt.execute_engine([x], getattr(m, m.specs[0].name))  # outside any inference
    events = _load(out)
    check_trace(events)
    infs, calls = _inferences(events), _calls(events)
    assert len(infs) == 20 and len(calls) == 20 * ENGINES + 1
    assert all(i["args"]["kind"] == "module" and len(_inside(i, calls)) == ENGINES for i in infs)
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
    assert {names[i["tid"]] for i in infs} == {f"inference · {infs[0]['args']['thread']}"}
    assert infs[0]["tid"] < min(c["tid"] for c in calls)  # listed before the engines' tracks
    ids = {i["args"]["call_id"] for i in infs}
    assert not ids & {c["args"]["call_id"] for c in calls}  # never an engine call's id

    doc = orjson.loads(_summary(out, "--format", "json").stdout)
    assert sum(r["calls"] for r in doc["engines"]) == 20 * ENGINES + 1  # no inference counted as a call
    f = doc["inferences"]
    durations = sorted(round(i["dur"] * 1000) for i in infs)
    engine_ns = sum(round(c["dur"] * 1000) for i in infs for c in _inside(i, calls))
    assert f["count"] == 20
    assert f["p50_ms"] == pytest.approx(durations[9] / 1e6, abs=2e-6)  # ceil(0.5 n)-th smallest
    assert f["p99_ms"] == pytest.approx(durations[19] / 1e6, abs=2e-6)
    outside = sum(durations) - engine_ns
    assert f["outside_engines_ms"] == pytest.approx(outside / 1e6, abs=1e-4)
    assert f["outside_engines_pct"] == pytest.approx(100 * outside / sum(durations), abs=1e-3)
    first = min(round(i["ts"] * 1000) for i in infs)
    last = max(round((i["ts"] + i["dur"]) * 1000) for i in infs)
    assert f["per_s"] == pytest.approx(20 * 1e9 / (last - first), rel=1e-4)
    assert doc["outside_engines"]["engine"] == "(outside engines)" and doc["outside_engines"]["calls"] == 20

    text = _summary(out).stdout
    lines = text.splitlines()
    assert lines[0].startswith("inferences: 20   p50 ") and "outside engines" in lines[0]
    row = next(k for k, line in enumerate(lines) if line.startswith("(outside engines)"))
    assert lines[row + 1].startswith("ALL")  # after the engines, before ALL
    assert "(outside engines)" in _summary(out, "--format", "csv").stdout
    assert "(outside engines)" in _summary(out, "--sort", "calls", "--top", "1").stdout  # apart from --top


@FORMATS
def test_nested_inferences_count_once_and_errors_are_flagged(tmp_path, suffix):
    m = trt_trace.inference(model.StandInModel(model.demo_specs(2)))

    @trt_trace.inference
    def handler(x: torch.Tensor) -> torch.Tensor:
        return m(m(x))

    @trt_trace.inference
    def broken(x: torch.Tensor) -> torch.Tensor:
        m(x)
        raise ValueError("no")

    out = tmp_path / f"t{suffix}"
    with trt_trace.tracing(str(out)):
        handler(torch.randn(8, 64))
        with pytest.raises(ValueError, match="no"):
            broken(torch.randn(8, 64))
        m(torch.randn(8, 64))  # the next inference opens: the failed one left none open
    infs = _inferences(_load(out))
    calls = _calls(_load(out))
    assert [len(_inside(i, calls)) for i in infs] == [4, 2, 2]
    assert [bool(i["args"].get("error")) for i in infs] == [False, True, False]
    with pytest.raises(TypeError, match="module or a callable"):
        trt_trace.inference(3)


@FORMATS
def test_a_package_runner_is_traced_with_trt_trace_out_alone(tmp_path, demo_package, suffix):
    # examples/serve.py changes nothing for tracing: the runner's class is wrapped when torch._inductor's package
    # module is imported. Two threads: one inference track each, each inference holding its six engine calls.
    out = tmp_path / f"serve{suffix}"
    serve = Path(__file__).resolve().parents[1] / "examples" / "serve.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_")
           or k in ("TRT_TRACE_CACHE_DIR", "TRT_TRACE_STANDIN_RUNTIME")}
    env["TRT_TRACE_OUT"] = str(out)
    r = subprocess.run([sys.executable, str(serve), "--calls", "15", "--threads", "2"], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    events = _load(out)
    check_trace(events)
    infs, calls = _inferences(events), _calls(events)
    assert len(infs) == 30 and all(i["args"]["kind"] == "aoti" for i in infs)
    assert all(len(_inside(i, calls)) == 6 for i in infs)
    by_thread = defaultdict(set)
    for i in infs:
        by_thread[i["args"]["thread"]].add(i["tid"])
    assert len(by_thread) == 2 and all(len(t) == 1 for t in by_thread.values())
    text = _summary(out).stdout
    assert text.startswith("inferences: 30 ") and "(outside engines)" in text



def test_a_runner_class_that_cannot_be_wrapped_is_one_warning_line_and_the_import_goes_on(capsys):
    class Runner(metaclass=Frozen):
        def __call__(self) -> int:
            return 1

    module = types.ModuleType(inference.AOTI_MODULE)
    setattr(module, inference.AOTI_CLASS, Runner)
    inference._after_aoti_import(module)
    assert capsys.readouterr().err == (f"trt_trace: {inference.AOTI_MODULE}.{inference.AOTI_CLASS} runs without "
                                       "inferences (TypeError: frozen class)\n")
    assert Runner()() == 1 and not getattr(Runner.__call__, inference.WRAPPED, False)


def test_without_tracing_the_wrapper_records_nothing(tmp_path):
    r = run_python("import trt_trace, torch\n"
                   "from trt_trace.native import inference_calls\n"
                   "e = inference_calls.entry()\n"
                   "print(e.begin())\n"
                   "trt_trace.start('" + str(tmp_path / "t.json") + "')\n"
                   "h = e.begin(); print(h, e.begin()); e.end(h, 1, 0)\n"
                   "h = e.begin(); print(h); e.end(h, 1, 0)\n"
                   "trt_trace.stop()\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "1", "0", "1"]  # off: none; on: one, none nested; closed: one again


def _records(threads: int) -> np.ndarray:
    rows = []
    for k in range(threads):
        b = 1_000_000 + 10 * k
        rows.append((b, b + 5_000, 1 + 2 * k, 0, 100 + k, 11, k % 2, 0xFFFF, 1 + k % 2))
        rows.append((b + 100, b + 900, 2 + 2 * k, 1, 100 + k, 0, 0, 0xFFFF, 0))
        rows.append((b + 100, b + 900, 2 + 2 * k, 1, 100 + k, 1, 0, 0xFFFF, 0))
    out = np.array(rows, dtype=RECORD_DTYPE)
    return out[np.argsort(out["end_ns"], kind="stable")]


@pytest.mark.parametrize("threads", [3, 1002])
def test_the_native_writer_writes_the_python_writers_inference_bytes(tmp_path, threads, monkeypatch):
    # Past 999 calling threads the tracks go to the overflow range: still one each, the same bytes.
    from trt_trace.io.writers import ChromeJsonWriter

    recs = _records(threads)
    monkeypatch.chdir(tmp_path)
    writer = ChromeJsonWriter("py.json", lambda: ["", "eng"])
    writer._pid = 4242
    writer.begin("p", {"tool": "trt_trace"})
    for i in range(0, len(recs), 50):
        writer.write(recs[i:i + 50])
    end = writer.end_record({"records_drained": len(recs), "dropped_events": 0})
    writer.finish({"records_drained": len(recs), "dropped_events": 0})
    ops.json_trace_from_records("native.json", torch.from_numpy(recs.view(np.uint8).copy()), 50, 4242, True,
                                process_head(4242, "p", {"tool": "trt_trace"}), ["", "eng"], [], 0, True,
                                orjson.dumps(end))
    assert (tmp_path / "native.json").read_bytes() == (tmp_path / "py.json").read_bytes()
    events = load_strict(tmp_path / "native.json")
    tids = {e["tid"] for e in _inferences(events)}
    assert len(tids) == threads and (threads < 1000 or max(tids) >= 1 << 31)
    doc = orjson.loads(_summary(tmp_path / "native.json", "--format", "json").stdout)
    assert doc["inferences"]["count"] == threads and doc["engines"][0]["calls"] == threads
    # Each inference holds its one call of 800 ns: 4200 ns outside, of 5000.
    assert doc["inferences"]["outside_engines_pct"] == pytest.approx(84.0)


@pytest.mark.parametrize("threads", [3, 1002])
def test_both_perfetto_writers_write_the_same_inference_tracks_and_the_table_reads_them(tmp_path, threads,
                                                                                        monkeypatch):
    # The native Perfetto writer (csrc/session/perfetto_trace.cpp) and the Python one write the same bytes for
    # inference records (a track per calling thread, past 999 threads too); the Perfetto reader hands the same
    # inference slices as the JSON trace of the same records, so the table's line and row are the same.
    import time

    from trt_trace.io.writers import ChromeJsonWriter
    from trt_trace.io.writers.perfetto_trace import PerfettoTraceWriter, metadata_annotations, start_metadata

    recs = _records(threads)
    monkeypatch.chdir(tmp_path)
    clock = 1_700_000_000_000_000_000
    end_meta = {"records_drained": len(recs), "dropped_events": 0, "monotonic_ns": 10**12}
    with monkeypatch.context() as m:  # clock snapshots pinned on both sides
        m.setattr(time, "clock_gettime_ns", lambda c: clock + int(c))
        m.setattr(time, "time_ns", lambda: clock)
        writer = PerfettoTraceWriter("py.pftrace", lambda: ["", "eng"])
        writer._pid = 4242
        writer.begin("p", {"tool": "trt_trace", "monotonic_ns": 900_000})
        for i in range(0, len(recs), 50):
            writer.write(recs[i:i + 50])
        end = writer.end_record(end_meta)
        writer.finish(end_meta)
    native = tmp_path / "native"
    native.mkdir()
    monkeypatch.chdir(native)
    counts = ops.perfetto_trace_from_records(
        "py.pftrace", torch.from_numpy(recs.view(np.uint8).copy()), 50, 4242, True, "p",
        metadata_annotations(start_metadata({"tool": "trt_trace", "monotonic_ns": 900_000})), 900_000, ["", "eng"],
        [], 0, True, metadata_annotations(end), 10**12,
        [clock + time.CLOCK_BOOTTIME, clock + time.CLOCK_MONOTONIC, clock])
    assert (native / "py.pftrace").read_bytes() == (tmp_path / "py.pftrace").read_bytes()
    assert counts[0] == len(recs) == end["records_written"]  # the inferences counted as written events
    monkeypatch.chdir(tmp_path)
    json_writer = ChromeJsonWriter("py.json", lambda: ["", "eng"])
    json_writer._pid = 4242
    json_writer.begin("p", {"tool": "trt_trace"})
    json_writer.write(recs)
    json_writer.finish({"records_drained": len(recs), "dropped_events": 0})

    def strip(events: list[dict]) -> list[tuple]:
        infs = _inferences(events)
        names = {e["tid"]: e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        return sorted((round(i["ts"] * 1000), round(i["dur"] * 1000), i["tid"], names[i["tid"]], i["args"]["kind"],
                       i["args"]["call_id"], i["args"]["thread"], i["args"].get("error", False)) for i in infs)

    from_json = strip(load_strict(tmp_path / "py.json"))
    assert strip(load_events(str(tmp_path / "py.pftrace"))) == from_json and len(from_json) == threads
    assert any(e[7] for e in from_json)  # an error flag carried
    docs = [orjson.loads(_summary(tmp_path / name, "--format", "json").stdout) for name in ("py.json", "py.pftrace")]
    assert docs[0]["inferences"] == docs[1]["inferences"] and docs[0]["inferences"]["count"] == threads
    assert docs[0]["outside_engines"] == docs[1]["outside_engines"]
    assert docs[1]["inferences"]["outside_engines_pct"] == pytest.approx(84.0)
    texts = [_summary(tmp_path / name).stdout.splitlines() for name in ("py.json", "py.pftrace")]
    assert texts[0][0] == texts[1][0] and texts[0][0].startswith(f"inferences: {threads} ")
    assert [x for x in texts[0] if x.startswith("(outside engines)")] == \
        [x for x in texts[1] if x.startswith("(outside engines)")] != []


def _series(n: int) -> np.ndarray:
    """n inferences 100 us apart on one thread, 50 us each, each holding one 5 us call of engines 1 and 2."""
    rows = []
    for k in range(n):
        b = 1_000_000 + k * 100_000
        rows.append((b, b + 50_000, 1000 + k, 0, 77, 11, 0, 0xFFFF, 1))
        for e in (1, 2):
            c = b + 1_000 + e * 10_000
            rows.append((c, c + 5_000, 10 * k + e, e, 77, 0, 0, 0xFFFF, 0))
            rows.append((c, c + 5_000, 10 * k + e, e, 77, 1, 0, 0xFFFF, 0))
    out = np.array(rows, dtype=RECORD_DTYPE)
    return out[np.argsort(out["end_ns"], kind="stable")]


@FORMATS
def test_the_windows_cut_the_inferences_by_their_begin(tmp_path, suffix):
    # --skip-first N leaves out each process's first N inferences as it leaves out each engine's first N calls;
    # --from/--to keep the inferences that begin in the window, as they keep calls (docs/inference.md).
    from trt_trace.io.writers import ChromeJsonWriter
    from trt_trace.io.writers.perfetto_trace import PerfettoTraceWriter

    recs = _series(10)
    path = tmp_path / f"w{suffix}"
    writer = (ChromeJsonWriter if suffix == ".json" else PerfettoTraceWriter)(str(path), lambda: ["", "a", "b"])
    writer.begin("p", {"tool": "trt_trace"})
    writer.write(recs)
    writer.finish({"records_drained": len(recs), "dropped_events": 0})

    def doc(*args: str) -> dict:
        return orjson.loads(_summary(path, "--format", "json", *args).stdout)

    whole = doc()
    assert whole["inferences"]["count"] == 10 and whole["all"]["calls"] == 20
    skipped = doc("--skip-first", "2")
    assert skipped["inferences"]["count"] == 8 and skipped["all"]["calls"] == 16
    assert skipped["inferences"]["outside_engines_pct"] == pytest.approx(80.0)  # 40 us of 50 outside
    assert skipped["inferences"]["per_s"] == pytest.approx(8 * 1e9 / (7 * 100_000 + 50_000))
    # Inferences 3, 4 and 5 begin in [250.5 us, 550.5 us) after the first slice, whichever slice is first (the
    # inference's begin or its first call's, 11 us later), and so do their calls.
    timed = doc("--from", "0.0002505", "--to", "0.0005505")
    assert timed["inferences"]["count"] == 3 and timed["all"]["calls"] == 6
    assert timed["inferences"]["p50_ms"] == pytest.approx(0.05)
    assert timed["outside_engines"]["calls"] == 3
    both = doc("--skip-first", "4", "--from", "0.0002505", "--to", "0.0005505")
    assert both["inferences"]["count"] == 2 and both["all"]["calls"] == 4  # 4 and 5
    assert _summary(path, "--from", "0.0002505", "--to", "0.0005505").stdout.startswith("inferences: 3 ")
    none = doc("--from", "0.00095")  # a window past the last inference: no line
    assert none["inferences"] is None and none["outside_engines"] is None


def _synthetic(path: Path, pid: int) -> None:
    from trt_trace.io.writers import ChromeJsonWriter
    from trt_trace.io.writers.perfetto_trace import PerfettoTraceWriter

    recs = _records(3)
    writer = (ChromeJsonWriter if path.suffix == ".json" else PerfettoTraceWriter)(str(path), lambda: ["", "eng"])
    writer._pid = pid
    writer.begin("p", {"tool": "trt_trace", "pid": pid, "host": "h"})
    writer.write(recs)
    writer.finish({"records_drained": len(recs), "dropped_events": 0})


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*trt_trace_cli(), *args], capture_output=True, text=True, timeout=300)


@FORMATS
def test_verbs_carry_inferences_and_never_count_one_as_a_call(tmp_path, suffix):
    a, b = tmp_path / f"a{suffix}", tmp_path / f"b{suffix}"
    _synthetic(a, 11)
    _synthetic(b, 12)
    merged = tmp_path / "m.json"
    assert _cli("merge", str(a), str(b), "-o", str(merged)).returncode == 0
    doc = orjson.loads(_summary(merged, "--format", "json").stdout)
    assert doc["all"]["calls"] == 6 and doc["inferences"]["count"] == 6
    assert doc["inferences"]["outside_engines_pct"] == pytest.approx(84.0)  # joined per process, as in each file
    cut = tmp_path / "s.json"
    assert _cli("slice", str(a), "--skip-first", "1", "-o", str(cut)).returncode == 0
    events = load_strict(cut)
    assert len(_calls(events)) == 2 and len(_inferences(events)) == 3  # kept where they overlap the window
    d = _cli("diff", str(a), str(b))
    assert d.returncode == 0 and " 3/3 " in d.stdout  # base/new calls of the engine: no inference among them


def test_a_flight_dump_holds_the_inferences(tmp_path):
    m = trt_trace.inference(model.StandInModel(model.demo_specs(2)))
    trt_trace.flight(30, str(tmp_path / "f.json"))
    try:
        for _ in range(4):
            m(torch.randn(8, 64))
        dumped = trt_trace.dump()
    finally:
        trt_trace.stop()
    events = load_strict(dumped)
    infs, calls = _inferences(events), _calls(events)
    assert len(infs) == 4 and all(len(_inside(i, calls)) == 2 for i in infs)
