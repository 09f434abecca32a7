"""`trt-trace diff`'s rules at their edges, each pinned by a constructed trace (tests/synthetic_traces.py):
the mutants of trt_trace/analysis/diff.py that tests/test_diff.py let live (docs/mutation-testing.md). A change
must be *more* than the threshold and *at least* the minimum change; a p-value needs two calls a side;
engines sharing a name are matched k-th with k-th; the order is by the absolute change of total time."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from synthetic_traces import GAP_NS, call_rows, engine_calls, engines_trace, write_trace

from trt_trace.analysis import diff as diff_module
from trt_trace.analysis.diff import ALPHA, FASTER, MIN_CHANGE_NS, SAME, SLOWER, diff_files, format_diff, to_json
from trt_trace.io.readers import TraceFileError, Window

CALLS = 40


def _flat(ns: int, n: int = CALLS) -> np.ndarray:
    return np.full(n, ns, dtype=np.int64)


def _call(diff, engine: str):
    return next(e for e in diff.engines if e.engine == engine).durations[0]


def test_a_change_of_exactly_the_threshold_is_not_more_than_it(tmp_path):
    """Every call +5% (or -5%) exactly, 1 µs each way: significant, at the floor, not more than 5%."""
    base = engines_trace(tmp_path / "base.json", {"up5": _flat(20_000), "down5": _flat(20_000)})
    new = engines_trace(tmp_path / "new.json", {"up5": _flat(21_000), "down5": _flat(19_000)})
    diff = diff_files(str(base), str(new))
    up, down = _call(diff, "up5"), _call(diff, "down5")
    assert up.p50_change_pct == 5.0 and down.p50_change_pct == -5.0
    assert up.p_value < diff.alpha and down.p_value < diff.alpha
    assert up.verdict == SAME and down.verdict == SAME and diff.regressions == []
    below = diff_files(str(base), str(new), threshold_pct=4.99)
    assert (_call(below, "up5").verdict, _call(below, "down5").verdict) == (SLOWER, FASTER)


def test_a_change_of_exactly_the_minimum_change_counts(tmp_path):
    """+10% at every call, by exactly MIN_CHANGE_NS: at least the floor, so a regression."""
    assert MIN_CHANGE_NS == 1000
    base = engines_trace(tmp_path / "base.json", {"floor": _flat(10_000)})
    new = engines_trace(tmp_path / "new.json", {"floor": _flat(11_000)})
    diff = diff_files(str(base), str(new))
    call = _call(diff, "floor")
    assert call.new.p50_ns - call.base.p50_ns == MIN_CHANGE_NS and call.verdict == SLOWER
    assert diff.regressions == [("floor", "total")]
    assert _call(diff_files(str(base), str(new), min_change_ns=1001), "floor").verdict == SAME


def test_a_p_value_needs_two_calls_on_each_side(tmp_path):
    """One call on a side: no test (and no verdict); two a side: a test, whatever its p."""
    base = engines_trace(tmp_path / "base.json", {"one": _flat(10_000, 1), "two": _flat(10_000, 2)})
    new = engines_trace(tmp_path / "new.json", {"one": _flat(50_000, 3), "two": _flat(50_000, 2)})
    diff = diff_files(str(base), str(new))
    one, two = _call(diff, "one"), _call(diff, "two")
    assert (one.base.calls, one.new.calls, two.base.calls, two.new.calls) == (1, 3, 2, 2)
    assert one.p_value is None and one.verdict == SAME and one.p50_change_pct == 400.0
    assert two.p_value is not None and 0 < two.p_value < 1
    # Bonferroni counts the tests made: the five durations of `two` only; with none made, alpha itself.
    assert diff.alpha == ALPHA / 5
    lone = diff_files(str(base), str(engines_trace(tmp_path / "lone.json", {"one": _flat(20_000, 1)})))
    assert _call(lone, "one").p_value is None and lone.alpha == ALPHA
    assert f"Mann-Whitney p < {ALPHA:.2g}" in format_diff(lone)


def test_engines_ordered_by_the_absolute_change_of_their_total_time(tmp_path):
    """`big` moves little for its size, `small` doubles: small's change is the larger, and comes first."""
    base = engines_trace(tmp_path / "base.json", {"big": _flat(1_000_000), "small": _flat(100_000), "same": _flat(500)})
    new = engines_trace(tmp_path / "new.json", {"big": _flat(1_001_000), "small": _flat(200_000), "same": _flat(500)})
    diff = diff_files(str(base), str(new))
    assert [e.engine for e in diff.engines] == ["small", "big", "same"]
    assert [e.total_change_ns for e in diff.engines] == [CALLS * 100_000, CALLS * 1_000, 0]
    doc = to_json(diff)
    assert [e["total_change_ns"] for e in doc["engines"]] == [CALLS * 100_000, CALLS * 1_000, 0]
    # The table's Δ total column is the same change, in ms.
    lines = format_diff(diff).splitlines()
    small = next(ln for ln in lines if ln.startswith("small "))
    assert f"{CALLS * 100_000 / 1e6:+.3f}" in small.split()


def test_engines_that_share_a_name_are_matched_kth_with_kth(tmp_path):
    """Two engines of one process named alike: `dup` and `dup #2` in both traces, each against its twin."""
    names = ["", "dup", "dup"]

    def trace(path: Path, first: int, second: int) -> str:
        rows = engine_calls(1, _flat(first), 1) + engine_calls(2, _flat(second), CALLS + 1,
                                                               first_begin=10**9 + CALLS * GAP_NS)
        return str(write_trace(path, rows, names, end={}))

    diff = diff_files(trace(tmp_path / "base.json", 10_000, 80_000), trace(tmp_path / "new.json", 10_000, 160_000))
    calls = {e.engine: e.durations[0] for e in diff.engines}
    assert set(calls) == {"dup", "dup #2"}
    assert (calls["dup"].base.p50_ns, calls["dup"].new.p50_ns, calls["dup"].verdict) == (10_000, 10_000, SAME)
    assert (calls["dup #2"].base.p50_ns, calls["dup #2"].new.p50_ns, calls["dup #2"].verdict) == (80_000, 160_000,
                                                                                               SLOWER)
    assert diff.regressions == [("dup #2", "total")]


def test_the_table_lines_up_names_left_figures_right_and_verdicts_left(tmp_path):
    """Each column of the text table starts (left-aligned: engine, phase, verdict) or ends (figures)
    where its header does, whatever the lengths of the values under it."""
    base = engines_trace(tmp_path / "base.json", {"a_long_engine_name": _flat(20_000), "e": _flat(20_000)})
    new = engines_trace(tmp_path / "new.json", {"a_long_engine_name": _flat(40_000), "e": _flat(20_000)})
    lines = format_diff(diff_files(str(base), str(new))).splitlines()
    header, rows = lines[0], lines[1:-2]
    assert header.split() == ["engine", "phase", "calls", "total", "ms", "Δ", "total", "mean", "ms", "p50", "ms",
                              "Δ", "p50", "p99", "ms", "p-value", "verdict"]
    verdict_at = header.index("verdict")
    slower = [r for r in rows if r.rstrip().endswith("SLOWER")]
    assert slower and all(r.index("SLOWER") == verdict_at for r in slower)
    assert rows[0].startswith("a_long_engine_name  call ")
    phase_at = header.index("phase")
    assert all(r[phase_at:].split()[0] in ("call", "workspace", "inputs", "outputs", "enqueue") for r in rows)
    calls_end = header.index("calls") + len("calls")
    assert all(r[:calls_end].endswith(f"{CALLS}/{CALLS}") for r in rows)
    e_row = next(r for r in rows if r.startswith("e "))
    assert e_row[phase_at:].startswith("call")


def test_engines_in_one_trace_only_count_from_zero(tmp_path):
    """An engine gone from the new trace changes by minus its base total, one added by its new total;
    its calls read 40/0 or 0/40; the footer says the rules the verdicts used."""
    base = engines_trace(tmp_path / "base.json", {"kept": _flat(10_000), "gone": _flat(30_000)})
    new = engines_trace(tmp_path / "new.json", {"kept": _flat(10_000), "added": _flat(20_000)})
    diff = diff_files(str(base), str(new))
    doc = {e["engine"]: e for e in to_json(diff)["engines"]}
    assert (doc["gone"]["only_in"], doc["gone"]["total_change_ns"]) == ("base", -CALLS * 30_000)
    assert (doc["added"]["only_in"], doc["added"]["total_change_ns"]) == ("new", CALLS * 20_000)
    lines = format_diff(diff).splitlines()
    gone = next(ln for ln in lines if ln.startswith("gone "))
    added = next(ln for ln in lines if ln.startswith("added "))
    assert f"{CALLS}/0" in gone.split() and f"0/{CALLS}" in added.split()
    assert f"{-CALLS * 30_000 / 1e6:+.3f}" in gone.split()
    assert lines[-2] == (f"base/new: {base} / {new}; times in ms; a change is SLOWER or faster when the p50 moved by "
                         f"more than 5% (and 1 µs) and Mann-Whitney p < {ALPHA / 5:.2g}")


def test_a_trace_without_calls_says_so_and_names_the_window_only_where_one_was_given(tmp_path):
    good = str(engines_trace(tmp_path / "good.json", {"w": _flat(10_000, 3)}))
    empty = tmp_path / "empty.json"
    # A trace (it has a trace event) without a call; `[]` is no trace at all, and refused as such.
    empty.write_text('[{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "serve"}}]')
    for window, said in ((None, False), (Window(), False), (Window(skip_first=5), True)):
        source = str(empty) if not said else good
        try:
            diff_files(source, good, window=window)
        except TraceFileError as exc:
            assert str(exc) == f"{source} has no engine calls to compare" + (" in the window" if said else "")
        else:
            raise AssertionError("no error")


def test_traces_sharing_no_engine_name_each_ones_engines(tmp_path):
    base = str(engines_trace(tmp_path / "a.json", {"a_one": _flat(10_000, 3), "a_two": _flat(10_000, 3)}))
    new = str(engines_trace(tmp_path / "b.json", {"b_one": _flat(10_000, 3)}))
    with pytest.raises(TraceFileError) as err:
        diff_files(base, new)
    assert str(err.value) == f"{base} and {new} share no engine: nothing to compare (a_one, a_two / b_one)"


def test_a_phase_of_zero_ns_in_the_base_has_no_relative_change(tmp_path):
    """A phase written with no length (0 ns, its begin its end) in every base call: its p50 is 0, so its
    change has no percentage and no verdict; the diff goes on for the rest."""
    def trace(path: Path, outputs_ns: int) -> str:
        rows = []
        for k in range(CALLS):
            begin = 10**9 + k * GAP_NS
            rows += call_rows(k + 1, 1, begin, [1_000, 2_000, outputs_ns, 20_000])
            if not outputs_ns:  # call_rows leaves a phase of 0 ns out: here it is written
                rows.append((begin + 3_000, begin + 3_000, k + 1, 1, 42, 3, 0, 0xFFFF, 0))
        return str(write_trace(path, rows, ["", "z"], end={}))

    diff = diff_files(trace(tmp_path / "base.json", 0), trace(tmp_path / "new.json", 2_000))
    outputs = next(d for d in diff.engines[0].durations if d.duration == "outputs")
    assert (outputs.base.p50_ns, outputs.new.p50_ns) == (0, 2_000)
    assert outputs.p50_change_pct is None and outputs.verdict == SAME and outputs.p_value is not None
    assert diff.engines[0].durations[0].p50_change_pct == 100.0 * 2_000 / 23_000  # the call's own


def test_a_phase_of_one_ns_in_the_base_has_a_relative_change(tmp_path):
    """The smallest positive base p50 (1 ns, its outputs phase) still gives a percentage: only 0 has none."""
    def trace(path: Path, outputs_ns: int) -> str:
        rows = []
        for k in range(CALLS):
            rows += call_rows(k + 1, 1, 10**9 + k * GAP_NS, [1_000, 2_000, outputs_ns, 20_000])
        return str(write_trace(path, rows, ["", "z"], end={}))

    diff = diff_files(trace(tmp_path / "base.json", 1), trace(tmp_path / "new.json", 3))
    outputs = next(d for d in diff.engines[0].durations if d.duration == "outputs")
    assert (outputs.base.p50_ns, outputs.new.p50_ns) == (1, 3)
    assert outputs.p50_change_pct == 200.0


def test_a_p_value_equal_to_the_per_test_alpha_is_not_below_it(tmp_path, monkeypatch):
    """The p-value must be *below* alpha / tests. Every test's p-value is made 2**-20 here (the U test
    itself is checked in tests/test_mann_whitney.py), so that alpha = 5 * 2**-20 over the engine's five
    tests is that p-value exactly: the call stays `same`; the next float above alpha makes it SLOWER."""
    p = 2.0**-20
    monkeypatch.setattr(diff_module, "mann_whitney_p", lambda *counts: p)
    base = engines_trace(tmp_path / "base.json", {"e": _flat(20_000)})
    new = engines_trace(tmp_path / "new.json", {"e": _flat(40_000)})
    at = diff_files(str(base), str(new), alpha=5 * p)
    assert at.alpha == p and _call(at, "e").p_value == p
    assert _call(at, "e").verdict == SAME and at.regressions == []
    above = diff_files(str(base), str(new), alpha=float(np.nextafter(5 * p, np.inf)))
    assert above.alpha > p and _call(above, "e").verdict == SLOWER


def test_the_change_of_an_engine_in_one_trace_is_its_total_to_the_nanosecond(tmp_path):
    """The Δ total of an engine in one trace only is its total, counted from exactly 0: 1.5 µs prints
    as 0.002 ms, where 1 ns less (1.499 µs) would print 0.001."""
    base = engines_trace(tmp_path / "base.json", {"kept": _flat(10_000), "gone": _flat(500, 3)})
    new = engines_trace(tmp_path / "new.json", {"kept": _flat(10_000), "added": _flat(500, 3)})
    lines = format_diff(diff_files(str(base), str(new))).splitlines()
    gone = next(ln for ln in lines if ln.startswith("gone ")).split()
    added = next(ln for ln in lines if ln.startswith("added ")).split()
    assert gone[3:5] == ["0.002/-", "-0.002"] and added[3:5] == ["-/0.002", "+0.002"]
