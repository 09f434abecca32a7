"""trt_trace: per-engine, per-phase timing of Torch-TensorRT engines, also inside AOTInductor packages.

    import trt_trace
    with trt_trace.tracing("trace.json"):
        model(x)
    print(trt_trace.summary())

or, with no code change: `TRT_TRACE_OUT=trace.json python serve.py`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from . import captures  # noqa: F401  (its readers register the captures' formats: trt_trace/io/formats.py)
from .analysis import trace_summary as _trace_summary
from .native import _library
from .native import ops as _ops
from .native.ops import (
    dump_engine_timing,
    get_nvtx,
    get_profile_execution,
    reset,
    set_nvtx,
    set_profile_execution,
)
from .runtime import config as _config
from .runtime import inference as _inference
from .runtime import metrics as _metrics
from .runtime import on_demand as _on_demand
from .runtime import python_runtime as _python_runtime
from .runtime.inference import inference
from .runtime.session import Session, TraceError, active, dump, flight, layers, start, stop
from .schema.version import __version__

# Importing trt_trace installs everything: the execute_engine hook, torch.profiler scopes, the
# torch.ops.trt_trace ops and the torch.ops.tensorrt aliases (listed by dir() too), and the Python
# runtime's instrumentation (instrumented as torch_tensorrt imports it); and arms the process for
# `trt-trace capture` (runtime/on_demand.py; TRT_TRACE_ARM=0: not). Except inside the trt-trace
# command (trt_trace_cli.py), whose reading verbs never import torch.
if os.environ.get("_TRT_TRACE_CLI_READ_ONLY") != "1":
    _library.load_at_import()
    _python_runtime.install()
    _on_demand.arm()
    _inference.install()  # the AOTInductor package runner's calls as inferences (docs/inference.md)


@contextlib.contextmanager
def tracing(path: str | os.PathLike, **overrides: Any) -> Iterator[Session]:
    """Traces every engine call inside the block into `path`; the keywords are start()'s."""
    session = start(path, **overrides)
    try:
        yield session
    finally:
        stop()


def summary(path: str | None = None, phase: str = "total", json: bool = False, include_profiled: bool = False) -> str:
    """The per-engine timing table: of this process so far (no argument), or of a trace file.

    Its p50/p99 columns are per call, of the call's total or of `phase`: exact from a file (any of
    total, workspace, inputs, outputs, enqueue, gpu), from the live histograms within 3.1% (total
    or gpu). json=True returns the same table as JSON text. From a file, calls that ran under
    per-layer profiling (TRT_TRACE_LAYERS) are left out unless include_profiled=True (a line says
    how many); the live table counts every call."""
    if path is None:
        return _ops.timing_table(phase, json)
    return _trace_summary.summary_text(path, phase=phase, json=json, include_profiled=include_profiled)


def serve_metrics(port: int, addr: str = "127.0.0.1") -> tuple[str, int]:
    """Serves Prometheus metrics of the live counters at http://addr:port/metrics from now on (port 0:
    any free port) and turns counting on; returns the (host, port) served. Raises OSError for a busy
    port or an address that cannot be bound (TRT_TRACE_METRICS_PORT warns instead)."""
    return _metrics.serve(_config.MetricsSettings(port=int(port), addr=addr))


__all__ = [
    "Session",
    "__version__",
    "TraceError",
    "active",
    "dump",
    "dump_engine_timing",
    "flight",
    "get_nvtx",
    "get_profile_execution",
    "inference",
    "layers",
    "reset",
    "serve_metrics",
    "set_nvtx",
    "set_profile_execution",
    "start",
    "stop",
    "summary",
    "tracing",
]
