"""The names every part of trt_trace agrees on: what a record's phase and flags mean (mirroring
csrc/common/record.h), and the words both trace formats use, so that writers, readers, merge, the
CLI and the tests share one definition and no reader has to import a writer.

The file layouts themselves (tracks, metadata, parts) are in docs/trace-formats.md.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class Phase(IntEnum):
    """Record.phase (csrc/common/record.h). The four host phases partition each call."""

    CALL = 0
    WORKSPACE = 1
    INPUTS = 2
    OUTPUTS = 3
    ENQUEUE = 4
    GPU = 5
    CALLER_WAIT = 6

    @property
    def slice_name(self) -> str:
        return PHASE_NAMES[self]


# A record's slice name in both formats, by Phase.
PHASE_NAMES = ("execute_engine", "workspace", "inputs", "outputs", "enqueue", "gpu", "caller stream wait")
# Spans on an engine's GPU track: its own GPU work and, where it ran on a stream of its own, what the
# caller's stream waited for it (containing the first).
GPU_PHASES = (Phase.GPU, Phase.CALLER_WAIT)
HOST_PHASES = PHASE_NAMES[Phase.WORKSPACE : Phase.ENQUEUE + 1]
# The durations of a call that tables and diffs report: its host time, its host phases, its GPU span.
DURATIONS = ("total", *HOST_PHASES, "gpu")


class Flag(IntFlag):
    """Record.flags bits (csrc/common/record.h RecordFlags)."""

    ERROR = 1 << 0  # the engine call threw; its slices were closed at the throw
    NESTED = 1 << 1  # an execute_engine call made from inside another traced call
    CAPTURED = 1 << 2  # issued while its stream was capturing a CUDA graph
    ENGINE_STREAM = 1 << 3  # GPU records: the span is on the engine's own stream, not the caller's


NO_DEVICE = 0xFFFF  # Record.device of a call on the CPU

CATEGORY = "trt_trace"  # every slice's category (JSON `cat`)
METADATA_EVENT = "trt_trace_metadata"  # the start and end metadata (JSON M events, Perfetto instants)
FLOW_NAME = "launch"  # the flow from a call's enqueue slice to its GPU slice (flow id = call id)

FORMATS = ("json", "perfetto")
JSON_SUFFIX = ".json"
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb")

# Native traces: an engine's track uuid (the reader gets the engine id back from it).
ENGINE_UUID_BASE = 1 << 32
# Native traces: slice annotation names, interned in this order (iid = index + 1), as
# csrc/ops/perfetto_format.cpp's Annotation and csrc/readers/perfetto_packets.cpp's AnnKind number them.
ANNOTATIONS = ("engine", "call_id", "thread", "device", "stream", "error", "nested", "captured", "engine_stream")
