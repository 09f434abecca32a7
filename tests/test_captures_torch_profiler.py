"""torch.profiler captures read back (trt_trace.captures.torch_profiler): real CPU-only profiler traces of
stand-in engine calls, eager, in an AOTInductor package, from two threads, with an engine that throws,
gzipped and cut, against trt_trace's own trace of the same calls. (Kernels need CUDA activity: the
device check tools/device/profiler_kernels_check.py proves them on a GPU.)"""

from __future__ import annotations

import gzip
import json
import shutil
import threading
from pathlib import Path

import numpy as np
import orjson
import pytest
import torch
from captures_helpers import CLOCK_TOLERANCE_NS, assert_matches, trace_calls
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trt_trace
from trt_trace import standin
from trt_trace.captures import CaptureError, report, torch_profiler
from trt_trace.captures.chrome_stream import ChromeStream
from trt_trace.standin import model

CPU = [torch.profiler.ProfilerActivity.CPU]
PHASES = ("workspace", "inputs", "outputs", "enqueue")


def profiled(tmp_path: Path, fn, name: str = "prof.json", all_threads: bool = False) -> tuple[Path, Path]:  # noqa: ANN001
    """fn() run under trt_trace and torch.profiler together: (trt_trace's trace, the profiler's).
    all_threads: the profiler records every thread (by default only the one that started it)."""
    trace, prof_path = tmp_path / "trace.json", tmp_path / name
    config = torch._C._profiler._ExperimentalConfig(profile_all_threads=True) if all_threads else None
    with trt_trace.tracing(str(trace)):
        with torch.profiler.profile(activities=CPU, experimental_config=config) as prof:
            fn()
    prof.export_chrome_trace(str(prof_path))
    return trace, prof_path


def engines() -> list:
    return [standin.make_engine("_run_on_acc_0_engine", host_us=40, num_outputs=2),
            standin.make_engine("_run_on_acc_1_engine", host_us=15),
            standin.make_engine("_run_on_acc_2_engine")]


def calls_of(es: list, n: int):  # noqa: ANN201
    def run() -> None:
        for _ in range(n):
            for e in es:
                torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], e)
    return run


def same_rows(a, b) -> None:  # noqa: ANN001
    for col in ("engine", "pid", "tid", "call_id", "begin_ns", "end_ns", "phase_ns", "kernels", "launches"):
        np.testing.assert_array_equal(getattr(a, col), getattr(b, col), err_msg=col)
    assert a.engines == b.engines


def test_eager_calls_match_trt_trace_and_the_table_adds_up(tmp_path):
    es = engines()
    trace, prof = profiled(tmp_path, calls_of(es, 20))
    calls = torch_profiler.read(str(prof))
    ours = trace_calls(str(trace))
    fit = assert_matches(calls, ours)
    assert calls.source == "torch.profiler" and not calls.has_device_activity and calls.notes == []
    assert (calls.call_id == -1).all() and (calls.kernels == 0).all() and (calls.kernel_ns == 0).all()
    assert sorted(calls.engines) == ["_run_on_acc_0_engine", "_run_on_acc_1_engine", "_run_on_acc_2_engine"]
    # Phase boundaries, on the trace's clock through the fitted offset: a phase's profiler scope opens
    # after trt_trace has read the phase's start (the scope switch follows the clock read) and before
    # trt_trace reads the next phase's. For enqueue its last scope: with several outputs a short enqueue
    # scope opens between two output allocations (docs/profilers.md), time trt_trace counts as outputs.
    raw = [e for e in orjson.loads(prof.read_bytes())["traceEvents"] if str(e.get("name", "")).startswith("trt::")]
    base = orjson.loads(prof.read_bytes())["baseTimeNanoseconds"]
    from trt_trace.captures import align

    i, j = align.pair_calls(calls, ours.engine, ours.tid, ours.begin_ns)
    checked = 0
    for ci, tj in zip(i.tolist(), j.tolist(), strict=True):
        lo, hi = calls.begin_ns[ci], calls.end_ns[ci]
        firsts: dict[str, int] = {}
        for e in raw:
            b = base + round(e["ts"] * 1000)
            phase = e["name"].rsplit("/", 1)[1]
            if phase in PHASES and lo <= b < hi and e["tid"] == calls.tid[ci]:
                pick = max if phase == "enqueue" else min
                firsts[phase] = pick(firsts.get(phase, b), b)
        bounds = ours.boundaries[int(ours.call_id[tj])]
        seq = [p for p in PHASES if p in bounds]
        for k, p in enumerate(seq[1:], start=1):  # workspace opens before the call's clock read: skipped
            # The profiler's phase scope switches just before the op that starts the phase begins its own
            # profiler event (csrc/hook/profiler_scopes.cpp), trt_trace reads the phase's start inside that
            # op: so the scope opens after the previous phase began and before the next one does.
            nxt = bounds[seq[k + 1]] if k + 1 < len(seq) else ours.end_ns[tj]
            at = firsts[p] + fit.offset_ns
            assert bounds[seq[k - 1]] - CLOCK_TOLERANCE_NS <= at <= nxt + CLOCK_TOLERANCE_NS, \
                (p, at - bounds[p], nxt - at)
            checked += 1
    assert checked == 3 * len(calls)  # every stand-in call has all four phases
    rows = {r.engine: r for r in report.engine_rows(calls)}
    assert {n: r.calls for n, r in rows.items()} == dict.fromkeys(calls.engines, 20)
    for r in rows.values():
        m = calls.engine_names() == r.engine
        assert r.total_ns == int(calls.total_ns[m].sum()) and r.phase_ns == tuple(calls.phase_ns[m].sum(axis=0))
    text = report.format_engine_table(calls)
    assert "no CUDA activity recorded, so no kernel time" in text and "gpu kernels ms" not in text
    assert [ln.split()[:2] for ln in text.splitlines()[1:4]] == [[r.engine, "20"] for r in report.engine_rows(calls)]


def test_aoti_package_every_engine_call_found(demo_package, tmp_path):
    path, specs = demo_package
    runner = model.load_package(path)
    x = torch.randn(8, 64)
    runner(x)

    def run() -> None:
        for _ in range(5):
            runner(x)
    trace, prof = profiled(tmp_path, run)
    calls = torch_profiler.read(str(prof))
    assert sorted(calls.engines) == sorted(s.name for s in specs)
    assert [r.calls for r in report.engine_rows(calls)] == [5] * len(specs)
    assert_matches(calls, trace_calls(str(trace)))


def test_two_threads_keep_their_own_calls(tmp_path):
    es = engines()
    barrier = threading.Barrier(2)

    def worker(engine) -> None:  # noqa: ANN001
        barrier.wait()
        for _ in range(15):
            torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], engine)
            torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], es[2])

    def run() -> None:
        ts = [threading.Thread(target=worker, args=(e,)) for e in es[:2]]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    trace, prof = profiled(tmp_path, run, all_threads=True)
    calls = torch_profiler.read(str(prof))
    ours = trace_calls(str(trace))
    assert len(set(calls.tid.tolist())) == 2 and len(calls) == 60
    assert_matches(calls, ours)


def test_an_engine_that_throws_keeps_every_call_and_trace_flags_the_errors(tmp_path):
    faulty = standin.make_engine("_run_on_acc_faulty_engine", fail_every=3, host_us=10)
    raised = []

    def run() -> None:
        for _ in range(9):
            try:
                torch.ops.tensorrt.execute_engine([torch.randn(4, 4)], faulty)
            except RuntimeError as e:
                raised.append(str(e))
    trace, prof = profiled(tmp_path, run)
    calls = torch_profiler.read(str(prof))
    ours = trace_calls(str(trace))
    assert len(raised) == 3 and int(ours.error.sum()) == 3 and len(calls) == 9
    assert_matches(calls, ours)


def test_gzipped_export_reads_the_same_rows(tmp_path):
    trace, prof = profiled(tmp_path, calls_of(engines(), 10), name="prof.json.gz")
    assert prof.read_bytes()[:2] == b"\x1f\x8b"  # torch.profiler gzips a .gz path itself
    plain = tmp_path / "plain.json"
    with gzip.open(prof) as f, open(plain, "wb") as g:
        shutil.copyfileobj(f, g)
    a, b = torch_profiler.read(str(prof)), torch_profiler.read(str(plain))
    same_rows(a, b)
    assert_matches(a, trace_calls(str(trace)))
    assert torch_profiler.sniff(prof.read_bytes()[:65536]) and torch_profiler.sniff(plain.read_bytes()[:65536])
    assert not torch_profiler.sniff(trace.read_bytes()[:65536])  # trt_trace's own JSON is not a capture


@pytest.fixture(scope="module")
def a_capture(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("capture")
    _, prof = profiled(tmp, calls_of(engines(), 8))
    return prof


def test_chunked_reading_gives_the_same_rows_as_one_chunk(a_capture):
    whole = torch_profiler.read(str(a_capture), chunk_bytes=1 << 30)
    for chunk in (1024, 3001, 65536):
        s = ChromeStream(str(a_capture), chunk)
        n = sum(len(batch) for batch in s)
        assert n == s.events_read == len(orjson.loads(a_capture.read_bytes())["traceEvents"]) and not s.cut
        same_rows(torch_profiler.read(str(a_capture), chunk_bytes=chunk), whole)
    assert whole.metadata["baseTimeNanoseconds"] > 0 and "traceName" in whole.metadata


def test_a_file_cut_anywhere_gives_whole_calls_before_the_cut_or_one_error(a_capture, tmp_path):
    data = a_capture.read_bytes()
    whole = torch_profiler.read(str(a_capture))
    known = set(zip(whole.begin_ns.tolist(), whole.end_ns.tolist(), whole.engine_names().tolist(), strict=True))
    cut = tmp_path / "cut.json"
    events_at = data.index(b'"traceEvents"')
    events_end = data.rindex(b"]", 0, data.index(b'"traceName"'))  # Kineto writes traceName after the events
    lengths = sorted({*range(0, len(data), max(1, len(data) // 97)), events_at, events_at + 20, len(data) - 1})
    seen_cut = 0
    for n in lengths:
        cut.write_bytes(data[:n])
        try:
            calls = torch_profiler.read(str(cut), chunk_bytes=4096)
        except CaptureError as e:
            assert "\n" not in str(e) and str(cut) in str(e)
            assert n <= events_at + 40  # only before the events start is the file unreadable
            continue
        got = set(zip(calls.begin_ns.tolist(), calls.end_ns.tolist(), calls.engine_names().tolist(), strict=True))
        assert got <= known
        if n <= events_end:
            assert calls.notes and calls.notes[0].startswith("the file ends inside its events"), (n, calls.notes)
            seen_cut += 1
    assert seen_cut > 80


def test_gzip_cut_short_reads_up_to_the_cut(a_capture, tmp_path):
    gz = tmp_path / "prof.json.gz"
    gz.write_bytes(gzip.compress(a_capture.read_bytes()))
    data = gz.read_bytes()
    (tmp_path / "half.json.gz").write_bytes(data[: len(data) // 2])
    calls = torch_profiler.read(str(tmp_path / "half.json.gz"))
    assert 0 < len(calls) < len(torch_profiler.read(str(gz))) and calls.notes[0].startswith("the file ends")


def test_files_that_are_not_captures_get_one_line(tmp_path):
    cases = {"empty.json": b"", "text.json": b"hello", "number.json": b"42", "obj.json": b'{"a": 1}',
             "events_not_list.json": b'{"traceEvents": 3}',
             "broken.json": b'{"traceEvents": [{"ph": "X", "name": "trt::e/enqueue",, }]}',
             "bad.json.gz": b"\x1f\x8b\x08\x00garbage"}
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(CaptureError) as info:
            torch_profiler.read(str(tmp_path / name))
        assert "\n" not in str(info.value) and name in str(info.value), (name, info.value)
    with pytest.raises(CaptureError, match="cannot read"):
        torch_profiler.read(str(tmp_path / "missing.json"))
    (tmp_path / "none.json").write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", '
                                         b'"pid": 1, "tid": 1, "ts": 1.0, "dur": 2.0}]}')
    calls = torch_profiler.read(str(tmp_path / "none.json"))
    assert len(calls) == 0 and calls.notes[-1].startswith("no trt:: engine scopes")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=12)
_events = st.fixed_dictionaries({}, optional={
    "ph": st.sampled_from(["X", "M", "s", "f", "i", 1, None]),
    "cat": st.sampled_from(["user_annotation", "cpu_op", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy",
                            "gpu_memset", "gpu_user_annotation", 3]),
    "name": st.sampled_from(["trt::e/execute_engine", "trt::e/enqueue", "trt::/workspace", "trt::e/other",
                             "cudaLaunchKernel", "k", 5]) | st.text(max_size=10),
    "pid": st.integers(-3, 3) | st.sampled_from(["Spans", "Traces"]), "tid": st.integers(-3, 3) | st.text(max_size=3),
    "ts": st.floats(-1e6, 1e16) | st.integers(-10, 10**16) | st.text(max_size=3),
    "dur": st.floats(-10, 1e6) | st.integers(-10, 10**6) | st.none(),
    "args": st.fixed_dictionaries({}, optional={
        "correlation": st.integers(-5, 5) | st.text(max_size=2), "device": st.integers(0, 2),
        "stream": st.integers(0, 9)}) | _json_values,
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_events | _json_values, max_size=30), st.sampled_from([64, 1024, 1 << 20]))
def test_random_events_give_rows_or_one_error(tmp_path, events, chunk):
    path = tmp_path / "random.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))  # json: ints past 64 bits too
    try:
        calls = torch_profiler.read(str(path), chunk_bytes=chunk)
    except CaptureError as e:
        assert "\n" not in str(e)
        return
    assert len(calls.begin_ns) == len(calls.phase_ns) == len(calls.kernel_ns)
    assert (calls.kernel_ns >= 0).all() and (calls.kernels >= 0).all()
    report.format_engine_table(calls)
    report.format_top_kernels(calls)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_corrupted_real_capture_gives_rows_or_one_error(a_capture, tmp_path, data):
    raw = bytearray(a_capture.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.sampled_from(b'{}[]",:\\ 0a\x00\xff'))
    if data.draw(st.booleans()):
        raw = raw[: data.draw(st.integers(0, len(raw)))]
    path = tmp_path / ("c.json.gz" if data.draw(st.booleans()) else "c.json")
    path.write_bytes(gzip.compress(bytes(raw)) if path.suffix == ".gz" else bytes(raw))
    try:
        calls = torch_profiler.read(str(path), chunk_bytes=data.draw(st.sampled_from([512, 1 << 20])))
    except CaptureError as e:
        assert "\n" not in str(e)
        return
    report.format_engine_table(calls)
