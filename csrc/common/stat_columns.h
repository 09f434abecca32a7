// The per-engine table's columns, shared by the live counters (hook/engine_stats.h), the table
// formatter (ops/timing_table.cpp) and the torch-free reader library (csrc/readers): no torch here.
#pragma once

namespace trt_trace {

// Column order shared with the Python side (trt_trace/records.py STATS_COLUMNS).
enum StatColumn : int {
  kStatCalls = 0,
  kStatErrors,
  kStatTotalNs,  // not counted: the host phases partition the call, so their sum is its total
  kStatWorkspaceNs,
  kStatInputsNs,
  kStatOutputsNs,
  kStatEnqueueNs,
  kStatGpuNs,          // measured GPU spans only (added by the resolver when a span is placed)
  kStatGpuCalls,       // GPU spans measured
  kStatGpuSampledOut,  // CUDA calls that got no GPU events because of sampling (gpu_sampling.h)
  kNumStatColumns,
};

// The columns' names, as trt_trace/records.py STATS_COLUMNS has them (a test compares the two).
inline constexpr const char* kStatColumnNames[] = {
    "calls", "errors", "total_ns", "workspace_ns", "inputs_ns", "outputs_ns", "enqueue_ns",
    "gpu_ns", "gpu_calls", "gpu_sampled_out",
};
static_assert(sizeof(kStatColumnNames) / sizeof(kStatColumnNames[0]) == kNumStatColumns,
              "a name for every StatColumn");

}  // namespace trt_trace
