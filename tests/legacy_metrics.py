"""The Python collector that served /metrics through prometheus_client before the native endpoint
(trt_trace/metrics.py as of 6db770f): a test oracle. tests/test_metrics_text.py holds the native
text to what prometheus_client writes through it, byte for byte, on the same counters (the live
ones, or made-up ones: tests/data/prometheus_client_metrics.json, captured from that commit).

The collector is that commit's, unchanged but for where it reads the counters: `source`, an object
with the ops it called (engine_names, engine_stats, engine_histograms, histogram_bounds,
thread_counts), by default trt_trace.ops itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from trt_trace.native import ops
from trt_trace.schema.records import STATS_COLUMNS
from trt_trace.schema.trace_format import HOST_PHASES

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
BUCKET_BOUNDS_NS = tuple(1 << e for e in range(10, 36))


class EngineCollector:
    def __init__(self, source: Any = ops) -> None:
        self.ops = source

    def describe(self) -> list:
        return []

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        names, stats, hists = self._by_name()
        calls = CounterMetricFamily("trt_trace_engine_calls", "Engine calls counted (tensorrt::execute_engine)",
                                    labels=["engine"])
        errors = CounterMetricFamily("trt_trace_engine_errors", "Engine calls that raised", labels=["engine"])
        phases = CounterMetricFamily("trt_trace_engine_phase_seconds",
                                     f"Host time of engine calls per phase ({', '.join(HOST_PHASES)})",
                                     labels=["engine", "phase"])
        gpu = CounterMetricFamily("trt_trace_engine_gpu_seconds",
                                  "GPU time of the engine calls measured (CUDA event spans; with TRT_TRACE_GPU_EVERY=N "
                                  "about 1 call in N: scale by (gpu_spans + gpu_sampled_out) / gpu_spans)",
                                  labels=["engine"])
        spans = CounterMetricFamily("trt_trace_engine_gpu_spans", "Engine calls whose GPU span was measured",
                                    labels=["engine"])
        sampled_out = CounterMetricFamily("trt_trace_engine_gpu_sampled_out",
                                          "CUDA engine calls without GPU events because of sampling "
                                          "(TRT_TRACE_GPU_EVERY)", labels=["engine"])
        host = HistogramMetricFamily("trt_trace_engine_call_seconds", "Host time per engine call",
                                     labels=["engine"])
        gpu_hist = HistogramMetricFamily("trt_trace_engine_gpu_call_seconds",
                                         "GPU time per engine call, of the calls measured (see gpu_spans)",
                                         labels=["engine"])
        bounds = np.asarray(self.ops.histogram_bounds(), dtype=np.int64)
        starts = np.searchsorted(bounds, BUCKET_BOUNDS_NS)
        les = [repr(b / 1e9) for b in BUCKET_BOUNDS_NS]
        for i, name in enumerate(names):
            row = stats[i]
            calls.add_metric([name], float(row[_COL["calls"]]))
            errors.add_metric([name], float(row[_COL["errors"]]))
            for phase in HOST_PHASES:
                phases.add_metric([name, phase], row[_COL[f"{phase}_ns"]] / 1e9)
            for family, hist, sum_ns in ((host, hists[0][i], row[_COL["total_ns"]]),
                                         (gpu_hist, hists[1][i], row[_COL["gpu_ns"]])):
                cum = np.concatenate([[0], np.cumsum(hist)])
                if family is gpu_hist and cum[-1] == 0:
                    continue
                buckets = [(le, float(cum[s])) for le, s in zip(les, starts, strict=True)]
                family.add_metric([name], buckets + [("+Inf", float(cum[-1]))], sum_value=sum_ns / 1e9)
            if row[_COL["gpu_calls"]] or row[_COL["gpu_sampled_out"]]:
                gpu.add_metric([name], row[_COL["gpu_ns"]] / 1e9)
                spans.add_metric([name], float(row[_COL["gpu_calls"]]))
                sampled_out.add_metric([name], float(row[_COL["gpu_sampled_out"]]))
        dropped = CounterMetricFamily("trt_trace_dropped_events",
                                      "Trace events dropped because a thread's trace buffer was full")
        dropped.add_metric([], float(self.ops.thread_counts()[:, 2].sum().item()))
        yield from (calls, errors, host, phases, gpu, spans, sampled_out, gpu_hist, dropped)

    def _by_name(self) -> tuple[list[str], np.ndarray, tuple[np.ndarray, np.ndarray]]:
        all_names = self.ops.engine_names()
        stats = self.ops.engine_stats().numpy()
        hists = (self.ops.engine_histograms(0).numpy(), self.ops.engine_histograms(1).numpy())
        n = min(len(all_names), len(stats), len(hists[0]), len(hists[1]))
        names = list(dict.fromkeys(all_names[1:n]))
        index = {name: i for i, name in enumerate(names)}
        rows = np.asarray([index[name] for name in all_names[1:n]], dtype=np.int64)
        keep = stats[1:n, _COL["calls"]] > 0
        out_stats = np.zeros((len(names), stats.shape[1]), dtype=np.int64)
        np.add.at(out_stats, rows, stats[1:n])
        out_hists = []
        for h in hists:
            s = np.zeros((len(names), h.shape[1]), dtype=np.int64)
            np.add.at(s, rows, h[1:n])
            out_hists.append(s)
        used = np.zeros(len(names), dtype=bool)
        used[rows[keep]] = True
        return ([nm for nm, u in zip(names, used, strict=True) if u], out_stats[used],
                (out_hists[0][used], out_hists[1][used]))


def prometheus_client_text(source: Any = ops) -> str:
    """What prometheus_client's /metrics answered through the collector, for the counters of `source`."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(source))
    return generate_latest(registry).decode()
