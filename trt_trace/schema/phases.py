"""The phase list, once for Python (its C++ twin is csrc/common/phases.h; tests/test_phase_model.py and
tests/test_ring_buffer.py check that the two agree): what a record's phase means, each phase's slice name,
which are host phases, the durations tables report, the engine table's columns and the plot's colours are all
derived from PHASES, and so are the readers' columns (io/readers/columns.py), the captures' phase codes
(captures/model.py) and the values of the record kinds past the phases (LAYER_RECORD, INFERENCE_RECORD). A new
host phase is one row here, one line in csrc/common/phases.h and where it begins in the call scope
(csrc/hook/call_scope.h): docs/architecture.md#adding-a-host-phase-or-an-output-format.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


@dataclass(frozen=True)
class PhaseInfo:
    name: str  # Phase member name
    slice_name: str  # the slice's name in both trace formats
    host: bool  # one of the host phases that partition a call
    gpu: bool  # a span on the engine's GPU track
    color: str | None = None  # summary --plot's bar colour (host phases)


# Record.phase, in order (its value is the index).
PHASES = (
    PhaseInfo("CALL", "execute_engine", host=False, gpu=False),
    PhaseInfo("WORKSPACE", "workspace", host=True, gpu=False, color="#E69F00"),
    PhaseInfo("INPUTS", "inputs", host=True, gpu=False, color="#56B4E9"),
    PhaseInfo("OUTPUTS", "outputs", host=True, gpu=False, color="#009E73"),
    PhaseInfo("ENQUEUE", "enqueue", host=True, gpu=False, color="#0072B2"),
    PhaseInfo("GPU", "gpu", host=False, gpu=True),
    PhaseInfo("CALLER_WAIT", "caller stream wait", host=False, gpu=True),
)

Phase = IntEnum("Phase", [(p.name, i) for i, p in enumerate(PHASES)], module=__name__, qualname="Phase")
Phase.__doc__ = "Record.phase (csrc/common/phases.h). The host phases partition each call."
Phase.slice_name = property(lambda self: PHASE_NAMES[self])  # type: ignore[attr-defined]

# A record kind past the public phases (csrc/common/record.h Phase::kLayer): one layer of a call profiled per
# layer (TRT_TRACE_LAYERS, docs/layers.md). It reaches the trace, but through a formatter of its own
# (csrc/ops/layer_format.cpp) on tracks of its own (tracks.TrackBook.place_layers), never as a phase of a call
# or a column of the table, so it is not in PHASES.
# After the public phases come C++'s internal kinds (kGpuPending, kCallerWaitPending, kPhaseBounds), then this one.
LAYER_RECORD = len(PHASES) + 3
# Another (Phase::kInference): one whole inference (docs/inference.md), a package runner's call or a traced
# module's forward, on a track of its calling thread; engine_id 0, `stream` its kind.
INFERENCE_RECORD = LAYER_RECORD + 1

# A record's slice name in both formats, by Phase.
PHASE_NAMES = tuple(p.slice_name for p in PHASES)
# Spans on an engine's GPU track: its own GPU work and, where it ran on a stream of its own, what the
# caller's stream waited for it (containing the first).
GPU_PHASES = tuple(Phase(i) for i, p in enumerate(PHASES) if p.gpu)
HOST_PHASES = tuple(p.slice_name for p in PHASES if p.host)
# The durations of a call that tables and diffs report: its host time, its host phases, its GPU span.
DURATIONS = ("total", *HOST_PHASES, "gpu")
# summary --plot's colour of each host phase.
PHASE_COLORS = {p.slice_name: p.color for p in PHASES if p.host}

# Columns of torch.ops.trt_trace._engine_stats() (csrc/stats/stat_columns.h StatColumn, made from the same list).
STATS_COLUMNS = (
    "calls",
    "errors",
    "total_ns",
    *(f"{phase}_ns" for phase in HOST_PHASES),
    "gpu_ns",  # measured GPU spans only
    "gpu_calls",  # GPU spans measured
    "gpu_sampled_out",  # CUDA calls without GPU events because of sampling (TRT_TRACE_GPU_EVERY)
)
# The ns columns of a call summed into the table: (column, index into DURATIONS) for the total and host phases.
NS_STAT_COLUMNS = tuple((f"{d}_ns", i) for i, d in enumerate(DURATIONS) if d != "gpu")
