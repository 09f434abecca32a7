"""Percentiles and shares in the per-engine table: live from the hot path's histograms, exact from
a trace file; `trt-trace summary --phase/--json`."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch
from conftest import trt_trace_cli
from trace_checks import load_strict, to_ns

import trt_trace
from trt_trace import standin
from trt_trace.analysis.merge import merge
from trt_trace.analysis.trace_summary import summary_text
from trt_trace.native import ops

STATED_ERROR = 1 / 32  # README: a live percentile is within 3.1% of the exact one


def _run(engines, rounds: int) -> None:
    for _ in range(rounds):
        for e in engines:
            torch.ops.tensorrt.execute_engine([torch.ones(8)], e)


def _call_durations(events, name: str, phase: str = "execute_engine") -> np.ndarray:
    """ns of every `phase` slice of engine `name`, straight from the trace's events."""
    return np.asarray([to_ns(e["dur"]) for e in events if e.get("ph") == "X" and e["name"] == phase
                       and e["args"]["engine"] == name], dtype=np.int64)


def _exact(values: np.ndarray, q: int) -> int:
    return int(np.percentile(values, q, method="inverted_cdf"))


def _traced(tmp_path, specs: dict[str, int], rounds: int, name: str = "t.json"):
    engines = [standin.make_engine(n, host_us=us) for n, us in specs.items()]
    out = tmp_path / name
    with trt_trace.tracing(str(out)):
        _run(engines, rounds)
    return out, load_strict(out)


def test_bucket_bounds_give_the_stated_relative_error():
    bounds = np.asarray(ops.histogram_bounds(), dtype=np.int64)
    assert (np.diff(bounds) > 0).all() and bounds[0] == 0 and bounds[-1] == 1 << 40
    lower, upper = bounds[:-1], bounds[1:] - 1  # integer ns in a bucket: lower..upper
    representative = (lower + upper) // 2
    wide = lower > 0
    worst = np.maximum(representative - lower, upper - representative)[wide] / lower[wide]
    assert worst.max() <= STATED_ERROR
    assert (upper - lower)[:32].max() == 0  # durations below 32 ns are counted exactly


def test_live_histograms_hold_every_call_in_its_bucket(tmp_path):
    out, events = _traced(tmp_path, {"hist_a": 30, "hist_b": 300, "hist_c": 1500}, rounds=40)
    bounds = np.asarray(ops.histogram_bounds(), dtype=np.int64)
    hist = ops.engine_histograms(0).numpy()
    names = ops.engine_names()
    for name in ("hist_a", "hist_b", "hist_c"):
        durations = _call_durations(events, name)
        expected = np.bincount(np.searchsorted(bounds, durations, side="right") - 1, minlength=hist.shape[1])
        assert (hist[names.index(name)] == expected).all()  # the hot path bucketed exactly these calls
    assert ops.engine_histograms(1).numpy().sum() == 0  # CPU calls have no GPU span


def test_live_percentiles_are_within_the_stated_error_of_the_files_exact_ones(tmp_path):
    out, events = _traced(tmp_path, {"pct_fast": 20, "pct_mid": 400, "pct_slow": 2000}, rounds=60)
    live = json.loads(trt_trace.summary(json=True))
    from_file = json.loads(trt_trace.summary(str(out), json=True))
    live_rows = {r["engine"]: r for r in live["engines"]}
    file_rows = {r["engine"]: r for r in from_file["engines"]}
    for name in ("pct_fast", "pct_mid", "pct_slow"):
        durations = _call_durations(events, name)
        for q in (50, 99):
            exact_ms = _exact(durations, q) / 1e6
            assert file_rows[name][f"p{q}_ms"] == pytest.approx(exact_ms, abs=1e-9)  # the file's: exact
            assert abs(live_rows[name][f"p{q}_ms"] - exact_ms) <= STATED_ERROR * exact_ms
    everything = np.concatenate([_call_durations(events, n) for n in ("pct_fast", "pct_mid", "pct_slow")])
    assert from_file["all"]["p99_ms"] == pytest.approx(_exact(everything, 99) / 1e6, abs=1e-9)
    assert abs(live["all"]["p50_ms"] - _exact(everything, 50) / 1e6) <= STATED_ERROR * _exact(everything, 50) / 1e6


def test_table_rows_are_sorted_by_time_with_shares_that_add_up(tmp_path):
    out, events = _traced(tmp_path, {"share_small": 50, "share_big": 1500, "share_mid": 500}, rounds=20)
    for text in (trt_trace.summary(), summary_text(str(out))):
        lines = text.splitlines()
        assert lines[0].split() == ["engine", "calls", "total", "ms", "share", "%", "cum", "%", "p50", "ms",
                                    "p99", "ms", "workspace", "inputs", "outputs", "enqueue"]
        rows = [ln.split() for ln in lines[1:]]
        assert sorted(r[0] for r in rows[:-1]) == ["share_big", "share_mid", "share_small"] and rows[-1][0] == "ALL"
        totals = [float(r[2]) for r in rows[:-1]]
        shares = [float(r[3]) for r in rows[:-1]]
        cums = [float(r[4]) for r in rows[:-1]]
        assert totals == sorted(totals, reverse=True)
        assert shares == pytest.approx([100 * t / sum(totals) for t in totals], abs=0.1)
        # Each printed share and cum is off by up to 0.05 from its exact figure: a cum against the sum of up to
        # three printed shares may differ by 0.2.
        assert cums == pytest.approx(np.cumsum(shares).tolist(), abs=0.2) and cums[-1] == pytest.approx(100, abs=0.05)
        assert rows[-1][3:5] == ["100.0", "100.0"]
        for r in rows:
            assert float(r[5]) <= float(r[6])  # p50 <= p99


def test_file_percentiles_of_a_phase_are_exact(tmp_path):
    out, events = _traced(tmp_path, {"phase_a": 100, "phase_b": 700}, rounds=30)
    for phase in ("enqueue", "workspace", "inputs"):
        doc = json.loads(summary_text(str(out), phase=phase, json=True))
        assert doc["percentiles_of"] == phase
        for row in doc["engines"]:
            durations = _call_durations(events, row["engine"], phase)
            # A phase of no duration is not written: it counts as 0 ns for its call.
            durations = np.concatenate([durations, np.zeros(row["calls"] - len(durations), dtype=np.int64)])
            assert row["p50_ms"] == pytest.approx(_exact(durations, 50) / 1e6, abs=1e-9)
            assert row["p99_ms"] == pytest.approx(_exact(durations, 99) / 1e6, abs=1e-9)
    header = summary_text(str(out), phase="enqueue").splitlines()[0].split()
    assert header[8:12] == ["enqueue", "p50", "enqueue", "p99"]
    gpu = json.loads(summary_text(str(out), phase="gpu", json=True))  # CPU calls: no GPU span
    assert all(r["p50_ms"] is None and r["gpu_ms"] is None for r in gpu["engines"])


def test_live_table_refuses_a_phase_it_keeps_no_histogram_of():
    with pytest.raises(ValueError, match="trace file"):
        trt_trace.summary(phase="enqueue")
    assert "p50" in trt_trace.summary(phase="gpu")


def test_json_is_the_same_table_as_the_text(tmp_path):
    out, _ = _traced(tmp_path, {"json_a": 80, "json_b": 400}, rounds=10)
    doc = json.loads(summary_text(str(out), json=True))
    rows = {ln.split()[0]: ln.split() for ln in summary_text(str(out)).splitlines()[1:]}
    for row in [*doc["engines"], doc["all"]]:
        text = rows[row["engine"]]
        assert int(text[1]) == row["calls"]
        # The text is the JSON's figure printed to its column's places: compare the printed strings, not a
        # tolerance (0.0875 prints "0.087", a hair more than 5e-4 from the float it came from).
        assert text[2] == f"{row['total_ms']:.3f}"
        assert text[3] == f"{row['share_pct']:.1f}"
        assert text[5] == f"{row['p50_ms']:.3f}"
        assert text[6] == f"{row['p99_ms']:.3f}"
    assert doc["dropped_events"] == 0 and doc["partial_calls"] == 0
    assert sorted(r["engine"] for r in doc["engines"]) == ["json_a", "json_b"]


def test_merged_and_perfetto_traces_give_exact_percentiles_over_all_calls(tmp_path):
    parts = []
    for i, us in enumerate((100, 900)):
        engines = [standin.make_engine("merge_pct", host_us=us)]
        path = tmp_path / f"r{i}.json"
        with trt_trace.tracing(str(path)):
            _run(engines, 15)
        parts.append(path)
    merged = tmp_path / "all.json"
    merge([str(p) for p in parts], str(merged))
    durations = np.concatenate([_call_durations(load_strict(p), "merge_pct") for p in parts])
    doc = json.loads(summary_text(str(merged), json=True))
    assert doc["engines"][0]["calls"] == 30
    assert doc["engines"][0]["p50_ms"] == pytest.approx(_exact(durations, 50) / 1e6, abs=1e-9)
    assert doc["engines"][0]["p99_ms"] == pytest.approx(_exact(durations, 99) / 1e6, abs=1e-9)
    pf = tmp_path / "t.pftrace"
    with trt_trace.tracing(str(pf)):
        _run([standin.make_engine("pf_pct", host_us=300)], 20)
    live = json.loads(trt_trace.summary(json=True))["engines"]
    pf_doc = json.loads(summary_text(str(pf), json=True))["engines"][0]
    live_row = next(r for r in live if r["engine"] == "pf_pct")
    assert pf_doc["calls"] == 20
    assert abs(live_row["p99_ms"] - pf_doc["p99_ms"]) <= STATED_ERROR * pf_doc["p99_ms"]


def test_cli_summary_json_phase_and_bad_input(tmp_path):
    out, _ = _traced(tmp_path, {"cli_pct": 200}, rounds=5)
    cli = trt_trace_cli()
    proc = subprocess.run([*cli, "summary", str(out), "--json", "--phase", "enqueue"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["percentiles_of"] == "enqueue" and doc["engines"][0]["engine"] == "cli_pct"
    bad = subprocess.run([*cli, "summary", str(out), "--phase", "nonsense"], capture_output=True, text=True)
    assert bad.returncode != 0 and "invalid choice" in bad.stderr and "Traceback" not in bad.stderr
    missing = subprocess.run([*cli, "summary", str(tmp_path / "none.json"), "--json"], capture_output=True, text=True)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="GPU spans need CUDA (run by tools/device/device_check.sh)")
def test_gpu_histograms_hold_every_gpu_span_and_give_gpu_percentiles(tmp_path):
    engines = [standin.make_engine(f"gpu_pct_{i}", device=0, repeat=r) for i, r in enumerate((2, 40))]
    x = [torch.ones(1 << 20, device="cuda")]
    out = tmp_path / "gpu.json"
    with trt_trace.tracing(str(out)):
        for _ in range(30):
            for e in engines:
                torch.ops.tensorrt.execute_engine(x, e)
        torch.cuda.synchronize()
    events = load_strict(out)
    bounds = np.asarray(ops.histogram_bounds(), dtype=np.int64)
    hist = ops.engine_histograms(1).numpy()
    names = ops.engine_names()
    live = {r["engine"]: r for r in json.loads(trt_trace.summary(phase="gpu", json=True))["engines"]}
    from_file = {r["engine"]: r for r in json.loads(summary_text(str(out), phase="gpu", json=True))["engines"]}
    for i in range(2):
        name = f"gpu_pct_{i}"
        spans = _call_durations(events, name, "gpu")
        assert len(spans) == 30
        expected = np.bincount(np.searchsorted(bounds, spans, side="right") - 1, minlength=hist.shape[1])
        assert (hist[names.index(name)] == expected).all()
        for q in (50, 99):
            exact_ms = _exact(spans, q) / 1e6
            assert from_file[name][f"p{q}_ms"] == pytest.approx(exact_ms, abs=1e-9)
            assert abs(live[name][f"p{q}_ms"] - exact_ms) <= STATED_ERROR * exact_ms
