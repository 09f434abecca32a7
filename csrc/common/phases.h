// The phase list, once for C++ (Python: trt_trace/schema/phases.py; tests/test_phase_model.py checks the two agree).
//
// Record.phase (common/record.h), the slice and range names (the formatters, the readers, NVTX, the
// profiler scopes), the host phases that partition a call (the call layout, the call joiner), the engine
// table's columns (stats/stat_columns.h) and the table's header (stats/timing_table.cpp) are all made from
// these two lists. A new host phase is one line in TRT_TRACE_HOST_PHASES (and one in trt_trace/schema/phases.py).
#pragma once

#include <cstdint>

// X(Name, "slice name") of each host phase, in order: they partition every call.
#define TRT_TRACE_HOST_PHASES(X) \
  X(Workspace, "workspace")      \
  X(Inputs, "inputs")            \
  X(Outputs, "outputs")          \
  X(Enqueue, "enqueue")

// Every phase a record leaves C++ with, in Record.phase order: the call, its host phases, its GPU spans
// (the engine's own work; where it ran on a stream of its own, what the caller's stream waited for it).
#define TRT_TRACE_PUBLIC_PHASES(X) \
  X(Call, "execute_engine")        \
  TRT_TRACE_HOST_PHASES(X)         \
  X(Gpu, "gpu")                    \
  X(CallerWait, "caller stream wait")

namespace trt_trace {

#define TRT_TRACE_COUNT_PHASE(Name, text) +1
constexpr int kNumHostPhases = 0 TRT_TRACE_HOST_PHASES(TRT_TRACE_COUNT_PHASE);
constexpr int kNumPublicPhases = 0 TRT_TRACE_PUBLIC_PHASES(TRT_TRACE_COUNT_PHASE);
#undef TRT_TRACE_COUNT_PHASE

// Slice / range names by Phase value (kCall..kCallerWait).
#define TRT_TRACE_PHASE_NAME(Name, text) text,
inline constexpr const char* kPhaseNames[] = {TRT_TRACE_PUBLIC_PHASES(TRT_TRACE_PHASE_NAME)};
#undef TRT_TRACE_PHASE_NAME
static_assert(sizeof(kPhaseNames) / sizeof(kPhaseNames[0]) == kNumPublicPhases, "a name per public phase");

}  // namespace trt_trace
