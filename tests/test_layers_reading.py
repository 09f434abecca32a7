"""`trt-trace layers` on the reading path of every verb (trt_trace/io/readers, docs/layers.md): traces
with layer records of exact durations written by trt_trace's own writers, in both formats, read
streamed (the Perfetto fast path, never the in-memory general one); summary, diff and export give
the same results with and without layer records; merge and slice keep the layer slices of the calls
they keep; summary's window options; how a trace ended, traces with no layers and files that are no
traces, each in one line and an exit code; any arguments (hypothesis); no torch import; a forked
child with TRT_TRACE_LAYERS."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_python, trt_trace_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic_traces import call_rows, write_trace

from trt_trace import cli
from trt_trace.analysis.layers_report import LayerCalls, collect, format_tables, layer_tables
from trt_trace.analysis.trace_summary import load_events
from trt_trace.io.readers.perfetto import PerfettoReader
from trt_trace.native import ops
from trt_trace.schema.phases import LAYER_RECORD
from trt_trace.schema.trace_format import CATEGORY, LAYER_CATEGORY

CLI = trt_trace_cli()
LAYER_NAMES = ["conv", "fc", "softmax"]
ENGINES = ["", "gpu_engine", "cpu_engine"]
PHASES = [10_000, 20_000, 10_000, 500_000]  # workspace, inputs, outputs, enqueue (ns)
ENQUEUE_AT = sum(PHASES[:3])
# gpu_engine: call id -> (GPU span, its layers in ns); calls 2-4 profiled (the first call runs as usual).
GPU_CALLS = {1: (450_000, None), 2: (500_000, {"conv": 300_000, "fc": 100_000}),
             3: (520_000, {"conv": 320_000, "fc": 110_000}), 4: (480_000, {"conv": 310_000, "fc": 90_000}),
             5: (470_000, None), 6: (460_000, None)}
# cpu_engine (no GPU span): calls 8 and 9 profiled.
CPU_CALLS = {7: None, 8: {"softmax": 50_000, "fc": 10_000}, 9: {"softmax": 60_000, "fc": 12_000}, 10: None}
REPORT = {"calls_per_engine": 3, "engines": [
    {"engine_id": 1, "engine": "gpu_engine", "profiled_calls": 3, "note": ""},
    {"engine_id": 2, "engine": "cpu_engine", "profiled_calls": 2, "note": ""},
    {"engine_id": 3, "engine": "never_engine", "profiled_calls": 0,
     "note": "the runtime has no enable_profiling: not profiled"}]}


def layer_rows(call_id: int, engine: int, begin: int, layers: dict[str, int], device: int) -> list[tuple]:
    """A profiled call's layer records as the hook writes them: end to end from its enqueue phase."""
    rows, t = [], begin + ENQUEUE_AT
    for name, ns in layers.items():
        rows.append((t, t + ns, call_id, engine, 42, LAYER_RECORD, 0, device, LAYER_NAMES.index(name)))
        t += ns
    return rows


def rows_of(with_layers: bool = True) -> list[tuple]:
    rows: list[tuple] = []
    for k, (call_id, (gpu, layers)) in enumerate(GPU_CALLS.items()):
        begin = 10**9 + k * 10**6
        rows += call_rows(call_id, 1, begin, PHASES, device=0, gpu_ns=gpu)
        if layers and with_layers:
            rows += layer_rows(call_id, 1, begin, layers, 0)
    for k, (call_id, layers) in enumerate(CPU_CALLS.items()):
        begin = 10**9 + 500_000 + k * 10**6
        rows += call_rows(call_id, 2, begin, PHASES)
        if layers and with_layers:
            rows += layer_rows(call_id, 2, begin, layers, 0xFFFF)
    return sorted(rows, key=lambda r: r[0])


@pytest.fixture
def names(monkeypatch):
    """The writers take layer names from the hook's table: here, the made-up ones."""
    monkeypatch.setattr(ops, "layer_names", lambda: list(LAYER_NAMES))


def layers_trace(path: Path, with_layers: bool = True, end: dict | None = None, **kw) -> Path:
    end = {"layers": REPORT} if end is None else end
    return write_trace(path, rows_of(with_layers), ENGINES, end=end if with_layers else {}, **kw)


def cli_run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)


def layers_json(*args: str) -> dict:
    out = cli_run("layers", *args, "--json")
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return json.loads(out.stdout)


def by_engine(doc: dict) -> dict[str, dict]:
    return {e["engine"]: e for e in doc["engines"]}


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_the_table_is_exact_in_both_formats(names, tmp_path, suffix):
    path = layers_trace(tmp_path / f"t{suffix}")
    doc = layers_json(str(path))
    assert doc["ended"] == "closed"
    gpu, cpu, never = (by_engine(doc)[n] for n in ("gpu_engine", "cpu_engine", "never_engine"))
    assert gpu["layers"] == [
        {"layer": "conv", "calls": 3, "total_ns": 930_000, "share": pytest.approx(100 * 930 / 1230),
         "p50_ns": 310_000, "mean_ns": 310_000, "max_ns": 320_000},
        {"layer": "fc", "calls": 3, "total_ns": 300_000, "share": pytest.approx(100 * 300 / 1230), "p50_ns": 100_000,
         "mean_ns": 100_000, "max_ns": 110_000}]
    # Per call: 400, 430 and 400 us of layers (p50 400); GPU spans 500, 520, 480 (p50 500); the
    # engine's other calls 450, 470, 460 (p50 460); enqueue 500 us each.
    assert (gpu["profiled_calls"], gpu["partial_calls"], gpu["outside_window"]) == (3, 0, 0)
    assert (gpu["layers_sum_p50_ns"], gpu["gpu_p50_ns"], gpu["gpu_calls"], gpu["unprofiled_gpu_p50_ns"],
            gpu["enqueue_p50_ns"]) == (400_000, 500_000, 3, 460_000, 500_000)
    assert gpu["layers_vs_gpu"] == pytest.approx(0.8)
    assert [(r["layer"], r["total_ns"], r["p50_ns"]) for r in cpu["layers"]] == [("softmax", 110_000, 50_000),
                                                                                 ("fc", 22_000, 10_000)]
    assert (cpu["profiled_calls"], cpu["gpu_p50_ns"], cpu["unprofiled_gpu_p50_ns"], cpu["layers_sum_p50_ns"]) == (
        2, -1, -1, 60_000)
    assert (never["profiled_calls"], never["layers"], never["note"]) == (
        0, [], "the runtime has no enable_profiling: not profiled")
    text = cli_run("layers", str(path))
    assert text.returncode == 0 and text.stderr == ""
    assert text.stdout.startswith("gpu_engine: 3 profiled calls, 2 layers\n")
    assert ("  layers' sum per call p50 400.0 us; GPU span of the same calls p50 500.0 us (layers / GPU 0.80); "
            "unprofiled calls' GPU span p50 460.0 us\n  note: the layers cover only 80% of the GPU span") in text.stdout
    assert "never_engine: no per-layer timing (the runtime has no enable_profiling: not profiled)" in text.stdout


def test_the_perfetto_fast_path_reads_the_layer_slices(names, tmp_path, monkeypatch):
    """Layer slices keep a native trace on the streamed path (the general one holds the file in memory)."""
    pf = layers_trace(tmp_path / "t.pftrace")
    js = layers_trace(tmp_path / "t.json")

    def general(*args, **kw):
        raise AssertionError("the general (in-memory) path read a trt_trace file")

    monkeypatch.setattr(PerfettoReader, "_general", general)
    tables = {fmt: format_tables(layer_tables(collect(str(p)))) for fmt, p in (("pf", pf), ("json", js))}
    assert tables["pf"] == tables["json"]
    events = [e for e in load_events(str(pf)) if e.get("cat") == LAYER_CATEGORY]
    assert len(events) == 10 and {e["name"] for e in events} == set(LAYER_NAMES)
    assert events[0]["args"] == {"engine": "gpu_engine", "engine_id": 1, "call_id": 2, "thread": 42, "device": 0,
                                 "layer": "conv"}


def _strip_paths(doc):
    if isinstance(doc, dict):
        return {k: _strip_paths(v) for k, v in doc.items() if k not in ("path", "base", "new", "trace", "file")}
    if isinstance(doc, list):
        return [_strip_paths(v) for v in doc]
    return doc


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_summary_diff_and_export_are_unchanged_by_layer_records(names, tmp_path, suffix):
    """No layer slice is taken for a call or a phase; `summary` keeps the profiled calls with
    --include-profiled (by default it leaves them out: tests/test_summary_profiled.py)."""
    import pyarrow.parquet as pq

    with_layers = layers_trace(tmp_path / f"with{suffix}")
    without = layers_trace(tmp_path / f"without{suffix}", with_layers=False)
    results = {}
    for name, path in (("with", with_layers), ("without", without)):
        summary = cli_run("summary", str(path), "--json", "--include-profiled")
        by_phase = cli_run("summary", str(path), "--phase", "gpu", "--json", "--include-profiled")
        diff = cli_run("diff", str(path), str(without), "--json")
        exported = tmp_path / f"{name}.parquet"
        export = cli_run("export", str(path), str(exported))
        assert summary.returncode == by_phase.returncode == diff.returncode == export.returncode == 0, (
            summary.stderr, diff.stderr, export.stderr)
        results[name] = (_strip_paths(json.loads(summary.stdout)), _strip_paths(json.loads(by_phase.stdout)),
                         _strip_paths(json.loads(diff.stdout)), pq.read_table(exported))
    profiled = len({e["args"]["call_id"] for e in load_events(str(with_layers)) if e.get("cat") == LAYER_CATEGORY})
    for doc in (results["with"][0], results["with"][1]):
        assert (doc.pop("profiled_calls"), doc.pop("profiled_included")) == (profiled, True)
    for doc in (results["without"][0], results["without"][1]):
        assert (doc.pop("profiled_calls"), doc.pop("profiled_included")) == (0, True)
    assert results["with"][:3] == results["without"][:3]
    default = json.loads(cli_run("summary", str(with_layers), "--json").stdout)
    assert profiled > 0 and default["profiled_calls"] == profiled and not default["profiled_included"]
    assert default["all"]["calls"] == results["with"][0]["all"]["calls"] - profiled
    assert results["with"][3].equals(results["without"][3]) and results["with"][3].num_rows == 10
    assert results["with"][0]["engines"][0]["calls"] in (6, 4)  # every call counted, no layer taken for one


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_merge_and_slice_keep_the_layer_slices_of_the_calls_they_keep(names, tmp_path, suffix):
    a = layers_trace(tmp_path / f"a{suffix}", pid=101, rank=0)
    b = layers_trace(tmp_path / "b.json", pid=202, rank=1)
    merged = tmp_path / "all.json"
    assert cli_run("merge", str(a), str(b), "-o", str(merged)).returncode == 0
    alone = by_engine(layers_json(str(a)))
    doc = layers_json(str(merged))
    assert len(doc["engines"]) == 6 and len({e["process"] for e in doc["engines"]}) == 2
    for e in doc["engines"]:
        mine = alone[e["engine"]]
        assert {k: v for k, v in e.items() if k != "process"} == {k: v for k, v in mine.items() if k != "process"}
    # A slice holds the layers of the calls in its window, as `layers` with the same window counts them.
    sliced = tmp_path / "s.json"
    assert cli_run("slice", str(a), "-o", str(sliced), "--skip-first", "2").returncode == 0
    windowed = by_engine(layers_json(str(a), "--skip-first", "2"))
    of_slice = by_engine(layers_json(str(sliced)))
    gpu = windowed["gpu_engine"]
    # Calls 1 and 2 left out: profiled calls 3 and 4 count (conv 320 + 310, fc 110 + 90), call 2 is outside.
    assert (gpu["profiled_calls"], gpu["outside_window"], gpu["gpu_p50_ns"], gpu["unprofiled_gpu_p50_ns"]) == (
        2, 1, 480_000, 460_000)
    assert [(r["layer"], r["total_ns"], r["p50_ns"]) for r in gpu["layers"]] == [("conv", 630_000, 310_000),
                                                                                 ("fc", 200_000, 90_000)]
    assert (windowed["cpu_engine"]["profiled_calls"], windowed["cpu_engine"]["outside_window"]) == (1, 1)
    for engine in ("gpu_engine", "cpu_engine"):
        keep = ("layers", "profiled_calls", "layers_sum_p50_ns", "gpu_p50_ns", "unprofiled_gpu_p50_ns",
                "enqueue_p50_ns")
        assert {k: of_slice[engine][k] for k in keep} == {k: windowed[engine][k] for k in keep}
    text = cli_run("layers", str(a), "--skip-first", "2")
    assert "  window: 1 profiled call outside it left out" in text.stdout
    assert text.stdout.rstrip().endswith("window: first 2 call(s) of each engine left out")


def test_a_window_in_seconds(names, tmp_path):
    path = layers_trace(tmp_path / "t.json")
    # Calls of gpu_engine begin 1 ms apart from the trace's first slice: [1.5 ms, 3.5 ms) holds calls 3 and 4.
    gpu = by_engine(layers_json(str(path), "--from", "0.0015", "--to", "0.0035"))["gpu_engine"]
    assert (gpu["profiled_calls"], gpu["outside_window"], gpu["unprofiled_gpu_p50_ns"]) == (2, 1, -1)
    bad = cli_run("layers", str(path), "--from", "2", "--to", "1")
    assert (bad.returncode, bad.stdout, bad.stderr) == (2, "", "trt-trace layers: --to 1 must come after --from 2\n")


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_a_cut_trace_at_every_boundary_gives_a_table_or_one_line(names, tmp_path, suffix, capsys):
    whole = layers_trace(tmp_path / f"whole{suffix}").read_bytes()
    cut = tmp_path / f"cut{suffix}"
    if suffix == ".json":
        bounds = [i + 1 for i, c in enumerate(whole) if c == ord("\n")] + [len(whole) - 3]
    else:  # packet boundaries, and the middle of each packet
        bounds, pos = [], 0
        while pos < len(whole):
            size, shift, q = 0, 0, pos + 1
            while True:
                size |= (whole[q] & 0x7F) << shift
                shift += 7
                q += 1
                if not whole[q - 1] & 0x80:
                    break
            bounds += [pos + (q - pos + size) // 2, q + size]
            pos = q + size
    seen_cut_table = False
    for n in bounds:
        cut.write_bytes(whole[:n])
        code = cli.main(["layers", str(cut), "--json"])
        out = capsys.readouterr()
        assert "Traceback" not in out.err
        lines = out.err.splitlines()
        assert all(line.startswith("trt-trace layers: ") for line in lines), out.err
        if code == 1:
            assert len(lines) == 1 and out.out == "", (n, out.err)
            continue
        assert code == 0, (n, out.err)
        doc = json.loads(out.out)
        if n < len(whole) and doc["ended"] != "closed":
            assert f"trt-trace layers: {cut} was cut short: no end record (process killed?)" in lines[0]
            seen_cut_table |= any(e["profiled_calls"] for e in doc["engines"])
    assert seen_cut_table


@pytest.mark.parametrize("suffix", [".json", ".pftrace"])
def test_no_layers_and_no_trace_are_one_line_and_exit_1(names, tmp_path, suffix):
    plain = layers_trace(tmp_path / f"plain{suffix}", with_layers=False)
    for args in ([str(plain)], [str(plain), "--json"]):
        out = cli_run("layers", *args)
        assert (out.returncode, out.stdout) == (1, "")
        assert out.stderr == (f"trt-trace layers: {plain} has no per-layer timing; record it with TRT_TRACE_LAYERS=N "
                              "(or trt-trace run --layers N): each engine's next N calls after its first\n")
    (tmp_path / "noise.bin").write_bytes(bytes(range(7, 200)))
    (tmp_path / "empty.json").write_bytes(b"")
    for path, line in ((tmp_path / "noise.bin", "is not a trace file (neither Chrome JSON nor Perfetto)"),
                       (tmp_path / "empty.json", "is empty (not a trace file)"),
                       (tmp_path, "is a directory, not a trace file"), (tmp_path / "nope.json", ": no such file")):
        out = cli_run("layers", str(path))
        assert (out.returncode, out.stdout) == (1, "") and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith(f"trt-trace layers: {path}") and line in out.stderr, out.stderr


TOKENS = st.one_of(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=20),
    st.sampled_from(["--json", "--skip-first", "--from", "--to", "-1", "0", "1", "2", "0.001", "nan", "inf", "1e400",
                     "abc", "-h", "--", "T", "P", "PLAIN", "missing.json", ".", "/"]))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(options=st.lists(TOKENS, max_size=6))
def test_layers_takes_any_arguments(names, tmp_path_factory, options, capsys):
    where = tmp_path_factory.getbasetemp() / "layers_any"
    if not where.exists():
        where.mkdir()
        layers_trace(where / "t.json")
        layers_trace(where / "t.pftrace")
        layers_trace(where / "plain.json", with_layers=False)
    paths = {"T": str(where / "t.json"), "P": str(where / "t.pftrace"), "PLAIN": str(where / "plain.json")}
    argv = ["layers", *[paths.get(o, o) for o in options]]
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse: --help, or a usage error
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    out = capsys.readouterr()
    assert isinstance(code, int) and "Traceback" not in out.err + out.out
    assert all(line.startswith("trt-trace") for line in out.err.splitlines()), out.err
    if code != 0:
        assert code in (1, 2) and len(out.err.splitlines()) == 1, out.err


def test_the_layers_verb_never_imports_torch(names, tmp_path):
    js, pf = layers_trace(tmp_path / "t.json"), layers_trace(tmp_path / "t.pftrace")
    code = ("import sys, trt_trace_cli\nfor v in [['layers', J], ['layers', P, '--json', '--skip-first', '1']]:\n"
            "    sys.argv = ['trt-trace', *v]\n    assert trt_trace_cli.main() == 0\nprint('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", f"J, P = {str(js)!r}, {str(pf)!r}\n" + code], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.strip().splitlines()[-1] == "False", proc.stdout + proc.stderr


def test_the_gpu_comparison_from_made_up_events():
    """LayerCalls.from_events: the same arithmetic on event dicts (whole calls: phases add up)."""
    def call(call_id, gpu, layers=None):
        args = {"engine": "e", "engine_id": 1, "call_id": call_id, "device": 0}
        begin = call_id * 1000.0
        out = [{"ph": "X", "cat": CATEGORY, "name": "execute_engine", "ts": begin, "dur": 100.0, "pid": 7,
                "tid": 1000, "args": args}]
        t = begin
        for name, dur in (("workspace", 10.0), ("inputs", 10.0), ("outputs", 10.0), ("enqueue", 70.0)):
            out.append({"ph": "X", "cat": CATEGORY, "name": name, "ts": t, "dur": dur, "pid": 7, "tid": 1000,
                        "args": args})
            t += dur
        out.append({"ph": "X", "cat": CATEGORY, "name": "gpu", "ts": begin + 10, "dur": gpu, "pid": 7, "tid": 1500,
                    "args": dict(args, stream=7)})
        t = begin + 30
        for name, dur in (layers or {}).items():
            out.append({"ph": "X", "cat": LAYER_CATEGORY, "name": name, "ts": t, "dur": dur, "pid": 7, "tid": 1950,
                        "args": dict(args, layer=name)})
            t += dur
        return out

    events = [{"ph": "M", "name": "process_name", "pid": 7, "args": {"name": "serve.py"}}]
    events += call(1, 45.0) + call(2, 50.0, {"a": 30.0, "b": 12.0}) + call(3, 52.0, {"a": 31.0, "b": 12.0})
    events += call(4, 47.0) + call(5, 46.0)
    (t,) = layer_tables(LayerCalls.from_events(events))
    assert (t.process, t.profiled_calls, [(r.layer, r.total_ns, r.p50_ns) for r in t.rows]) == (
        "serve.py", 2, [("a", 61_000, 30_000), ("b", 24_000, 12_000)])
    assert (t.sum_p50_ns, t.gpu_p50_ns, t.unprofiled_gpu_p50_ns, t.enqueue_p50_ns) == (42_000, 50_000, 46_000, 70_000)
    assert np.isclose(t.layers_vs_gpu, 0.84)


FORK = """
import os, sys, torch
from trt_trace import standin
def run(name, n):
    e = standin.make_engine(name, layers=(("a", 5), ("b", 5)))
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], e)
    return e
parent = run("parent_engine", PARENT_CALLS)  # 2 calls leave its window open (N=3)
pid = os.fork()
if pid == 0:
    run("child_engine", 4)  # first call, then 3 profiled
    for _ in range(3):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], parent)
    os._exit(0)
os.waitpid(pid, 0)
print(pid)
"""


@pytest.mark.parametrize("parent_calls", [4, 2])
def test_a_forked_child_with_trt_trace_layers(tmp_path, parent_calls):
    """A child with a session of its own (`{pid}`) profiles its engines with windows of its own: also an
    engine its parent had in an open window at the fork (the child's session arms the switch afresh);
    the parent's trace keeps its own profiled calls, and no folder is left behind."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = run_python(f"PARENT_CALLS = {parent_calls}\n" + FORK, {
        "TRT_TRACE_OUT": str(tmp_path / "t_{pid}.json"), "TRT_TRACE_LAYERS": "3", "TMPDIR": str(tmp),
        "TRT_TRACE_QUIET": "1"}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    child_pid = done.stdout.split()[-1]
    child = by_engine(layers_json(str(tmp_path / f"t_{child_pid}.json")))
    assert (child["child_engine"]["profiled_calls"], [r["calls"] for r in child["child_engine"]["layers"]]) == (
        3, [3, 3])
    assert (child["parent_engine"]["profiled_calls"], child["parent_engine"]["partial_calls"]) == (2, 0)
    (parent_trace,) = [p for p in tmp_path.glob("t_*.json") if p.name != f"t_{child_pid}.json"]
    parent = by_engine(layers_json(str(parent_trace)))
    assert set(parent) == {"parent_engine"} and parent["parent_engine"]["profiled_calls"] == parent_calls - 1
    assert list(tmp.iterdir()) == []


def test_overlapping_profiled_calls_get_a_second_layers_lane_named_alike_in_both_formats(names, tmp_path):
    """Two profiled calls of one engine that overlap (two threads past the engine's window) put their layers on
    two lanes of its layers track: "gpu_engine layers" and "gpu_engine layers (2)". The Perfetto reader names each
    lane and gives it the thread id the JSON writer does, and each layer slice lands on its call's lane."""
    rows: list[tuple] = []
    for call_id, begin in ((2, 10**9), (3, 10**9 + 5_000)):
        rows += call_rows(call_id, 1, begin, PHASES, device=0, gpu_ns=500_000)
        rows += layer_rows(call_id, 1, begin, {"conv": 300_000, "fc": 100_000}, 0)
    rows.sort(key=lambda r: r[0])
    end = {"layers": REPORT}
    tracks, slices = {}, {}
    for suffix in (".json", ".pftrace"):
        events = load_events(str(write_trace(tmp_path / f"lanes{suffix}", rows, ENGINES, end=end)))
        layer_tids = {e["tid"] for e in events if e.get("cat") == LAYER_CATEGORY}
        tracks[suffix] = sorted((e["tid"], e["args"]["name"]) for e in events
                                if e.get("ph") == "M" and e.get("name") == "thread_name" and e["tid"] in layer_tids)
        slices[suffix] = sorted((e["args"]["call_id"], e["name"], e["tid"]) for e in events
                                if e.get("cat") == LAYER_CATEGORY)
    assert [name for _, name in tracks[".json"]] == ["gpu_engine layers", "gpu_engine layers (2)"]
    assert tracks[".pftrace"] == tracks[".json"]
    assert slices[".pftrace"] == slices[".json"]
    assert len({tid for call_id, _, tid in slices[".json"] if call_id == 2} |
               {tid for call_id, _, tid in slices[".json"] if call_id == 3}) == 2


def test_a_layers_track_name_no_writer_makes_reads_as_the_first_lane():
    """Lane numbers come from the track's name ("layers", "layers (2)", ...): a name no writer makes ("(0)",
    "(1)", "(x)") reads as the first lane, never a negative one; another track's name is no layers lane."""
    from trt_trace.io.readers.layer_slices import layers_lane

    assert [layers_lane(n) for n in ("layers", "layers (2)", "layers (7)")] == [0, 1, 6]
    assert [layers_lane(n) for n in ("layers (0)", "layers (1)", "layers (x)", "layers ()")] == [0, 0, 0, 0]
    assert layers_lane("host") is None and layers_lane("GPU (2)") is None
