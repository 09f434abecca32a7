"""Captures through trt_trace's own verbs (the readers registry: trt_trace/io/formats.py,
trt_trace/captures/trace_readers.py): `summary`, `diff`, `merge`, `export` of real CPU-only
torch.profiler traces of the stand-in runtime, beside trt_trace's trace of the same calls; the kernel
columns on joined calls with known kernels; bad captures and any arguments: one line and an exit code.
(Kernels of real captures need a GPU: tools/device/capture_checks.py.)"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import orjson
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from perfetto_ui import loaded_content

import trt_trace
from trt_trace import cli, standin
from trt_trace.analysis.trace_summary import summary_parts
from trt_trace.captures import trace_readers
from trt_trace.captures.join import JoinInput, join
from trt_trace.captures.model import KERNEL, MEMCPY
from trt_trace.io.readers import Window, read_calls

CPU = [torch.profiler.ProfilerActivity.CPU]
ENGINES = ("_run_on_acc_0_engine", "_run_on_acc_1_engine")
CALLS = 30  # per engine


def record(directory: Path, trace_name: str = "trace.json", prof_name: str = "prof.json") -> tuple[Path, Path]:
    """CALLS calls of each stand-in engine under trt_trace and torch.profiler (CPU activity) together."""
    es = [standin.make_engine(ENGINES[0], host_us=30, num_outputs=2), standin.make_engine(ENGINES[1], host_us=10)]
    trace, prof = directory / trace_name, directory / prof_name
    with trt_trace.tracing(str(trace)):
        with torch.profiler.profile(activities=CPU) as p:
            for _ in range(CALLS):
                for e in es:
                    torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], e)
    p.export_chrome_trace(str(prof))
    return trace, prof


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("captures_cli")
    record(d)
    record(d, "trace_b.pftrace", "prof_b.json")
    with open(d / "prof.json", "rb") as src, gzip.open(d / "prof.json.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    return d


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:  # noqa: ANN001
    try:
        code = cli.main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code if isinstance(exc.code, int) else 2
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_errors(code: int, out: str, err: str) -> None:
    assert "Traceback" not in out + err
    assert all(line.startswith("trt-trace") for line in err.splitlines()), err
    if code != 0:
        assert err.strip(), "a non-zero exit says why"


def engines_json(doc: dict) -> dict[str, dict]:
    return {e["engine"]: e for e in doc["engines"]}


def test_a_cpu_only_capture_gives_the_host_table_of_the_same_calls(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)  # relative paths, as a user types them
    code, out, err = run_cli(["summary", "prof.json", "--json"], capsys)
    assert code == 0
    cap = orjson.loads(out)
    code, out, _ = run_cli(["summary", "trace.json", "--json"], capsys)
    ours = orjson.loads(out)
    assert cap["capture"] == {"source": "torch.profiler", "cuda_activity": False} and cap["ended"] == "closed"
    assert set(engines_json(cap)) == set(engines_json(ours)) == set(ENGINES)
    for name in ENGINES:
        c, t = engines_json(cap)[name], engines_json(ours)[name]
        assert c["calls"] == t["calls"] == CALLS
        # The profiler's scopes hold trt_trace's calls: its sums are at least trt_trace's, less 1 µs a call.
        assert c["total_ms"] >= t["total_ms"] - CALLS * 1e-3
        assert c["gpu_ms"] is None and "gpu_kernels_ms" not in c
    assert err.count("\n") == 0 or "no CUDA activity" in err
    code, text, err = run_cli(["summary", "prof.json"], capsys)
    head = text.splitlines()[0].split()
    assert code == 0 and head[:2] == ["engine", "calls"] and "kernels" not in text
    assert err.splitlines() == ["trt-trace summary: prof.json: no CUDA activity in this torch.profiler capture, so no "
                                "kernel time (record with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])"]
    code, gz, _ = run_cli(["summary", "prof.json.gz"], capsys)
    assert code == 0 and gz == text  # gzipped: the same table


def test_a_window_and_export_count_the_captures_calls(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    code, out, _ = run_cli(["summary", "prof.json", "--json", "--skip-first", "5"], capsys)
    assert code == 0 and {e["calls"] for e in orjson.loads(out)["engines"]} == {CALLS - 5}
    code, out, _ = run_cli(["export", "prof.json", "calls.parquet"], capsys)
    assert code == 0 and out == f"{2 * CALLS} calls into calls.parquet\n"
    import pyarrow.parquet as pq

    table = pq.read_table(run_dir / "calls.parquet")
    assert table.num_rows == 2 * CALLS


def test_diff_takes_a_capture_on_either_side(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    for base, new in (("trace.json", "prof.json"), ("prof.json", "prof_b.json"), ("prof_b.json", "trace_b.pftrace")):
        code, out, err = run_cli(["diff", base, new, "--json", "--threshold", "1e9"], capsys)
        assert code == 0, err
        doc = orjson.loads(out)
        assert {e["engine"] for e in doc["engines"]} == set(ENGINES), doc
        one_line_errors(code, out, err)


def trace_calls_by_id(path: Path) -> dict[int, tuple[int, int, str]]:
    """call id -> (begin ns, end ns, engine) of trt_trace's own calls in a file."""
    out: dict[int, tuple[int, int, str]] = {}

    def take(calls: np.ndarray, info) -> None:  # noqa: ANN001
        for c in calls:
            name = info.process(int(c["pid"])).engines[int(c["engine_id"])]
            out[int(c["call_id"])] = (int(c["begin_ns"]), int(c["begin_ns"] + c["ns"][0]), name)

    read_calls(str(path), take)
    return out


def capture_scopes(path: Path) -> list[dict]:
    return [e for e in orjson.loads(path.read_bytes()) if e.get("cat") == "torch.profiler"]


@pytest.mark.parametrize("trace_name,prof_name", [("trace.json", "prof.json"), ("trace_b.pftrace", "prof_b.json")])
def test_merge_puts_the_capture_on_the_traces_timeline(run_dir, capsys, monkeypatch, trace_name, prof_name):
    monkeypatch.chdir(run_dir)
    out_name = f"all_{prof_name}"
    code, out, err = run_cli(["merge", trace_name, prof_name, "-o", out_name], capsys)
    assert code == 0, err
    assert f"torch.profiler capture {prof_name}: {2 * CALLS} of {2 * CALLS} calls placed, 0 kernels/copies" in out
    merged = run_dir / out_name
    ours = trace_calls_by_id(merged)  # the merged file's own calls: the merge's clock
    scopes = capture_scopes(merged)
    assert len(scopes) == len(ours) == 2 * CALLS
    assert sorted(s["args"]["call_id"] for s in scopes) == sorted(ours)
    for s in scopes:  # aligned: each capture scope holds its trt_trace call, to 1 µs at each end
        begin, end, engine = ours[s["args"]["call_id"]]
        b, e = round(s["ts"] * 1000), round((s["ts"] + s["dur"]) * 1000)
        assert s["name"] == s["args"]["engine"] == engine
        assert b <= begin + 1000 and e >= end - 1000, (s, begin, end)
    meta = [e for e in orjson.loads(merged.read_bytes()) if e.get("name") == "trt_trace_metadata"][-1]["args"]
    (placed,) = meta["merged"]["captures"]
    assert placed["placed_calls"] == 2 * CALLS and placed["processes"][0]["paired"] == 2 * CALLS
    # The merged file still reads as trt_trace's trace: the capture's tracks are not calls of ours.
    code, out, _ = run_cli(["summary", out_name, "--json"], capsys)
    assert code == 0 and {e["calls"] for e in orjson.loads(out)["engines"]} == {CALLS}


def test_merge_with_a_window_places_only_the_calls_kept(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    code, out, err = run_cli(["merge", "trace.json", "prof.json", "-o", "window.json", "--skip-first", "10"], capsys)
    assert code == 0, err
    assert len(capture_scopes(run_dir / "window.json")) == 2 * (CALLS - 10)
    assert f"{2 * (CALLS - 10)} of {2 * CALLS} calls placed" in out


def test_the_merged_capture_opens_in_the_perfetto_ui(run_dir, capsys, monkeypatch, perfetto_ui):
    monkeypatch.chdir(run_dir)
    assert run_cli(["merge", "trace.json", "prof.json", "-o", "ui.json"], capsys)[0] == 0
    opened = perfetto_ui.open(str(run_dir / "ui.json"))
    try:
        assert opened.import_errors() == []
        rows = opened.query("select th.name track, count(*) n, "
                            "count(distinct extract_arg(s.arg_set_id, 'args.call_id')) ids from slice s "
                            "join thread_track t on s.track_id = t.id join thread th using (utid) "
                            "where th.name like 'torch.profiler scopes%' group by th.name")
        assert len(rows) == 1 and rows[0]["n"] == rows[0]["ids"] == 2 * CALLS, rows
        # Each capture scope lies around the execute_engine slice of its call id, on the UI's own clock.
        outside = opened.scalar(
            "select count(*) from slice c join slice e on extract_arg(c.arg_set_id, 'args.call_id') = "
            "extract_arg(e.arg_set_id, 'args.call_id') where c.category = 'torch.profiler' and "
            "e.name = 'execute_engine' and (c.ts > e.ts + 1000 or c.ts + c.dur < e.ts + e.dur - 1000)")
        assert outside == 0
        json_content = loaded_content(opened)
    finally:
        opened.close()
    # Written as a Perfetto trace: the same slices, args, flows and processes as the UI loads the JSON.
    code, out, err = run_cli(["merge", "trace.json", "prof.json", "-o", "ui.pftrace"], capsys)
    assert code == 0 and err == "" and "into ui.pftrace" in out, err
    opened = perfetto_ui.open(str(run_dir / "ui.pftrace"))
    try:
        assert opened.import_errors() == []
        assert loaded_content(opened) == json_content
    finally:
        opened.close()


def test_a_merge_written_as_pftrace_is_refused_by_the_verbs_in_one_line(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    assert run_cli(["merge", "trace.json", "prof.json", "-o", "view.pftrace"], capsys)[0] == 0
    line = ("view.pftrace: a merge written as a Perfetto trace, for the Perfetto UI; trt-trace reads the traces it "
            "merged, or the merge written as .json\n")
    for argv in (["summary", "view.pftrace"], ["summary", "view.pftrace", "--json"],
                 ["diff", "trace.json", "view.pftrace"], ["layers", "view.pftrace"],
                 ["export", "view.pftrace", "x.parquet"], ["merge", "view.pftrace", "-o", "m.json"],
                 ["slice", "view.pftrace", "-o", "w.json", "--skip-first", "1"]):
        code, out, err = run_cli(argv, capsys)
        # diff's exit 1 says "slower": a trace it cannot read is 2, as for any input it cannot use
        assert code == (2 if argv[0] == "diff" else 1) and err == f"trt-trace {argv[0]}: {line}", (argv, out, err)
        one_line_errors(code, out, err)


def test_merge_says_what_it_needs_in_one_line(run_dir, capsys, monkeypatch):
    monkeypatch.chdir(run_dir)
    code, out, err = run_cli(["merge", "prof.json", "-o", "x.json"], capsys)
    assert code == 1 and err == ("trt-trace merge: prof.json is a profiler's capture: give trt_trace's trace of the "
                                 "same run too (trt-trace merge trace.json prof.json -o all.json)\n")
    code, out, err = run_cli(["slice", "prof.json", "-o", "x.json", "--from", "0"], capsys)
    assert code == 1 and err.startswith("trt-trace slice: prof.json is a profiler's capture;")


# -- kernel columns, on joined calls with known kernels (the joiner's rules: test_captures_join.py) -----------

SCOPE = ("thread", "begin", "end", "engine", "phase", "call_id")
API = ("thread", "begin", "end", "corr", "launch")
DEV = ("corr", "kind", "name", "begin", "end", "device", "stream")
US = 1000


def cols(rows: list[tuple], names: tuple[str, ...]) -> dict[str, np.ndarray]:
    return {n: np.asarray([r[i] for r in rows], dtype=np.int64) for i, n in enumerate(names)}


class Joined(trace_readers.CaptureReader):
    """A capture reader over calls joined here (the readers registry's reader, without a file)."""

    format = "torch.profiler"

    def __init__(self) -> None:
        super().__init__("joined")
        # Engine a: 3 calls of 2 kernels each (one 100 µs, one 60 µs that overlaps it by 20 µs: union 140 µs)
        # and a memcpy; engine b: 2 calls of one 5 µs kernel.
        scopes, api, dev = [], [], []
        corr = 0
        for k in range(5):
            t0 = k * 1000 * US
            engine = 0 if k < 3 else 1
            scopes.append((0, t0, t0 + 500 * US, engine, 0, -1))
            scopes.append((0, t0 + 10 * US, t0 + 400 * US, engine, 4, -1))
            launches = [(KERNEL, 0, 0, 100), (KERNEL, 1, 80, 140), (MEMCPY, 2, 140, 150)] if engine == 0 else \
                [(KERNEL, 3, 0, 5)]
            for i, (kind, name, b, e) in enumerate(launches):
                corr += 1
                api.append((0, t0 + (20 + i) * US, t0 + (20 + i) * US + 500, corr, 1))
                dev.append((corr, kind, name, t0 + 600 * US + b * US, t0 + 600 * US + e * US, 0, 7))
        inp = JoinInput(cols(scopes, SCOPE), cols(api, API), cols(dev, DEV), np.asarray([10]), np.asarray([11]),
                        ["a", "b"], ["ka", "kb", "copy", "kc"], True)
        self._calls, _ = join(inp, "torch.profiler", "joined", "test")


def test_gpu_kernels_ms_is_the_union_of_each_calls_kernels_added_up():
    text, summary = summary_parts(Joined())  # type: ignore[arg-type]
    lines = text.splitlines()
    assert lines[0].endswith(" gpu kernels ms  kernels/call")
    a = next(line for line in lines if line.startswith("a "))
    b = next(line for line in lines if line.startswith("b "))
    every = next(line for line in lines if line.startswith("ALL "))
    assert a.split()[-2:] == ["0.420", "2.00"]  # 3 calls x 140 µs, 2 kernels a call
    assert b.split()[-2:] == ["0.010", "1.00"]
    assert every.split()[-2:] == ["0.430", "1.60"]  # 8 kernels over 5 calls
    doc = orjson.loads(summary_parts(Joined(), json=True)[0])  # type: ignore[arg-type]
    rows = engines_json(doc)
    assert rows["a"]["gpu_kernels_ms"] == 0.42 and rows["a"]["kernels"] == 6 and rows["a"]["copies"] == 3
    assert rows["a"]["copy_ms"] == 0.03 and rows["a"]["calls_with_kernels"] == 3 and rows["b"]["kernels"] == 2
    assert doc["all"]["gpu_kernels_ms"] == 0.43 and doc["all"]["kernels_per_call"] == 1.6


def test_the_window_holds_for_the_kernel_columns_and_the_top_kernels():
    from trt_trace.captures import report

    text, summary = summary_parts(Joined(), window=Window(skip_first=1))  # type: ignore[arg-type]
    a = next(line for line in text.splitlines() if line.startswith("a "))
    assert a.split()[1] == "2" and a.split()[-2:] == ["0.280", "2.00"]
    top = report.top_kernels(summary.capture, calls_kept=summary.capture_kept)
    assert [(k.engine, k.name, k.count, k.total_ns) for k in top] == [
        ("a", "ka", 2, 200 * US), ("a", "kb", 2, 120 * US), ("a", "copy", 2, 20 * US), ("b", "kc", 1, 5 * US)]


# -- bad input and any arguments: one line, an exit code -------------------------------------------------------

def test_captures_that_cannot_be_used_say_why_in_one_line(run_dir, tmp_path, capsys):
    plain = tmp_path / "plain.json"  # a profiler run without trt_trace's calls
    with torch.profiler.profile(activities=CPU) as p:
        torch.randn(3, 3) @ torch.randn(3, 3)
    p.export_chrome_trace(str(plain))
    code, out, err = run_cli(["summary", str(plain)], capsys)
    assert code == 1 and out == "" and err == (
        f"trt-trace summary: {plain} is a torch.profiler capture without trt_trace's engine calls (no trt:: scopes: "
        "was trt_trace imported while the profiler recorded?)\n")
    sqlite = tmp_path / "g.sqlite"
    sqlite.write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    code, out, err = run_cli(["summary", str(sqlite)], capsys)
    assert code == 1 and err.startswith(f"trt-trace summary: {sqlite}") and err.count("\n") == 1
    code, out, err = run_cli(["summary", str(run_dir / "trace.json"), "--kernels"], capsys)
    assert code == 1 and err.endswith("trace.json is trt_trace's own trace (CUDA-event spans, no kernels)\n")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_cut_or_corrupted_capture_gives_a_table_or_one_line(run_dir, tmp_path, capsys, data):
    raw = (run_dir / "prof.json").read_bytes()
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    for _ in range(data.draw(st.integers(0, 4))):
        at = data.draw(st.integers(0, max(0, len(raw) - 1)))
        raw = raw[:at] + data.draw(st.binary(min_size=0, max_size=8)) + raw[at + 1:]
    gz = data.draw(st.booleans())
    path = tmp_path / ("c.json.gz" if gz else "c.json")
    path.write_bytes(gzip.compress(raw) if gz else raw)
    verb = data.draw(st.sampled_from(["summary", "diff", "merge"]))
    argv = {"summary": ["summary", str(path)], "diff": ["diff", str(run_dir / "trace.json"), str(path)],
            "merge": ["merge", str(run_dir / "trace.json"), str(path), "-o", str(tmp_path / "m.json")]}[verb]
    code, out, err = run_cli(argv, capsys)
    assert code in (0, 1, 2)
    one_line_errors(code, out, err)


OPTIONS = st.sampled_from(["--kernels", "--json", "--by-rank", "--skip-first", "--from", "--to", "--phase",
                           "--threshold", "-o", "0", "-1", "3", "1e9", "nan", "inf", "gpu", "total", "x", "",
                           "prof.json", "prof.json.gz", "trace.json", "missing.json", "."])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(verb=st.sampled_from(["summary", "diff", "merge", "merge_pftrace"]), options=st.lists(OPTIONS, max_size=6))
def test_any_arguments_with_a_capture_give_an_answer_or_one_line(run_dir, capsys, monkeypatch, verb, options):
    monkeypatch.chdir(run_dir)
    argv = {"summary": ["summary", "prof.json"], "diff": ["diff", "trace.json", "prof.json"],
            "merge": ["merge", "trace.json", "prof.json", "-o", "any.json"],
            "merge_pftrace": ["merge", "trace.json", "prof.json", "-o", "any.pftrace"]}[verb] + options
    code, out, err = run_cli(argv, capsys)
    assert code in (0, 1, 2), (argv, code)
    one_line_errors(code, out, err)


def test_the_installed_script_reads_a_capture_without_importing_torch(run_dir):
    probe = (f"import sys; sys.argv = ['trt-trace', 'summary', {str(run_dir / 'prof.json')!r}]; "
             "import trt_trace_cli; code = trt_trace_cli.main(); "
             "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(code)")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=run_dir)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].split()[:2] == ["engine", "calls"]
