"""Readers of other profilers' captures: torch.profiler Chrome traces and Nsight Systems SQLite exports.

    from trt_trace.captures import torch_profiler, nsys_sqlite, report
    calls = torch_profiler.read("prof.json")        # or nsys_sqlite.read("run.sqlite")
    print(report.engine_table(calls))               # per engine: host phases, kernels, exact kernel time

Each reader returns a model.CaptureCalls (numpy columns, one row per engine call) or raises a
one-line model.CaptureError. docs/captures.md says what is read and how calls and kernels are joined.
Importing the package registers both kinds as inputs of the reading verbs (trace_readers.py).
"""

from . import trace_readers  # noqa: F401  (registers the two capture formats with trt_trace/io/formats.py)
from .model import CaptureCalls, CaptureError, DeviceActivities

__all__ = ["CaptureCalls", "CaptureError", "DeviceActivities"]
