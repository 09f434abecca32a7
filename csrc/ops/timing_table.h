// The per-engine timing table, as text. One formatter serves both
// dump_engine_timing() (live C++ counters) and `trt-trace summary` (numbers
// aggregated from a trace file by the Python side).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hook/engine_stats.h"

namespace trt_trace {

struct TimingRow {
  std::string engine;
  std::array<int64_t, kNumStatColumns> stats;
};

// Rows with no calls are left out; the rest are sorted by total time, largest
// first, followed by an ALL row. The gpu column appears when any row has GPU
// spans. dropped_events > 0 adds a line saying how much was lost and the fix.
std::string format_timing_table(std::vector<TimingRow> rows, uint64_t dropped_events, uint64_t threads_with_drops);

}  // namespace trt_trace
