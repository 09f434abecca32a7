"""trt-trace summary --plot: per-engine stacked bars by phase, sorted by time."""

from __future__ import annotations

import struct
import subprocess

import numpy as np
import pytest
import torch
from test_startup_and_cli import trt_trace_cmd

import trt_trace
from trt_trace.analysis.plot import engine_figure
from trt_trace.analysis.trace_summary import TraceSummary, aggregate, load_events
from trt_trace.schema.records import STATS_COLUMNS
from trt_trace.standin import model

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def traced_model(tmp_path_factory):
    """A real trace: the eager stand-in model of 5 engines of different costs, 6 passes."""
    path = tmp_path_factory.mktemp("plot") / "trace.json"
    net = model.StandInModel(model.demo_specs(5))
    x = torch.randn(8, 64)
    with trt_trace.tracing(str(path)):
        for _ in range(6):
            net(x)
    return path


def test_plot_writes_a_png_with_one_bar_row_per_engine(traced_model, tmp_path):
    png = tmp_path / "engines.png"
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(traced_model), "--plot", str(png)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split()[0] == "engine" and f"plot: {png}" in proc.stdout
    width, height = png_size(png)
    assert 800 <= width <= 2000 and 300 <= height <= 1500
    assert png.stat().st_size > 20_000  # bars, labels and text, not an empty canvas


def test_the_bars_are_the_engines_sorted_by_time_with_their_phases(traced_model):
    import matplotlib.pyplot as plt

    summary = aggregate(load_events(str(traced_model)))
    fig, drawn = engine_figure(summary, "trace.json")
    try:
        ax = fig.axes[0]
        assert len(ax.containers) == 4  # one stacked segment set per host phase, no GPU in this trace
        assert all(len(c.patches) == 5 for c in ax.containers) and drawn.host_bars == 20 and drawn.gpu_bars == 0
        assert [t.get_text() for t in ax.get_yticklabels()] == drawn.engines
        assert sorted(drawn.engines) == sorted(summary.names)
        assert drawn.time_ms == sorted(drawn.time_ms, reverse=True)
        assert np.all(np.diff(drawn.cumulative_share) >= 0) and drawn.cumulative_share[-1] == pytest.approx(1.0)
        # Each bar's segments add up to the engine's total host time.
        totals = dict(zip(summary.names, summary.stats[:, 2] / 1e6, strict=True))
        for i, name in enumerate(drawn.engines):
            assert sum(c.patches[i].get_width() for c in ax.containers) == pytest.approx(totals[name], rel=1e-6)
        assert "30 calls, 5 engines" in ax.get_title()
    finally:
        plt.close(fig)


def test_gpu_time_gets_its_own_bar_and_decides_the_order_when_longer():
    col = {name: i for i, name in enumerate(STATS_COLUMNS)}
    stats = np.zeros((3, len(STATS_COLUMNS)), dtype=np.int64)
    for i, (host_ms, gpu_ms) in enumerate([(1.0, 9.0), (4.0, 0.5), (2.0, 2.5)]):
        stats[i, col["calls"]] = 10
        stats[i, col["total_ns"]] = int(host_ms * 1e6)
        stats[i, col["enqueue_ns"]] = int(host_ms * 1e6)
        stats[i, col["gpu_ns"]] = int(gpu_ms * 1e6)
        stats[i, col["gpu_calls"]] = 10
    import matplotlib.pyplot as plt

    fig, drawn = engine_figure(TraceSummary(names=["a", "b", "c"], stats=stats), "gpu")
    try:
        assert drawn.engines == ["a", "b", "c"] and drawn.time_ms == [9.0, 4.0, 2.5]
        assert drawn.gpu_bars == 3 and len(fig.axes[0].containers) == 5
        assert drawn.cumulative_share[0] == pytest.approx(9.0 / 15.5)
    finally:
        plt.close(fig)


def test_plot_errors_are_one_line(traced_model, tmp_path):
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(traced_model), "--plot", str(tmp_path / "no" / "x.png")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "cannot write" in proc.stderr, proc.stderr
    empty = tmp_path / "empty.json"
    empty.write_text('[{"ph":"M","name":"trt_trace_metadata","pid":1,"tid":0,"args":{"tool":"trt_trace"}},\n'
                     '{"ph":"M","name":"trt_trace_metadata","pid":1,"tid":0,"args":{"ended":"closed"}}]')
    proc = subprocess.run(trt_trace_cmd() + ["summary", str(empty), "--plot", str(tmp_path / "x.png")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "no engine calls" in proc.stderr and proc.stderr.count("\n") == 1


def test_sampled_gpu_time_is_scaled_and_labelled():
    col = {name: i for i, name in enumerate(STATS_COLUMNS)}
    stats = np.zeros((2, len(STATS_COLUMNS)), dtype=np.int64)
    for i, (host_ms, gpu_ms, measured, out) in enumerate([(4.0, 3.0, 10, 0), (1.0, 1.0, 2, 14)]):
        stats[i, col["calls"]] = measured + out
        stats[i, col["total_ns"]] = stats[i, col["enqueue_ns"]] = int(host_ms * 1e6)
        stats[i, col["gpu_ns"]] = int(gpu_ms * 1e6)
        stats[i, col["gpu_calls"]], stats[i, col["gpu_sampled_out"]] = measured, out
    import matplotlib.pyplot as plt

    fig, drawn = engine_figure(TraceSummary(names=["whole", "sampled"], stats=stats, gpu_every=8), "gpu")
    try:
        assert drawn.engines == ["sampled", "whole"] and drawn.time_ms == [8.0, 4.0]  # 1 ms over 2 of 16 calls
        labels = fig.axes[0].get_legend_handles_labels()[1]
        assert "GPU (launch to completion; sampled, 1 in 8, scaled to all calls)" in labels
    finally:
        plt.close(fig)
