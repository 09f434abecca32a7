"""The picture of a trace: per-engine stacked bars by phase, the engines sorted by time.

    trt-trace summary trace.json --plot engines.png

One row per engine: a bar of its host time split into workspace / inputs / outputs / enqueue and,
when the trace has GPU spans, a thinner bar of its GPU time under it. An engine's time is the longer
of its host and GPU totals (a synchronous engine's host call contains its GPU work; an asynchronous
one's GPU work outlasts its launch), and the rows are sorted by it, most first, with each engine's
share and the running (cumulative) share written beside its bar. The title says how many engines
hold half the time and a dashed line separates them from the rest. A narrow panel on the right
shows each engine's host phases in % of its host time: next to a long enqueue, a workspace phase
is too thin to see on the left.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..io.output_files import save_figure
from ..io.readers import native
from ..schema.phases import HOST_PHASES, PHASE_COLORS
from ..schema.records import STATS_COLUMNS
from .trace_summary import TraceSummary

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
# Colour-blind-safe (Okabe-Ito), one per host phase; GPU in a colour of its own.
GPU_COLOR = "#CC79A7"
MAX_ENGINES = 40  # more rows than this are unreadable: the rest go into one "other engines" row


@dataclass
class EnginePlot:
    """What was drawn (for callers and tests): engines top to bottom and their times in ms."""

    engines: list[str]
    time_ms: list[float]
    cumulative_share: list[float]
    host_bars: int
    gpu_bars: int


def _rows(summary: TraceSummary) -> tuple[list[str], np.ndarray]:
    """Engine names and stats sorted by time, most first; the tail past MAX_ENGINES folded into one row.
    The GPU column is scaled to all CUDA calls where calls were sampled out (TRT_TRACE_GPU_EVERY), by
    the tables' own formula (C++, through the torch-free reader library)."""
    stats = summary.stats.astype(np.float64)
    stats[:, _COL["gpu_ns"]] = native.scaled_gpu_ns(summary.stats)
    key = np.maximum(stats[:, _COL["total_ns"]], stats[:, _COL["gpu_ns"]])
    order = np.argsort(-key, kind="stable")
    names = [summary.names[i] for i in order]
    stats = stats[order]
    if len(names) > MAX_ENGINES:
        rest = stats[MAX_ENGINES - 1 :].sum(axis=0)
        names = names[: MAX_ENGINES - 1] + [f"{len(names) - MAX_ENGINES + 1} other engines"]
        stats = np.vstack([stats[: MAX_ENGINES - 1], rest])
    return names, stats


def engine_figure(summary: TraceSummary, title: str):
    """The figure (matplotlib, Agg backend: no display needed) and what it shows."""
    import matplotlib  # heavy (most of a second): only --plot pays for it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after use("Agg"): no display is looked for

    names, stats = _rows(summary)
    n = len(names)
    ms = stats / 1e6
    host_ms = ms[:, _COL["total_ns"]]
    gpu_ms = ms[:, _COL["gpu_ns"]]
    has_gpu = bool(gpu_ms.any())
    time_ms = np.maximum(host_ms, gpu_ms)
    total = float(time_ms.sum())
    share = time_ms / total if total > 0 else np.zeros(n)
    cumulative = np.cumsum(share)

    # Left: time per engine; right: each engine's host phase mix in %, so that phases too short to
    # see on the left (workspace next to a long enqueue) still show.
    fig, (ax, mix) = plt.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3.2, 1]},
                                  figsize=(12, 1.5 + 0.55 * max(n, 1) * (1.5 if has_gpu else 1.0)), dpi=110)
    y = np.arange(n)
    height = 0.42 if has_gpu else 0.7
    host_y = y - (0.22 if has_gpu else 0.0)
    left = np.zeros(n)
    mix_left = np.zeros(n)
    host_bars = 0
    for phase in HOST_PHASES:
        width = ms[:, _COL[f"{phase}_ns"]]
        ax.barh(host_y, width, height=height, left=left, color=PHASE_COLORS[phase], label=f"host: {phase}")
        pct = np.divide(100.0 * width, host_ms, out=np.zeros(n), where=host_ms > 0)
        mix.barh(y, pct, height=0.7, left=mix_left, color=PHASE_COLORS[phase])
        left += width
        mix_left += pct
        host_bars += n
    gpu_bars = 0
    if has_gpu:
        sampled = bool(stats[:, _COL["gpu_sampled_out"]].any())
        every = f"1 in {summary.gpu_every}, " if summary.gpu_every > 1 else ""
        label = f"GPU (launch to completion; sampled, {every}scaled to all calls)" if sampled else \
            "GPU (launch to completion)"
        ax.barh(y + 0.24, gpu_ms, height=0.3, color=GPU_COLOR, label=label)
        gpu_bars = n
    ax.set_yticks(y, names)
    ax.invert_yaxis()  # most time on top
    ax.set_xlabel("time (ms), summed over all calls")
    xmax = float(time_ms.max()) if n else 1.0
    ax.set_xlim(0, xmax * 1.45 or 1.0)  # room for the share labels
    for i in range(n):
        calls = int(stats[i, _COL["calls"]])
        ax.text(time_ms[i] + xmax * 0.01, i, f"{time_ms[i]:.2f} ms · {share[i]:.0%}  (cum. {cumulative[i]:.0%})"
                f" · {calls} calls", va="center", fontsize=8.5)
    calls_total = int(stats[:, _COL["calls"]].sum())
    headline = f"{title} — {calls_total} calls, {n} engines, {total:.2f} ms"
    if n > 1:
        half = int(np.searchsorted(cumulative, 0.5 - 1e-9))  # the row where half the time is reached
        where = ""
        if half < n - 1:
            ax.axhline(half + 0.5, color="grey", linestyle="--", linewidth=1)
            where = ", above the dashes"
        headline += f"\nhalf the time is in the top {half + 1} of {n} engines ({cumulative[half]:.0%}{where})"
    ax.set_title(headline, fontsize=11)
    ax.legend(loc="lower right", fontsize=8, frameon=True)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    mix.set_xlim(0, 100)
    mix.set_xlabel("% of the engine's host time")
    mix.set_title("host phase mix", fontsize=10)
    mix.tick_params(axis="y", left=False)
    fig.tight_layout()
    return fig, EnginePlot(names, time_ms.tolist(), cumulative.tolist(), host_bars, gpu_bars)


def plot_engines(summary: TraceSummary, output: str, title: str) -> EnginePlot:
    """Draws the per-engine bars into `output` (PNG, or any format matplotlib knows by its suffix)."""
    import matplotlib.pyplot as plt  # heavy: only --plot pays for it (backend: engine_figure)

    fig, drawn = engine_figure(summary, title)
    try:
        save_figure(fig, output)
    finally:
        plt.close(fig)
    return drawn
