"""Live metrics in Prometheus' text format at /metrics, from the per-engine counters and duration
histograms that every counted call updates (no per-call Python, no trace file needed).

    TRT_TRACE_METRICS_PORT=9400 python serve.py        # curl 127.0.0.1:9400/metrics

Served with prometheus_client by a custom collector that reads the C++ counters at scrape time.
Metrics need counting: serving turns the switch (set_profile_execution) on, and a tracing session
that stops later leaves it on while metrics are served.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from . import ops
from .config import MetricsSettings, warn
from .records import STATS_COLUMNS
from .trace_format import HOST_PHASES

_COL = {name: i for i, name in enumerate(STATS_COLUMNS)}
# Prometheus bucket bounds: powers of two from 2^10 ns (~1 µs) to 2^35 ns (~34 s). They are bounds of
# the live histograms' buckets too, so every count is exact.
BUCKET_BOUNDS_NS = tuple(1 << e for e in range(10, 36))
_POLL_S = 0.1

_lock = threading.Lock()
_server: Any = None  # (WSGIServer, Thread) while serving
_waiter: threading.Thread | None = None
_stop_waiting = threading.Event()


class EngineCollector:
    """The prometheus_client collector of trt_trace's live counters (one sample set per engine name:
    engines that share a name are added up, as label values must be unique)."""

    def describe(self) -> list:
        return []  # unchecked collector: its metrics exist only once engines have run

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily

        names, stats, hists = _by_name()
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
        bounds = np.asarray(ops.histogram_bounds(), dtype=np.int64)
        # Index of the bucket that starts at each Prometheus bound: counts below it are cumulative sums.
        starts = np.searchsorted(bounds, BUCKET_BOUNDS_NS)
        les = [repr(b / 1e9) for b in BUCKET_BOUNDS_NS]  # the shortest text that reads back as the same float
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
        dropped.add_metric([], float(ops.thread_counts()[:, 2].sum().item()))
        yield from (calls, errors, host, phases, gpu, spans, sampled_out, gpu_hist, dropped)


def _by_name() -> tuple[list[str], np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Counters and histograms summed per engine name (row 0, no engine, left out)."""
    all_names = ops.engine_names()
    stats = ops.engine_stats().numpy()
    hists = (ops.engine_histograms(0).numpy(), ops.engine_histograms(1).numpy())
    n = min(len(all_names), len(stats), len(hists[0]), len(hists[1]))  # engines may register meanwhile
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


def serving() -> bool:
    """Whether this process serves metrics (a session that stops then leaves counting on)."""
    return _server is not None


def address() -> tuple[str, int] | None:
    """(host, port) the metrics are served on, None when not serving."""
    return None if _server is None else _server[0].server_address[:2]


def serve(settings: MetricsSettings) -> tuple[str, int]:
    """Serves /metrics now and turns counting on; raises OSError (busy port, bad address)."""
    global _server
    from prometheus_client import CollectorRegistry, start_http_server

    with _lock:
        if _server is not None:
            return address()  # type: ignore[return-value]
        registry = CollectorRegistry(auto_describe=False)
        registry.register(EngineCollector())
        ops.set_profile_execution(True)
        _server = start_http_server(settings.port, settings.addr, registry=registry)
        return address()  # type: ignore[return-value]


def serve_quietly(settings: MetricsSettings, quiet: bool = False) -> bool:
    """serve(), with a problem as one warning line instead of an exception (the environment's way)."""
    try:
        host, port = serve(settings)
    except Exception as exc:
        warn(f"TRT_TRACE_METRICS_PORT={settings.port}: cannot serve metrics on {settings.addr}:{settings.port} "
             f"({getattr(exc, 'strerror', None) or exc}); running without metrics")
        return False
    if not quiet:
        warn(f"metrics at http://{host}:{port}/metrics")
    return True


def serve_when_engines_run(settings: MetricsSettings, quiet: bool = False) -> None:
    """The TRT_TRACE_METRICS_PORT start-up path: counting on now, the server from this process's first
    engine call on. Processes that inherit the variable but run no engine (a torchrun launcher, compile
    and data loader workers) then never take the port from the one that does."""
    global _waiter
    ops.set_profile_execution(True)

    def wait() -> None:
        try:
            while len(ops.engine_names()) <= 1:  # name 0 is "no engine"
                if _stop_waiting.wait(_POLL_S):
                    return
            serve_quietly(settings, quiet)
        except Exception as exc:  # never take the program down
            warn(f"metrics not served ({type(exc).__name__}: {exc})")

    with _lock:
        if _waiter is None and _server is None:
            _waiter = threading.Thread(target=wait, name="trt_trace-metrics", daemon=True)
            _waiter.start()
            atexit.register(_end_waiting)


def _end_waiting() -> None:
    """At exit, before the interpreter finalizes: the waiter ends between two polls. A daemon thread
    still inside a torch op when finalization begins would be unwound through the op's C++ frames
    as it takes the GIL back, which aborts the process ("terminate called without an active
    exception")."""
    _stop_waiting.set()
    waiter = _waiter
    if waiter is not None and waiter is not threading.current_thread():
        waiter.join(timeout=5)


def stop() -> None:
    """Stops serving (tests; a served process normally serves until it exits)."""
    global _server
    with _lock:
        server, _server = _server, None
    if server is not None:
        server[0].shutdown()
        server[0].server_close()
