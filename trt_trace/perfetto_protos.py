"""The `perfetto` package's generated protos, which the Perfetto writer and reader both use."""

from __future__ import annotations

from functools import cache
from types import ModuleType


@cache
def protos() -> ModuleType:
    """perfetto_trace_pb2, imported on first use (it takes a while)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2
