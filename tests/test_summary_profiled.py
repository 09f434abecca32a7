"""`trt-trace summary` and calls that ran under per-layer profiling (TRT_TRACE_LAYERS, docs/layers.md):
left out of the rows by default, with one line (JSON: `profiled_calls`), kept with
`--include-profiled`. A call is profiled when the trace holds layer slices of it (each names its call's
id), so traces written before this reading are read the same way. Checked on real traced runs of the
stand-in in both formats against the calls read from the file's events."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch
from conftest import trt_trace_cli

import trt_trace
from trt_trace import standin
from trt_trace.analysis import trace_summary
from trt_trace.analysis.summary_table import TableOptions
from trt_trace.analysis.trace_summary import read_summaries, summary_text
from trt_trace.io.readers import load_events
from trt_trace.schema.trace_format import CATEGORY, LAYER_CATEGORY

N_PROFILED = 4
CALLS = 30


def _p50(ns: list[int]) -> int:
    """The exact p50 as the table takes it: the ceil(n / 2)-th smallest value."""
    v = sorted(ns)
    return v[max(-(-50 * len(v) // 100), 1) - 1]


@pytest.fixture(scope="module", params=[".json", ".pftrace"])
def traced(request, tmp_path_factory) -> tuple[str, dict[str, list[int]], dict[str, list[int]]]:
    """A real traced run with per-layer timing: (path, per engine the totals in ns of its unprofiled
    calls, of its profiled ones), read from the trace's own events."""
    a = standin.make_engine("profiled_a", layers=(("conv", 40), ("fc", 20)))
    b = standin.make_engine("profiled_b", layers=(("mm", 30),))
    path = str(tmp_path_factory.mktemp("profiled") / f"t{request.param}")
    x = torch.ones(4)
    with trt_trace.tracing(path, layers=N_PROFILED):
        for _ in range(CALLS):
            torch.ops.tensorrt.execute_engine([x], a)
            torch.ops.tensorrt.execute_engine([x], b)
    events = load_events(path)
    with_layers = {e["args"]["call_id"] for e in events if e.get("cat") == LAYER_CATEGORY}
    usual: dict[str, list[int]] = {}
    profiled: dict[str, list[int]] = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == CATEGORY and e["name"] == "execute_engine":
            side = profiled if e["args"]["call_id"] in with_layers else usual
            side.setdefault(e["args"]["engine"], []).append(round(e["dur"] * 1000))
    return path, usual, profiled


def test_the_profiled_calls_are_the_windows_calls(traced):
    _path, usual, profiled = traced
    assert {k: len(v) for k, v in profiled.items()} == {"profiled_a": N_PROFILED, "profiled_b": N_PROFILED}
    assert {k: len(v) for k, v in usual.items()} == {"profiled_a": CALLS - N_PROFILED,
                                                      "profiled_b": CALLS - N_PROFILED}


def _exact(path: str, include: bool) -> tuple[dict[str, tuple[int, int]], int, int]:
    """Per engine (calls, p50 ns), the p50 of all rows, and the profiled calls counted."""
    _parts, whole, _read = read_summaries(path, ("total",), include_profiled=include)
    per_row, overall = whole.percentiles("total")
    calls = whole.stats[:, trace_summary._COL["calls"]].tolist()
    rows = {n: (int(c), int(p[0])) for n, c, p in zip(whole.names, calls, per_row.tolist(), strict=True)}
    return rows, int(overall[0]), whole.profiled_calls


def test_by_default_the_p50_is_over_the_unprofiled_calls_only(traced):
    path, usual, profiled = traced
    rows, overall, counted = _exact(path, include=False)
    assert rows == {e: (len(ns), _p50(ns)) for e, ns in usual.items()}
    assert overall == _p50([v for ns in usual.values() for v in ns])
    assert counted == sum(len(v) for v in profiled.values())
    # Why they are left out: the runtime's profiling makes them several times slower (docs/layers.md).
    assert _p50([v for ns in profiled.values() for v in ns]) > 2 * _p50([v for ns in usual.values() for v in ns])


def test_include_profiled_counts_every_call(traced):
    path, usual, profiled = traced
    rows, overall, counted = _exact(path, include=True)
    every = {e: usual[e] + profiled.get(e, []) for e in usual}
    assert rows == {e: (len(ns), _p50(ns)) for e, ns in every.items()}
    assert overall == _p50([v for ns in every.values() for v in ns])
    assert counted == 2 * N_PROFILED


def test_the_cli_line_json_fields_and_flag(traced):
    path, usual, profiled = traced
    n = sum(len(v) for v in profiled.values())
    out = subprocess.run([*trt_trace_cli(), "summary", path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert [ln for ln in lines if "per-layer profiling" in ln] == [
        f"{n} calls ran under per-layer profiling (TRT_TRACE_LAYERS): left out of the statistics "
        "(--include-profiled keeps them)"]
    all_row = next(ln for ln in lines if ln.startswith("ALL "))
    assert all_row.split()[1] == str(sum(len(v) for v in usual.values()))
    kept = subprocess.run([*trt_trace_cli(), "summary", path, "--include-profiled"], capture_output=True, text=True)
    assert next(ln for ln in kept.stdout.splitlines() if ln.startswith("ALL ")).split()[1] == str(2 * CALLS)
    assert f"{n} calls ran under per-layer profiling (TRT_TRACE_LAYERS): included" in kept.stdout
    for flag, calls, included in (([], 2 * (CALLS - N_PROFILED), False), (["--include-profiled"], 2 * CALLS, True)):
        doc = json.loads(subprocess.run([*trt_trace_cli(), "summary", path, "--json", *flag], capture_output=True,
                                        text=True).stdout)
        assert (doc["all"]["calls"], doc["profiled_calls"], doc["profiled_included"]) == (calls, n, included)
        assert doc["all"]["p50_ms"] == pytest.approx(
            _p50([v for d in ((usual, profiled) if included else (usual,)) for ns in d.values() for v in ns]) / 1e6,
            abs=1e-6)
    csv = subprocess.run([*trt_trace_cli(), "summary", path, "--format", "csv"], capture_output=True, text=True)
    assert "per-layer profiling" not in csv.stdout and f"{n} calls ran under per-layer profiling" in csv.stderr


def test_summary_text_and_the_api(traced):
    path, _usual, _profiled = traced
    assert "left out of the statistics" in summary_text(path)
    assert "included (--include-profiled)" in trt_trace.summary(path, include_profiled=True)
    doc = json.loads(summary_text(path, options=TableOptions(format="json")))
    assert doc["profiled_calls"] == 2 * N_PROFILED and not doc["profiled_included"]


def test_a_second_reading_gives_the_same_rows(traced, monkeypatch):
    """Layer slices that come later than the held calls: the file is read again with them known."""
    path, usual, _profiled = traced
    readings = []
    real_read = trace_summary.read_calls

    def counted_read(*args, **kwargs):
        readings.append(kwargs.get("visitor") is None)  # the second reading needs no layer slices
        return real_read(*args, **kwargs)
    monkeypatch.setattr(trace_summary, "read_calls", counted_read)
    monkeypatch.setattr(trace_summary._SplitRows, "all_caught", lambda self, read: False)  # as if none was caught
    rows, _overall, counted = _exact(path, include=False)
    assert readings == [False, True]
    assert rows == {e: (len(ns), _p50(ns)) for e, ns in usual.items()} and counted == 2 * N_PROFILED


def test_a_trace_without_layers_has_no_line(tmp_path):
    engine = standin.make_engine("plain_engine")
    path = str(tmp_path / "t.json")
    with trt_trace.tracing(path):
        for _ in range(5):
            torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    assert "per-layer profiling" not in summary_text(path)
    doc = json.loads(summary_text(path, json=True))
    assert doc["profiled_calls"] == 0 and doc["all"]["calls"] == 5
    assert np.all(read_summaries(path, include_profiled=False)[1].stats == read_summaries(path)[1].stats)
