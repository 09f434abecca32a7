"""Nsight Systems captures read back (trt_trace.captures.nsys_sqlite), from the real nsys: a stand-in run
with TRT_TRACE_NVTX=1 profiled by `nsys profile --trace=nvtx` on this CPU machine and exported with
`nsys export --type sqlite`, against trt_trace's own trace of the same run, joined by the call id
that every NVTX range carries. nsys comes from tools/install_nsys.sh (setup_env.sh runs it);
without it these tests fail, never skip. CUDA tracing needs a GPU: tools/device/nsys_probe.sh."""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson
import pytest
from captures_helpers import assert_matches, trace_calls
from conftest import demo_package_now
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trt_trace.captures import CaptureError, nsys_sqlite, report, torch_profiler

CHILD = r"""
import sys, threading, torch, trt_trace
from trt_trace import standin
from trt_trace.standin import model
standin.load()
es = [standin.make_engine("_run_on_acc_eager_a_engine", host_us=40, num_outputs=2),
      standin.make_engine("_run_on_acc_eager_b_engine", host_us=15), standin.make_engine("_run_on_acc_eager_c_engine")]
faulty = standin.make_engine("_run_on_acc_faulty_engine", fail_every=3)
for _ in range(10):
    for e in es:
        torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], e)
for _ in range(6):
    try:
        torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], faulty)
    except RuntimeError:
        pass
barrier = threading.Barrier(2)
def worker(e):
    barrier.wait()
    for _ in range(8):
        torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], e)
ts = [threading.Thread(target=worker, args=(e,)) for e in es[:2]]
[t.start() for t in ts]
[t.join() for t in ts]
runner = model.load_package(sys.argv[1])
for _ in range(3):
    runner(torch.randn(8, 64))
"""
HOST_US = {"_run_on_acc_eager_a_engine": 40, "_run_on_acc_eager_b_engine": 15}


def nsys_path() -> str:
    """The nsys the tests use: TRT_TRACE_NSYS, tools/install_nsys.sh's, or one on the PATH."""
    cache = Path(os.environ.get("TRT_TRACE_CACHE_DIR", Path.home() / ".cache" / "trt_trace"))
    for candidate in (os.environ.get("TRT_TRACE_NSYS"), str(cache / "nsight-systems" / "target-linux-x64" / "nsys"),
                      shutil.which("nsys")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no nsys: run tools/install_nsys.sh (tools/setup_env.sh does) or set TRT_TRACE_NSYS", pytrace=False)


def nsys_run(tmp: Path, env_extra: dict[str, str], args: list[str]) -> Path:
    """The child profiled by the real nsys (NVTX and OS runtime only: no GPU here), exported to SQLite."""
    nsys = nsys_path()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    env.update(env_extra)
    script = tmp / "child.py"
    script.write_text(CHILD)
    rep = tmp / "run"
    p = subprocess.run([nsys, "profile", "--trace=nvtx", "--sample=none", "--cpuctxsw=none", "--force-overwrite=true",
                        "-o", str(rep), sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                       timeout=600, cwd=tempfile.gettempdir())
    assert p.returncode == 0 and (tmp / "run.nsys-rep").exists(), (p.stdout[-2000:], p.stderr[-2000:])
    out = tmp / "run.sqlite"
    p = subprocess.run([nsys, "export", "--type", "sqlite", "--force-overwrite=true", "-o", str(out),
                        str(tmp / "run.nsys-rep")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0 and out.exists(), (p.stdout[-2000:], p.stderr[-2000:])
    return out


@pytest.fixture(scope="module")
def nsys_capture(tmp_path_factory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("nsys")
    package, _ = demo_package_now()
    trace = tmp / "trace.json"
    db = nsys_run(tmp, {"TRT_TRACE_OUT": str(trace), "TRT_TRACE_NVTX": "1"}, [package])
    return db, trace


def test_every_call_of_the_run_joined_by_its_call_id(nsys_capture):
    db, trace = nsys_capture
    calls = nsys_sqlite.read(str(db))
    ours = trace_calls(str(trace))
    assert calls.source == "nsys" and calls.notes == [] and not calls.has_device_activity
    assert calls.metadata["export_product_version"] and calls.metadata["session_start_utc_ns"] > 0
    # 30 eager calls, 6 of the faulty engine (2 raised, both traced), 16 from two threads, 3 x 6 package calls
    assert len(calls) == len(ours) == 30 + 6 + 16 + 18 and int(ours.error.sum()) == 2
    assert sorted(calls.call_id.tolist()) == sorted(ours.call_id.tolist())  # the NVTX payload is trt_trace's call id
    fit = assert_matches(calls, ours, by_call_id=True)
    assert fit.matched == len(ours)
    by_id = dict(zip(ours.call_id.tolist(), ours.engine.tolist(), strict=True))
    assert [by_id[c] for c in calls.call_id.tolist()] == calls.engine_names().tolist()
    assert len({int(t) for t, e in zip(calls.tid, calls.engine_names(), strict=True) if e in HOST_US}) == 3
    # The stand-in spins host_us inside its enqueue: the enqueue ranges hold it.
    for name, us in HOST_US.items():
        m = calls.engine_names() == name
        assert (calls.phase_ns[m, 3] >= us * 1000).all()
    text = report.format_engine_table(calls)
    assert "no CUDA activity recorded" in text and text.count("_run_on_acc_") >= 3 + 6


def test_a_run_without_nvtx_ranges_says_so(tmp_path):
    db = nsys_run(tmp_path, {}, [demo_package_now()[0]])
    with pytest.raises(CaptureError, match="no NVTX ranges in the capture") as info:
        nsys_sqlite.read(str(db))
    assert "\n" not in str(info.value) and "TRT_TRACE_NVTX=1" in str(info.value)


def test_other_domains_and_files_that_are_not_exports(nsys_capture, tmp_path):
    db, trace = nsys_capture
    other = nsys_sqlite.read(str(db), domain="not_ours")
    assert len(other) == 0 and other.notes == ["no NVTX domain 'not_ours': the run had no TRT_TRACE_NVTX=1 "
                                               "(or nsys ran without --trace=nvtx)"]
    assert nsys_sqlite.sniff(db.read_bytes()[:64]) and not torch_profiler.sniff(db.read_bytes()[:65536])
    assert not nsys_sqlite.sniff(trace.read_bytes()[:64])
    plain = tmp_path / "plain.sqlite"
    with sqlite3.connect(plain) as con:
        con.execute("CREATE TABLE t (a)")
    for path, words in ((trace, "not an SQLite file"), (plain, "not an nsys export"),
                        (tmp_path / "missing.sqlite", "cannot read")):
        with pytest.raises(CaptureError, match=words) as info:
            nsys_sqlite.read(str(path))
        assert "\n" not in str(info.value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_a_cut_or_corrupted_export_gives_rows_or_one_error(nsys_capture, tmp_path, data):
    db, _ = nsys_capture
    raw = bytearray(db.read_bytes())
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    for _ in range(data.draw(st.integers(0, 12))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    path = tmp_path / "bad.sqlite"
    path.write_bytes(bytes(raw))
    try:
        calls = nsys_sqlite.read(str(path))
    except CaptureError as e:
        assert "\n" not in str(e)
        return
    assert len(calls.begin_ns) == len(calls.call_id) and (calls.end_ns >= calls.begin_ns).all() or len(calls) == 0
    report.format_engine_table(calls)


def test_a_call_still_running_at_exit_is_left_out_and_said(tmp_path):
    """A process that exits while a thread is inside an engine call: nsys closes the call's open ranges at
    the exit (call and phase at the same ns). That call never finished (trt_trace's own file lacks it too),
    so the table holds exactly the finished calls and says what it left out."""
    code = r"""
import threading, time, torch, trt_trace
from trt_trace import standin
standin.load()
slow = standin.make_engine("_run_on_acc_slow_engine", host_us=30_000_000)
fast = standin.make_engine("_run_on_acc_fast_engine")
for _ in range(4):
    torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], fast)
started = threading.Event()
def slow_call():
    started.set()
    torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], slow)
threading.Thread(target=slow_call, daemon=True).start()
started.wait()
time.sleep(0.2)
"""
    nsys = nsys_path()
    script = tmp_path / "exits.py"
    script.write_text(code)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_TRACE_") or k == "TRT_TRACE_CACHE_DIR"}
    env.update({"TRT_TRACE_NVTX": "1", "TRT_TRACE_OUT": str(tmp_path / "t.json")})
    p = subprocess.run([nsys, "profile", "--trace=nvtx", "--sample=none", "--cpuctxsw=none", "-o",
                        str(tmp_path / "k"), sys.executable, str(script)], env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    subprocess.run([nsys, "export", "--type", "sqlite", "-o", str(tmp_path / "k.sqlite"), str(tmp_path / "k.nsys-rep")],
                   check=True, capture_output=True, timeout=600)
    with sqlite3.connect(tmp_path / "k.sqlite") as con:  # nsys did export the unfinished call, closed at the exit
        assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
                           "WHERE s.value = '_run_on_acc_slow_engine'").fetchone() == (1,)
    calls = nsys_sqlite.read(str(tmp_path / "k.sqlite"))
    assert calls.engine_names().tolist() == ["_run_on_acc_fast_engine"] * 4
    assert sorted(calls.call_id.tolist()) == sorted(trace_calls(str(tmp_path / "t.json")).call_id.tolist())
    assert calls.notes == ["1 call(s) still running when the process ended left out (nsys closed their ranges at "
                           "the exit)"]


# -- through trt_trace's own verbs (the readers registry): summary, diff, merge of run.sqlite ------------------

def cli_run(argv: list[str], capsys) -> tuple[int, str, str]:  # noqa: ANN001
    from trt_trace import cli

    code = cli.main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_summary_and_diff_of_the_export_have_the_traces_calls(nsys_capture, capsys):
    db, trace = nsys_capture
    code, out, err = cli_run(["summary", str(db), "--json"], capsys)
    assert code == 0 and "Traceback" not in err
    cap = {e["engine"]: e for e in orjson.loads(out)["engines"]}
    code, out, _ = cli_run(["summary", str(trace), "--json"], capsys)
    ours = {e["engine"]: e for e in orjson.loads(out)["engines"]}
    assert {k: v["calls"] for k, v in cap.items()} == {k: v["calls"] for k, v in ours.items()}
    assert orjson.loads(cli_run(["summary", str(db), "--json"], capsys)[1])["capture"] == \
        {"source": "nsys", "cuda_activity": False}
    code, out, err = cli_run(["diff", str(trace), str(db), "--json", "--threshold", "1e9"], capsys)
    assert code == 0 and {e["engine"] for e in orjson.loads(out)["engines"]} == set(ours), err


def test_merge_pairs_the_exports_ranges_with_the_traces_calls_by_call_id(nsys_capture, tmp_path, capsys):
    db, trace = nsys_capture
    merged = tmp_path / "all.json"
    code, out, err = cli_run(["merge", str(trace), str(db), "-o", str(merged)], capsys)
    assert code == 0, err
    events = orjson.loads(merged.read_bytes())
    ours = {e["args"]["call_id"]: e for e in events
            if e.get("cat") == "trt_trace" and e.get("name") == "execute_engine"}
    ranges = [e for e in events if e.get("cat") == "nsys"]
    assert len(ranges) == len(ours) == 30 + 6 + 16 + 18
    assert sorted(r["args"]["call_id"] for r in ranges) == sorted(ours)
    for r in ranges:  # on the trace's clock: each range holds its call (trt_trace's reads are inside it)
        call = ours[r["args"]["call_id"]]
        assert r["ts"] <= call["ts"] + 1.0 and r["ts"] + r["dur"] >= call["ts"] + call["dur"] - 1.0, (r, call)
        assert r["name"] == call["args"]["engine"]
    assert f"nsys capture {db}: {len(ours)} of {len(ours)} calls placed" in out


# -- a real capture with a gap: nsys 2023.4 (CUPTI 12.4) under the H200's CUDA 13 driver -------------------

H200_GAP = Path(__file__).parent / "data" / "h200_nsys_2023.4_capture_gap.sqlite.xz"


@pytest.fixture(scope="module")
def h200_gap_export(tmp_path_factory) -> Path:
    """tools/device/capture_checks.py's nsys run on the H200 (one thread's rounds of four fake-TensorRT engines,
    then two threads' on two streams): the export holds no CUDA record in the whole one-thread phase."""
    import lzma

    db = tmp_path_factory.mktemp("h200") / "run.sqlite"
    db.write_bytes(lzma.decompress(H200_GAP.read_bytes()))
    return db


def _plain_sql_facts(db: Path) -> tuple[dict[int, int], dict[int, list[int]]]:
    """Without the reader: per thread, how many trt_trace call ranges hold no CUDA API row at all; per kernel
    stream, the kernel durations (ns) in start order."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        # A call's range is named after its engine (its phases' ranges after the phase), payload = call id.
        calls = con.execute("SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
                            "WHERE n.eventType = 59 AND s.value LIKE '%_engine'").fetchall()
        gap: dict[int, int] = {}
        for start, end, gtid in calls:
            n = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid = ? AND start >= ? "
                            "AND start <= ?", (gtid, start, end)).fetchone()[0]
            if n == 0:
                gap[gtid & 0xFFFFFF] = gap.get(gtid & 0xFFFFFF, 0) + 1
        kernels: dict[int, list[int]] = {}
        rows = con.execute("SELECT streamId, start, end FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start")
        for stream, start, end in rows:
            kernels.setdefault(stream, []).append(end - start)
    finally:
        con.close()
    return gap, kernels


def test_a_capture_gap_is_said_and_left_out_of_the_kernel_columns(h200_gap_export, capsys):
    db = h200_gap_export
    gap, kernels = _plain_sql_facts(db)
    assert gap == {1059: 120}  # the main thread's 4 engines x 30 calls: no CUDA row in their time
    calls = nsys_sqlite.read(str(db))
    assert calls.has_device_activity and int(calls.no_cuda_activity().sum()) == 120
    assert set(calls.tid[calls.no_cuda_activity()].tolist()) == {1059}
    note = ("120 call(s) have no CUDA activity in the capture: the profiler recorded none in their time "
            "(left out of gpu kernels ms and kernels/call)")
    assert note in calls.notes
    code, out, err = cli_run(["summary", str(db), "--json"], capsys)
    assert code == 0 and err.count(note) == 1, err
    rows = {r["engine"]: r for r in orjson.loads(out)["engines"]}
    # Each engine's stream: its warm-up kernel (before tracing started), then the two threads' 60 calls'.
    sums = {}
    for durations in kernels.values():
        if len(durations) == 61:
            us = min((10, 40, 150, 400), key=lambda n: abs(n * 1000 - statistics.median(durations)))
            sums[f"_run_on_acc_nsys_{us}us_engine"] = sum(durations[1:])
    assert len(sums) == 4 and set(rows) == set(sums)
    for name, row in rows.items():
        assert (row["calls"], row["calls_without_cuda_activity"], row["kernels"], row["kernels_per_call"]) == \
            (90, 30, 60, 1.0), row
        assert row["gpu_kernels_ms"] == sums[name] / 1e6
    code, text, err = cli_run(["summary", str(db)], capsys)
    assert code == 0 and err.count(note) == 1
    assert all(line.split()[-1] == "1.00" for line in text.splitlines()[1:5])  # kernels/call of the recorded calls


# -- a real capture with stamped kernels: each call's kernel time against the kernel's own clock ---------

H200_STAMPED = Path(__file__).parent / "data" / "h200_nsys_2023.4_stamped.sqlite.xz"
H200_STAMPS = Path(__file__).parent / "data" / "h200_nsys_2023.4_stamped.stamps.json.xz"


def test_the_kernel_time_of_each_call_of_a_real_h200_capture_is_its_stamped_spin_plus_one_fixed_cost(tmp_path):
    """The device check's nsys run on the H200 (2026-12-02; four fake-TensorRT engines of 10, 40, 150 and 400 µs
    kernels, 30 calls each on the main thread, then 30 on each of two threads with streams of their own). Each
    kernel stamped %globaltimer as its spin began and ended (stamps.json, in launch order per engine). nsys lost
    the main thread's records (the capture gap above): its calls are left out. The two threads' calls' `gpu
    kernels` (the reader's per-call union of CUPTI's kernel records, joined by the NVTX call id) must be the
    stamped spin plus one fixed cost, the same for every size (the launch and exit around the spin), each
    within 1% + 0.5 µs: a reader off by one kernel, one call or a µs fails."""
    import lzma

    db = tmp_path / "run.sqlite"
    db.write_bytes(lzma.decompress(H200_STAMPED.read_bytes()))
    stamps = orjson.loads(lzma.decompress(H200_STAMPS.read_bytes()))
    calls = nsys_sqlite.read(str(db))
    names, gap = calls.engine_names(), calls.no_cuda_activity()
    assert int(gap.sum()) == 120 and len(calls) == 360
    extra: dict[int, list[tuple[int, int]]] = {}  # size -> (kernel - stamped spin, stamped spin) per recorded call
    for us in (10, 40, 150, 400):
        rows = [r for r in range(len(calls)) if names[r] == f"_run_on_acc_nsys_{us}us_engine"]
        rows.sort(key=lambda r: int(calls.begin_ns[r]))  # call order = launch order (the engine's lock)
        spins = [int(b) - int(a) for a, b in stamps[f"_run_on_acc_nsys_{us}us_engine"]]
        assert len(rows) == len(spins) == 90
        extra[us] = [(int(calls.kernel_ns[r]) - spin, spin) for r, spin in zip(rows, spins, strict=True) if not gap[r]]
        assert len(extra[us]) == 60 and all(calls.kernels[r] == 1 for r in rows if not gap[r])
    medians = {us: statistics.median(e for e, _ in v) for us, v in extra.items()}
    fixed = statistics.median(medians.values())
    assert 0 < fixed < 2000 and max(medians.values()) - min(medians.values()) < 100, medians
    for us, v in extra.items():
        assert all(abs(e - fixed) <= 0.01 * (spin + fixed) + 500 for e, spin in v), (us, sorted(e for e, _ in v))
