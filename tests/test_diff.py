"""`trt-trace diff`: per-engine change between two real traces of the stand-in, a significance test
so noise is not a regression, exit codes for CI, JSON / Perfetto / merged inputs, the plot."""

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
from trt_trace.diff import FASTER, SLOWER, diff_files
from trt_trace.merge import merge

CLI = trt_trace_cli()
CALLS = 60


def _trace(path, specs: dict[str, int], calls: int = CALLS) -> str:
    """A trace of `calls` calls of each engine (name -> host_us), interleaved."""
    engines = [standin.make_engine(name, host_us=us) for name, us in specs.items()]
    with trt_trace.tracing(str(path)):
        for _ in range(calls):
            for e in engines:
                torch.ops.tensorrt.execute_engine([torch.ones(8)], e)
    return str(path)


def _diff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, "diff", *args], capture_output=True, text=True)


def test_a_slower_engine_is_a_regression_and_the_others_are_not(tmp_path):
    base = _trace(tmp_path / "base.json", {"d_slowed": 300, "d_same": 300, "d_faster": 900, "d_gone": 100})
    new = _trace(tmp_path / "new.json", {"d_slowed": 600, "d_same": 300, "d_faster": 300, "d_added": 100})
    diff = diff_files(base, new)
    by_name = {e.engine: e for e in diff.engines}
    assert by_name["d_slowed"].durations[0].verdict == SLOWER
    assert by_name["d_faster"].durations[0].verdict == FASTER
    assert by_name["d_same"].durations[0].verdict != SLOWER
    assert by_name["d_gone"].only_in == "base" and by_name["d_added"].only_in == "new"
    assert diff.regressions == [("d_slowed", "total")]
    changes = [abs(e.total_change_ns) for e in diff.engines]
    assert changes == sorted(changes, reverse=True) and len(changes) == 5  # by absolute change of total time
    assert not any(d.verdict == SLOWER for d in by_name["d_same"].durations)  # noise is not a regression
    # The figures are the traces' own.
    call = by_name["d_slowed"].durations[0]
    durations = np.asarray([to_ns(e["dur"]) for e in load_strict(new) if e.get("ph") == "X"
                            and e["name"] == "execute_engine" and e["args"]["engine"] == "d_slowed"])
    assert call.new.calls == CALLS and call.new.total_ns == durations.sum()
    assert call.new.p50_ns == int(np.percentile(durations, 50, method="inverted_cdf"))
    assert {d.duration for d in by_name["d_slowed"].durations} >= {"total", "enqueue"}

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
    new = _trace(tmp_path / "b.json", specs)
    proc = _diff(base, new)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.splitlines()[-1] == "no regression"


def test_diff_reads_perfetto_and_merged_traces_and_writes_json_and_a_plot(tmp_path):
    base_parts = [_trace(tmp_path / f"base_{r}.json", {"m_engine": 300}, calls=30) for r in range(2)]
    base = str(tmp_path / "base_all.json")
    merge(base_parts, base)
    new = _trace(tmp_path / "new.pftrace", {"m_engine": 900}, calls=40)
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
