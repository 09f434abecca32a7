"""The names every part of trt_trace agrees on: what a record's phase (phases.py) and flags mean (mirroring
csrc/common/record.h), and the words both trace formats use, so that writers, readers, merge, the
CLI and the tests share one definition and no reader has to import a writer.

The file layouts themselves (tracks, metadata, parts) are in docs/trace-formats.md.
"""

from __future__ import annotations

from enum import IntFlag

# The phase list is trt_trace/schema/phases.py's (one module); these names stay importable from here.
from .phases import DURATIONS, GPU_PHASES, HOST_PHASES, PHASE_NAMES, Phase  # noqa: E402, F401


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
LAYER_CATEGORY = "trt_trace.layer"  # layer slices (JSON `cat`): never counted as a call or phase by name
INFERENCE_CATEGORY = "trt_trace.inference"  # inference slices (docs/inference.md): never an engine call
INFERENCE_NAME = "inference"  # their slice name, and their track's: "inference · <thread>"
INFERENCE_KINDS = {1: "aoti", 2: "module"}  # an inference record's `stream` -> its `kind` arg
LAYERS_TRACK = "layers"  # an engine's layer track: "<engine> layers" (JSON), "layers" under the engine (native)

JSON_SUFFIX = ".json"
PERFETTO_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb")
# The first track of a merge written as a Perfetto trace (writers/perfetto_view.py): a view for the
# Perfetto UI, which trt_trace's readers refuse in one line (its layout is not the native writer's).
MERGED_VIEW_TRACK = "trt_trace merged view"

# Native traces: an engine's track uuid (the reader gets the engine id back from it).
ENGINE_UUID_BASE = 1 << 32
# A native Perfetto trace's inference tracks (docs/inference.md): uuid INFERENCE_UUID_BASE + n for the n-th calling
# thread, past any lane's and below the engines' (the readers' fast path hands their slices to Python by this range).
INFERENCE_UUID_BASE = 1 << 31
# Native traces: slice annotation names, interned in this order (iid = index + 1), as
# csrc/format/perfetto_slices.h's SliceAnnotation (and csrc/session/perfetto_trace.cpp's list of the names) and
# csrc/readers/perfetto_packets.cpp's AnnKind number them.
ANNOTATIONS = ("engine", "call_id", "thread", "device", "stream", "error", "nested", "captured", "engine_stream")
