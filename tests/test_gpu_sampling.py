"""GPU-timing sampling (TRT_TRACE_GPU_EVERY=N): the setting's parsing, the op, the hook's per-thread
per-engine decision and count of sampled-out calls, and the table that scales the GPU column and
says so. In a CPU build the hook's decision runs on calls whose input claims a CUDA device
(conftest.ClaimsCuda); the spans themselves, and the scaled figures from them, need a GPU."""

from __future__ import annotations

import re
import threading

import orjson
import pytest
import torch
from conftest import ClaimsCuda, playing_runtime, run_python
from trace_checks import load_strict

import trt_trace
from trt_trace import standin
from trt_trace.analysis.trace_summary import aggregate, load_events, summary_text
from trt_trace.native import ops
from trt_trace.runtime import config
from trt_trace.runtime.session import TraceError
from trt_trace.schema.records import STATS_COLUMNS

COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="GPU spans need CUDA (run by tools/device/device_check.sh)")


@pytest.fixture
def every_back_to_one():
    yield
    ops.set_gpu_every(1)


@pytest.fixture
def runtime_213():
    with playing_runtime("2.13"):  # moves inputs to its engine's device (a CPU engine here)
        yield


def cuda_build() -> bool:
    return ops.set_gpu_timing(True)  # whether GPU timing is compiled in (every session turns it on anyway)


def stats_row(name: str) -> list[int]:
    names = ops.engine_names()
    return ops.engine_stats()[names.index(name)].tolist()


# -- the setting ----------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,expected", [("8", 8), (" 3 ", 3), ("1", 1), ("", 1), ("1048576", 1 << 20)])
def test_env_values_that_are_call_counts(monkeypatch, capsys, raw, expected):
    monkeypatch.setenv("TRT_TRACE_GPU_EVERY", raw)
    assert config.gpu_every() == expected and config.from_env().gpu_every == expected
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("raw,expected,words", [
    ("0", 1, "is not a call count >= 1"), ("-3", 1, "is not a call count >= 1"),
    ("abc", 1, "is not a call count >= 1"), ("8.0", 1, "is not a call count >= 1"),
    ("99999999999999999999", 1 << 20, "is over 1048576 calls; using 1048576"),
])
def test_env_nonsense_is_one_line_and_a_fallback(monkeypatch, capsys, raw, expected, words):
    monkeypatch.setenv("TRT_TRACE_GPU_EVERY", raw)
    assert config.gpu_every() == expected
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"trt_trace: TRT_TRACE_GPU_EVERY={raw!r} ") and words in err, err


def test_api_keyword_checks_its_value(tmp_path):
    for bad in (0, -3, "8", 2.5, True, (1 << 20) + 1):
        with pytest.raises(TraceError, match=r"^gpu_every must be a whole number of calls from 1 .* not "):
            trt_trace.start(str(tmp_path / "t.json"), gpu_every=bad)
        assert trt_trace.active() is None


def test_ops_round_trip_and_refuse_out_of_range(every_back_to_one):
    for n in (8, 1, 1 << 20, 3):
        torch.ops.trt_trace.set_gpu_every(n)
        assert torch.ops.trt_trace.get_gpu_every() == n == ops.get_gpu_every()
    for bad in (0, -3, (1 << 20) + 1):
        with pytest.raises(RuntimeError, match="n must be an integer from 1"):
            ops.set_gpu_every(bad)
        assert ops.get_gpu_every() == 3  # unchanged


def test_the_session_applies_it_and_says_so_in_its_metadata(tmp_path, every_back_to_one):
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out), gpu_every=8):
        assert ops.get_gpu_every() == 8
        torch.ops.tensorrt.execute_engine([torch.ones(4)], standin.make_engine("meta_every_engine"))
    metas = [e["args"] for e in load_strict(out) if e.get("name") == "trt_trace_metadata"]
    assert metas[0]["gpu_every"] == 8


def test_env_setting_reaches_the_trace_and_a_bad_one_does_not_stop_the_program(tmp_path):
    code = ("import torch, trt_trace\nfrom trt_trace import standin\ne = standin.make_engine('env_every')\n"
            "torch.ops.tensorrt.execute_engine([torch.ones(4)], e)\nprint('ran')\n")
    for raw, expected in (("8", 8), ("-3", 1)):
        out = tmp_path / f"t{expected}.json"
        proc = run_python(code, {"TRT_TRACE_OUT": str(out), "TRT_TRACE_GPU_EVERY": raw})
        assert proc.returncode == 0 and proc.stdout.strip() == "ran", proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if "TRT_TRACE_GPU_EVERY" in ln]
        assert len(lines) == (expected == 1) and "Traceback" not in proc.stderr, proc.stderr
        metas = [e["args"] for e in load_strict(out) if e.get("name") == "trt_trace_metadata"]
        assert metas[0]["gpu_every"] == expected


# -- TRT_TRACE_CALLER_WAIT_EVERY: which measured calls of an engine on its own stream get a caller wait --

@pytest.mark.parametrize(("raw", "expected", "words"), [
    (None, 8, None), ("", 8, None), ("1", 1, None), (" 16 ", 16, None),
    ("0", 8, "is not a call count >= 1; use e.g. 1 for a caller-stream wait on every measured call (using 8)"),
    ("x", 8, "is not a call count >= 1"), ("99999999999999999999", 1 << 20, "is over 1048576 calls"),
])
def test_caller_wait_every_from_the_environment(monkeypatch, capsys, raw, expected, words):
    if raw is None:
        monkeypatch.delenv("TRT_TRACE_CALLER_WAIT_EVERY", raising=False)
    else:
        monkeypatch.setenv("TRT_TRACE_CALLER_WAIT_EVERY", raw)
    assert config.caller_wait_every() == expected == config.from_env().caller_wait_every
    err = capsys.readouterr().err
    if words is None:
        assert err == ""
    else:  # one line per reading (two readings above), each naming the variable and the fallback
        assert err.count("\n") == 2 and err.startswith(f"trt_trace: TRT_TRACE_CALLER_WAIT_EVERY={raw!r} ") \
            and words in err, err


def test_caller_wait_every_reaches_the_hook_and_the_trace(tmp_path, monkeypatch):
    try:
        for bad in (0, -1, (1 << 20) + 1):
            with pytest.raises(RuntimeError, match="n must be an integer from 1"):
                ops.set_caller_wait_every(bad)
        assert ops.get_caller_wait_every() == 8  # the default, unchanged
        monkeypatch.setenv("TRT_TRACE_CALLER_WAIT_EVERY", "3")
        out = tmp_path / "t.json"
        with trt_trace.tracing(str(out)):
            assert ops.get_caller_wait_every() == torch.ops.trt_trace.get_caller_wait_every() == 3
            torch.ops.tensorrt.execute_engine([torch.ones(4)], standin.make_engine("meta_wait_engine"))
        metas = [e["args"] for e in load_strict(out) if e.get("name") == "trt_trace_metadata"]
        assert metas[0]["caller_wait_every"] == 3
    finally:
        ops.set_caller_wait_every(8)


def test_the_two_sides_agree_on_the_columns():
    assert ops.stats_columns() == list(STATS_COLUMNS)
    assert ops.engine_stats().shape[1] == len(STATS_COLUMNS)


# -- the hook's decision (CPU build: inputs that claim a CUDA device) -----------------------------

def _call_from_threads(engines, threads: int, calls: int) -> None:
    x = [ClaimsCuda(torch.ones(4))]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(calls):
                for e in engines:
                    torch.ops.tensorrt.execute_engine(x, e)
        except BaseException as exc:  # reported below: a thread's failure must fail the test
            errors.append(exc)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert not errors, errors


def test_each_thread_samples_each_engine_out_on_its_own(tmp_path, runtime_213, every_back_to_one):
    names = ("sampled_a", "sampled_b")
    engines = [standin.make_engine(n) for n in names]
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out), gpu_every=8):
        _call_from_threads(engines, threads=3, calls=16)
    events = load_strict(out)
    calls = [e for e in events if e.get("name") == "execute_engine" and e["args"]["engine"] in names]
    assert len(calls) == 96 and all(e["args"].get("device") == 0 for e in calls)  # taken for CUDA calls
    for name in names:
        row = stats_row(name)
        # Any 16 calls in a row of one thread and engine hold exactly 2 that are measured.
        assert row[COL["calls"]] == 48 and row[COL["gpu_sampled_out"]] == 3 * 14, row
        # The 2 x 3 calls measured: a CPU build records no events for them, a CUDA build does (on cuda:0).
        assert row[COL["gpu_calls"]] == (6 if cuda_build() else 0)


def test_every_call_is_measured_with_one_and_nothing_counted_without_gpu_timing(tmp_path, runtime_213,
                                                                              every_back_to_one):
    e = standin.make_engine("sampled_never")
    with trt_trace.tracing(str(tmp_path / "one.json")):
        _call_from_threads([e], threads=1, calls=16)
    assert stats_row("sampled_never")[COL["gpu_sampled_out"]] == 0
    with trt_trace.tracing(str(tmp_path / "off.json"), gpu=False, gpu_every=8):
        _call_from_threads([e], threads=1, calls=16)
    ops.set_gpu_every(8)  # counting only (no session recording): no GPU events to sample
    ops.set_recording(False)
    ops.set_profile_execution(True)
    _call_from_threads([e], threads=1, calls=16)
    ops.set_profile_execution(False)
    row = stats_row("sampled_never")
    assert row[COL["calls"]] == 48 and row[COL["gpu_sampled_out"]] == 0
    with trt_trace.tracing(str(tmp_path / "eight.json"), gpu_every=8):
        _call_from_threads([e], threads=1, calls=16)
    assert stats_row("sampled_never")[COL["gpu_sampled_out"]] == 14


# -- the table --------------------------------------------------------------------------------------

def _stats(rows: list[dict[str, int]]) -> torch.Tensor:
    out = torch.zeros((len(rows), len(STATS_COLUMNS)), dtype=torch.long)
    for i, r in enumerate(rows):
        for k, v in r.items():
            out[i, COL[k]] = v
    return out


# Two engines: `fast` measured on 2 of 16 CUDA calls (1 ms of spans), `slow` on all 4 (3 ms), with host time.
TABLE_ROWS = [
    {"calls": 16, "total_ns": 2_000_000, "workspace_ns": 2_000_000, "gpu_ns": 1_000_000, "gpu_calls": 2,
     "gpu_sampled_out": 14},
    {"calls": 4, "total_ns": 1_000_000, "workspace_ns": 1_000_000, "gpu_ns": 3_000_000, "gpu_calls": 4},
]


def _gpu_cells(text: str) -> dict[str, str]:
    return {ln.split()[0]: ln.split()[-1] for ln in text.splitlines() if ln.split() and ln.split()[0] in
            ("fast", "slow", "ALL")}


def test_the_table_scales_sampled_engines_and_says_so():
    text = ops.format_timing_table(["fast", "slow"], _stats(TABLE_ROWS), gpu_every=8)
    # fast: 1 ms over 2 spans, 16 CUDA calls: ~8 ms, now the larger engine (sorted by it); ALL adds the scaled rows.
    assert _gpu_cells(text) == {"fast": "~8.000", "slow": "3.000", "ALL": "~11.000"}
    lines = text.splitlines()
    assert lines[1].startswith("fast") and lines[2].startswith("slow")
    assert "gpu ms: sampled, 6 of 20 CUDA calls measured (1 in 8), scaled to all" in lines
    gpu_p = ops.format_timing_table(["fast", "slow"], _stats(TABLE_ROWS), gpu_every=8, percentiles_of="gpu")
    assert "gpu ms: sampled, 6 of 20 CUDA calls measured (1 in 8), scaled to all; gpu p50/p99 of the measured " \
           "calls" in gpu_p.splitlines()
    doc = orjson.loads(ops.format_timing_table(["fast", "slow"], _stats(TABLE_ROWS), gpu_every=8, json=True))
    fast = next(r for r in doc["engines"] if r["engine"] == "fast")
    assert doc["gpu_every"] == 8
    assert (fast["gpu_ms"], fast["gpu_measured_ms"], fast["gpu_calls"], fast["gpu_sampled_out"]) == (8.0, 1.0, 2, 14)
    assert (doc["all"]["gpu_ms"], doc["all"]["gpu_measured_ms"], doc["all"]["gpu_sampled_out"]) == (11.0, 4.0, 14)
    assert fast["share_pct"] == pytest.approx(100 * 8 / 11, abs=1e-3)


def test_without_sampled_out_calls_the_table_is_unmarked():
    rows = [dict(TABLE_ROWS[0], gpu_sampled_out=0), TABLE_ROWS[1]]
    text = ops.format_timing_table(["fast", "slow"], _stats(rows), gpu_every=8)
    assert _gpu_cells(text) == {"slow": "3.000", "fast": "1.000", "ALL": "4.000"}
    assert "~" not in text and "sampled" not in text
    doc = orjson.loads(ops.format_timing_table(["fast", "slow"], _stats(rows), json=True))
    assert doc["gpu_every"] == 1 and doc["all"]["gpu_ms"] == doc["all"]["gpu_measured_ms"] == 4.0


def test_the_live_table_of_a_cpu_build_has_no_gpu_column(tmp_path, runtime_213, every_back_to_one):
    if cuda_build():
        pytest.skip("a CUDA build measures spans: test_sampled_spans_on_a_gpu checks its table")
    with trt_trace.tracing(str(tmp_path / "t.json"), gpu_every=8):
        _call_from_threads([standin.make_engine("live_every")], threads=1, calls=16)
    assert stats_row("live_every")[COL["gpu_sampled_out"]] == 14
    text = trt_trace.summary()
    assert "live_every" in text and "gpu ms" not in text and "CUDA calls measured" not in text


def test_a_trace_file_counts_cuda_calls_without_a_span_as_sampled_out(tmp_path, runtime_213, every_back_to_one):
    # A real trace of calls taken for CUDA calls, its spans (a CUDA build has 2) taken out. The summary
    # counts nothing as sampled out where the metadata says no GPU timing; with it on, every call on
    # a CUDA device with no span that neither failed nor was captured, and it scales the spans there.
    out = tmp_path / "t.json"
    with trt_trace.tracing(str(out), gpu_every=8):
        _call_from_threads([standin.make_engine("sampled_file")], threads=1, calls=16)
    events = [ev for ev in load_events(str(out)) if ev.get("name") not in ("gpu", "launch")]
    (start,) = [ev["args"] for ev in events if ev.get("name") == "trt_trace_metadata" and "gpu_every" in ev["args"]]
    assert start["gpu_every"] == 8
    start["gpu_timing"] = False
    assert aggregate(events).stats[0][COL["gpu_sampled_out"]] == 0
    start["gpu_timing"] = True
    calls = [ev for ev in events if ev.get("name") == "execute_engine"]
    calls[1]["args"]["error"] = True
    calls[2]["args"]["captured"] = True
    events.append(dict(calls[0], name="gpu", dur=500.0))  # one span of 0.5 ms
    s = aggregate(events)
    row = s.stats[0]
    assert (row[COL["calls"]], row[COL["gpu_calls"]], row[COL["gpu_sampled_out"]]) == (16, 1, 13)
    fixed = tmp_path / "fixed.json"
    fixed.write_bytes(orjson.dumps(events))
    text = summary_text(str(fixed))
    assert re.search(r"^sampled_file\s.*\s~7\.000$", text, re.M), text  # 0.5 ms x (1 + 13)
    assert "gpu ms: sampled, 1 of 14 CUDA calls measured (1 in 8), scaled to all" in text.splitlines()


# -- on a GPU ---------------------------------------------------------------------------------------

@cuda_only
def test_sampled_spans_on_a_gpu(tmp_path, every_back_to_one):
    engines = [standin.make_engine(f"gpu_sampled_{k}", device=0, repeat=4) for k in range(2)]
    x = [torch.ones(1 << 16, device="cuda")]
    out = tmp_path / "t.json"
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(16):
                for e in engines:
                    torch.ops.tensorrt.execute_engine(x, e)
            torch.cuda.synchronize()
        except BaseException as exc:
            errors.append(exc)

    with trt_trace.tracing(str(out), gpu_every=8):
        ts = [threading.Thread(target=work) for _ in range(2)]
        [t.start() for t in ts]
        [t.join() for t in ts]
    assert not errors, errors
    events = load_strict(out)
    spans: dict[tuple[str, int], int] = {}
    for ev in events:
        if ev.get("name") == "gpu" and ev.get("ph") == "X":
            key = (ev["args"]["engine"], ev["args"]["thread"])
            spans[key] = spans.get(key, 0) + 1
    assert sorted(spans.values()) == [2, 2, 2, 2], spans  # 2 engines x 2 threads, 2 of 16 calls each
    live = orjson.loads(trt_trace.summary(json=True))
    for name in ("gpu_sampled_0", "gpu_sampled_1"):
        row = next(r for r in live["engines"] if r["engine"] == name)
        assert (row["calls"], row["gpu_calls"], row["gpu_sampled_out"]) == (32, 4, 28)
        assert row["gpu_ms"] == pytest.approx(row["gpu_measured_ms"] / 4 * 32, rel=1e-5, abs=1e-5)
    text = trt_trace.summary()
    assert "gpu ms: sampled, 8 of 64 CUDA calls measured (1 in 8), scaled to all" in text.splitlines()
    assert re.search(r"^gpu_sampled_0\s.*\s~\d+\.\d{3}$", text, re.M), text
    from_file = summary_text(str(out))
    assert "gpu ms: sampled, 8 of 64 CUDA calls measured (1 in 8), scaled to all" in from_file.splitlines()
    assert re.search(r"^gpu_sampled_1\s.*\s~\d+\.\d{3}$", from_file, re.M), from_file
