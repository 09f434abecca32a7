"""torch.ops.trt_trace.*, the tensorrt:: aliases and the Python API."""

from __future__ import annotations

import re

import pytest
import torch
from conftest import call_from_threads

import trt_trace
from trt_trace import ops, standin
from trt_trace.records import STATS_COLUMNS


def run_engine(name, n, host_us=0):
    engine = standin.make_engine(name, host_us=host_us)
    for _ in range(n):
        torch.ops.tensorrt.execute_engine([torch.ones(4)], engine)
    return engine


def test_switch_on_and_off():
    assert torch.ops.trt_trace.get_profile_execution() is False
    torch.ops.trt_trace.set_profile_execution(True)
    assert trt_trace.get_profile_execution() is True
    torch.ops.trt_trace.set_profile_execution(False)
    assert ops.get_profile_execution() is False


def test_dump_engine_timing_prints_and_returns_the_table(capfd):
    torch.ops.trt_trace.set_profile_execution(True)
    run_engine("slow_engine", 3, host_us=2000)
    run_engine("fast_engine", 5)
    torch.ops.trt_trace.set_profile_execution(False)
    text = torch.ops.trt_trace.dump_engine_timing()
    printed = capfd.readouterr().out
    assert text in printed
    lines = text.splitlines()
    assert lines[0].split() == ["engine", "calls", "total", "ms", "share", "%", "cum", "%", "p50", "ms", "p99", "ms",
                                "workspace", "inputs", "outputs", "enqueue"]
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:]}
    assert list(rows)[:2] == ["slow_engine", "fast_engine"]  # sorted by total
    assert rows["slow_engine"][0] == "3" and rows["fast_engine"][0] == "5" and rows["ALL"][0] == "8"
    assert float(rows["slow_engine"][1]) >= 6.0  # 3 calls x 2 ms launch cost
    # The phases add up to the total (to rounding of the printed figures).
    for name in ("slow_engine", "fast_engine", "ALL"):
        total, phases = float(rows[name][1]), [float(v) for v in rows[name][6:10]]
        assert abs(total - sum(phases)) <= 0.003


def test_reset_zeroes_the_counters():
    torch.ops.trt_trace.set_profile_execution(True)
    run_engine("reset_engine", 2)
    torch.ops.trt_trace.set_profile_execution(False)
    assert "reset_engine" in trt_trace.summary()
    torch.ops.trt_trace.reset()
    assert "reset_engine" not in trt_trace.summary()
    assert re.search(r"^ALL\s+0\s", trt_trace.summary(), re.M)


def test_counters_from_many_threads_add_up_across_resets():
    # Each thread counts into its own table; a snapshot sums them, reset() subtracts a baseline, and
    # the tables of exited threads go to new ones with their counts: every call counted once.

    engine = standin.make_engine("threads_counter_engine")
    col = {name: i for i, name in enumerate(STATS_COLUMNS)}

    def row() -> list[int]:
        names = ops.engine_names()
        if "threads_counter_engine" not in names:
            return [0] * len(STATS_COLUMNS)
        return ops.engine_stats()[names.index("threads_counter_engine")].tolist()

    ops.set_profile_execution(True)
    try:
        call_from_threads(engine, threads=4, calls=25)
        first = row()
        assert first[col["calls"]] == 100
        host = sum(first[col[p]] for p in ("workspace_ns", "inputs_ns", "outputs_ns", "enqueue_ns"))
        assert first[col["total_ns"]] == host > 0  # the phases partition each call
        ops.reset()
        assert row()[col["calls"]] == 0
        # New threads take over the exited threads' tables, counts and all.
        call_from_threads(engine, threads=3, calls=10)
        assert row()[col["calls"]] == 30
    finally:
        ops.set_profile_execution(False)


def test_tensorrt_namespace_aliases():
    torch.ops.tensorrt.set_profile_execution(True)
    assert trt_trace.get_profile_execution()
    run_engine("alias_engine", 1)
    torch.ops.tensorrt.set_profile_execution(False)
    assert "alias_engine" in torch.ops.tensorrt.dump_engine_timing()


def test_context_manager_and_errors(tmp_path):
    out = tmp_path / "ctx.json"
    with trt_trace.tracing(str(out)) as session:
        assert trt_trace.active() is session
        with pytest.raises(trt_trace.TraceError, match="already tracing"):
            trt_trace.start(str(tmp_path / "other.json"))
        run_engine("ctx_engine", 2)
    assert trt_trace.active() is None and not trt_trace.get_profile_execution()
    assert "ctx_engine" in trt_trace.summary(str(out))
    with pytest.raises(trt_trace.TraceError, match="does not exist"):
        trt_trace.start(str(tmp_path / "missing" / "t.json"))
    with pytest.raises(trt_trace.TraceError, match="is a directory"):
        trt_trace.start(str(tmp_path))
    assert trt_trace.stop() is None
