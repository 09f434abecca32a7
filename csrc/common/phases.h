// The phase list, once for C++ (Python: trt_trace/schema/phases.py; tests/test_phase_model.py checks the two agree).
//
// Record.phase (common/record.h), the slice and range names (the formatters, the readers, NVTX, the
// profiler scopes), the host phases that partition a call (the call layout, the call joiner), the engine
// table's columns (stats/stat_columns.h) and the table's header (stats/timing_table.cpp) are all made from
// these two lists, and so are the record values of the kinds past them (common/record.h), the call's ring
// slots (buffer/call_layout.h), the live counters (stats/engine_stats.h) and the readers' columns
// (readers/read_types.h). A new host phase is one line in TRT_TRACE_HOST_PHASES, one row in
// trt_trace/schema/phases.py, and where it begins in the call scope (hook/call_scope.h); docs/architecture.md
// has the recipe and the file list it took.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

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
static_assert(kNumHostPhases >= 2, "the host phases partition a call at one boundary at least");

// A call's inner phase boundaries: where each host phase after the first begins (the first begins with the
// call, the last ends with it).
constexpr int kNumInnerBounds = kNumHostPhases - 1;

// f(std::integral_constant<int, p>{}) for each host phase p, in order, expanded at compile time: the hot
// path's per-phase work (the call's durations, its counters) stays straight-line code, whatever the count.
// (No torch here: the reader library includes this too.)
template <typename F, int... P>
__attribute__((always_inline)) inline void for_each_host_phase_(F& f, std::integer_sequence<int, P...>) {
  (f(std::integral_constant<int, P>{}), ...);
}
template <typename F>
__attribute__((always_inline)) inline void for_each_host_phase(F&& f) {
  for_each_host_phase_(f, std::make_integer_sequence<int, kNumHostPhases>{});
}

}  // namespace trt_trace
