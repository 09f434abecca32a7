"""`trt-trace diff`: per-engine change between two traces, a significance test so noise is not a
regression (with its Bonferroni correction and minimum change), windows, exit codes for CI, JSON /
Perfetto / merged inputs, the plot. The traces are constructed (tests/synthetic_traces.py): every
p-value and verdict here is a fixed quantity, not a timing."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import trt_trace_cli
from synthetic_traces import engines_trace
from trace_checks import load_strict, to_ns

from trt_trace.analysis.diff import ALPHA, FASTER, SAME, SLOWER, diff_files
from trt_trace.analysis.merge import merge
from trt_trace.io.readers import Window

CLI = trt_trace_cli()
CALLS = 60
RNG = np.random.default_rng(20261201)


def _durations(mean_us: float, n: int = CALLS, seed: int = 0) -> np.ndarray:
    """n call totals around mean_us with 2% jitter: a fixed draw, so every p-value below is a constant."""
    rng = np.random.default_rng(seed)
    return np.round(mean_us * 1000 * rng.normal(1.0, 0.02, n)).astype(np.int64)


def _trace(path, specs: dict[str, float], calls: int = CALLS, seed: int = 0) -> str:
    """A constructed trace: `calls` calls of each engine (name -> mean µs)."""
    return str(engines_trace(Path(path), {name: _durations(us, calls, seed + i) for i, (name, us)
                                          in enumerate(specs.items())}))


def _diff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "diff", *args], capture_output=True, text=True)


def test_a_slower_engine_is_a_regression_and_the_others_are_not(tmp_path):
    base = _trace(tmp_path / "base.json", {"d_slowed": 300, "d_same": 300, "d_faster": 900, "d_gone": 100})
    new = _trace(tmp_path / "new.json", {"d_slowed": 600, "d_same": 300, "d_faster": 300, "d_added": 100}, seed=10)
    diff = diff_files(base, new)
    by_name = {e.engine: e for e in diff.engines}
    assert by_name["d_slowed"].durations[0].verdict == SLOWER
    assert by_name["d_faster"].durations[0].verdict == FASTER
    assert by_name["d_gone"].only_in == "base" and by_name["d_added"].only_in == "new"
    assert diff.regressions == [("d_slowed", "total")]
    changes = [abs(e.total_change_ns) for e in diff.engines]
    assert changes == sorted(changes, reverse=True) and len(changes) == 5  # by absolute change of total time
    assert not any(d.verdict != SAME for d in by_name["d_same"].durations)  # noise is not a change
    # The figures are the traces' own.
    call = by_name["d_slowed"].durations[0]
    durations = np.asarray([to_ns(e["dur"]) for e in load_strict(new) if e.get("ph") == "X"
                            and e["name"] == "execute_engine" and e["args"]["engine"] == "d_slowed"])
    assert call.new.calls == CALLS and call.new.total_ns == durations.sum()
    assert call.new.p50_ns == int(np.percentile(durations, 50, method="inverted_cdf"))
    assert {d.duration for d in by_name["d_slowed"].durations} == {"total", "workspace", "inputs", "outputs",
                                                                    "enqueue"}

    proc = _diff(base, new)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:3] == ["engine", "phase", "calls"]
    assert "SLOWER" in next(ln for ln in lines if ln.startswith("d_slowed"))
    assert "only in base" in next(ln for ln in lines if ln.startswith("d_gone"))
    assert "only in new" in next(ln for ln in lines if ln.startswith("d_added"))
    assert lines[-1] == "1 regression(s): d_slowed (call)"
    # Doubling is +100%: beyond a 150% threshold it is not a regression.
    assert _diff(base, new, "--threshold", "150").returncode == 0


def test_the_same_build_twice_is_not_a_regression(tmp_path):
    specs = {"n_a": 200, "n_b": 500, "n_c": 50}
    base = _trace(tmp_path / "a.json", specs)
    new = _trace(tmp_path / "b.json", specs, seed=5)
    proc = _diff(base, new)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1] == "no regression"


def test_bonferroni_a_p_value_significant_alone_but_not_among_all_the_tests_is_no_regression(tmp_path):
    """One engine slower by 10% with p between alpha / tests and alpha: significant as one test, not
    after the correction for the 5 durations x 4 engines tested; the other engines identical."""
    rng = np.random.default_rng(7)
    base_vals = np.round(rng.normal(100_000, 12_000, 40)).astype(np.int64)
    new_vals = base_vals + 7_000  # +7% at every call, but spread wide: a weak test
    from scipy.stats import mannwhitneyu

    p = mannwhitneyu(new_vals, base_vals).pvalue
    tests = 5 * 4
    assert ALPHA / tests < p < ALPHA  # the case this test is about
    same = {f"b_{i}": _durations(50 + 10 * i, 40, seed=i) for i in range(3)}
    base = engines_trace(tmp_path / "base.json", {"b_weak": base_vals, **same})
    new = engines_trace(tmp_path / "new.json", {"b_weak": new_vals, **same})
    diff = diff_files(str(base), str(new))
    weak = next(e for e in diff.engines if e.engine == "b_weak").durations[0]
    assert weak.p_value == pytest.approx(p, rel=1e-12) and weak.p50_change_pct > 5
    assert diff.alpha == pytest.approx(ALPHA / tests) and weak.verdict == SAME and diff.regressions == []
    assert diff_files(str(base), str(new), alpha=ALPHA * tests).regressions == [("b_weak", "total")]


def test_a_significant_change_below_the_minimum_change_is_no_regression(tmp_path):
    """+20% on a 2 µs engine, at every call: p is tiny and the threshold passed, but 0.4 µs is below
    the 1 µs floor (--min-change-us)."""
    base_vals = np.full(50, 2_000, dtype=np.int64) + np.arange(50)
    base = engines_trace(tmp_path / "base.json", {"tiny": base_vals, "big": base_vals * 100})
    new = engines_trace(tmp_path / "new.json", {"tiny": base_vals + 400, "big": base_vals * 100})
    diff = diff_files(str(base), str(new))
    call = next(e for e in diff.engines if e.engine == "tiny").durations[0]
    assert call.p_value < 1e-9 and call.p50_change_pct == pytest.approx(100 * 400 / 2_024)
    assert call.verdict == SAME and diff.regressions == []
    assert _diff(str(base), str(new)).returncode == 0
    proc = _diff(str(base), str(new), "--min-change-us", "0.3")
    assert proc.returncode == 1 and proc.stdout.splitlines()[-1] == "1 regression(s): tiny (call)"


def test_traces_that_share_no_engine_exit_2(tmp_path):
    base = _trace(tmp_path / "a.json", {"only_a": 100})
    new = _trace(tmp_path / "b.json", {"only_b": 100})
    proc = _diff(base, new)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("trt-trace diff: ")
    assert "share no engine" in proc.stderr


def test_skip_first_and_a_window_leave_the_warm_up_out_of_the_verdict(tmp_path):
    """A first call 100x slower (warm-up) in the new build only: with 3 calls per side the test has
    little power, but the windows must leave exactly the calls they say."""
    base_vals = _durations(100, 30, seed=1)
    new_vals = base_vals.copy()
    new_vals[0] *= 100
    base = engines_trace(tmp_path / "base.json", {"w": base_vals})
    new = engines_trace(tmp_path / "new.json", {"w": new_vals})
    whole = diff_files(str(base), str(new)).engines[0].durations[0]
    assert whole.new.total_ns == int(new_vals.sum())
    skipped = diff_files(str(base), str(new), window=Window(skip_first=1)).engines[0].durations[0]
    assert skipped.new.calls == skipped.base.calls == 29 and skipped.new.total_ns == int(new_vals[1:].sum())
    # Calls begin 1 ms apart from the first: [5 ms, 10 ms) holds calls 5..9.
    timed = diff_files(str(base), str(new), window=Window(from_s=0.005, to_s=0.010)).engines[0].durations[0]
    assert timed.new.calls == 5 and timed.new.total_ns == int(new_vals[5:10].sum())
    proc = _diff(str(base), str(new), "--skip-first", "1", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["engines"][0]["durations"][0]["new"]["calls"] == 29


def test_diff_reads_perfetto_and_merged_traces_and_writes_json_and_a_plot(tmp_path):
    base_parts = [str(engines_trace(tmp_path / f"base_{r}.json", {"m_engine": _durations(300, 30, seed=r)},
                                    pid=100 + r, rank=r)) for r in range(2)]
    base = str(tmp_path / "base_all.json")
    merge(base_parts, base)
    new = str(engines_trace(tmp_path / "new.pftrace", {"m_engine": _durations(900, 40, seed=9)}))
    png = tmp_path / "diff.png"
    proc = _diff(base, new, "--json", "--plot", str(png))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    engine = doc["engines"][0]
    assert engine["engine"] == "m_engine" and engine["durations"][0]["base"]["calls"] == 60
    assert engine["durations"][0]["new"]["calls"] == 40 and engine["durations"][0]["verdict"] == SLOWER
    assert doc["regressions"] == [{"engine": "m_engine", "duration": "total"}]
    import matplotlib.image

    assert matplotlib.image.imread(png).shape[0] > 100


@pytest.mark.parametrize("case", ["missing", "not_a_trace", "no_calls", "threshold"])
def test_bad_input_is_one_line_and_exit_code_2(tmp_path, case):
    good = _trace(tmp_path / "good.json", {"bad_in": 50}, calls=3)
    args = {
        "missing": [good, str(tmp_path / "nope.json")],
        "not_a_trace": [good, str(_write(tmp_path / "x.json", "hello"))],
        "no_calls": [str(_write(tmp_path / "empty.json", "[]")), good],
        "threshold": [good, good, "--threshold", "-3"],
    }[case]
    proc = _diff(*args)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("trt-trace diff: ") and proc.stdout == ""


def _write(path, text: str):
    path.write_text(text)
    return path
