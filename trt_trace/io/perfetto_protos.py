"""The `perfetto` package's generated protos, which the Perfetto writer and reader both use."""

from __future__ import annotations

from functools import cache
from types import ModuleType


@cache
def protos() -> ModuleType:
    """perfetto_trace_pb2, imported on first use (it takes a while)."""
    # heavy: only a Perfetto file (written or read) needs it, never `import trt_trace` or a JSON session
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    return perfetto_trace_pb2


def text(value: str | bytes) -> str:
    """A string field as text. upb hands back a proto2 string field's raw bytes when they are not
    UTF-8 (proto2 does not check them), so a damaged or foreign file must be read through this."""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
