// The per-engine table's columns, shared by the live counters (stats/engine_stats.h), the table
// formatter (stats/timing_table.cpp) and the torch-free reader library (csrc/readers): no torch here.
#pragma once

#include "common/phases.h"

namespace trt_trace {

// Column order shared with the Python side (trt_trace/schema/records.py STATS_COLUMNS).
enum StatColumn : int {
  kStatCalls = 0,
  kStatErrors,
  kStatTotalNs,  // not counted: the host phases partition the call, so their sum is its total
#define TRT_TRACE_STAT_PHASE(Name, text) kStat##Name##Ns,
  TRT_TRACE_HOST_PHASES(TRT_TRACE_STAT_PHASE)  // kStatWorkspaceNs ... kStatEnqueueNs
#undef TRT_TRACE_STAT_PHASE
  kStatGpuNs,          // measured GPU spans only (added by the resolver when a span is placed)
  kStatGpuCalls,       // GPU spans measured
  kStatGpuSampledOut,  // CUDA calls that got no GPU events because of sampling (gpu_sampling.h)
  kNumStatColumns,
};

// The columns' names, as trt_trace/schema/records.py STATS_COLUMNS has them (a test compares the two).
// The column of host phase p (0: workspace, ... in common/phases.h order).
constexpr int host_phase_column(int p) { return kStatTotalNs + 1 + p; }

#define TRT_TRACE_STAT_NAME(Name, text) text "_ns",
inline constexpr const char* kStatColumnNames[] = {
    "calls", "errors", "total_ns", TRT_TRACE_HOST_PHASES(TRT_TRACE_STAT_NAME) "gpu_ns", "gpu_calls", "gpu_sampled_out",
};
#undef TRT_TRACE_STAT_NAME
static_assert(sizeof(kStatColumnNames) / sizeof(kStatColumnNames[0]) == kNumStatColumns,
              "a name for every StatColumn");

}  // namespace trt_trace
