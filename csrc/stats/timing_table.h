// The per-engine timing table, as text and as JSON. One model (rows sorted by
// time, shares, cumulative shares) serves dump_engine_timing() (live C++
// counters and histograms) and `trt-trace summary` (numbers aggregated from a
// trace file by the Python side, its percentiles exact).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stats/stat_columns.h"

namespace trt_trace {

struct TimingRow {
  std::string engine;
  std::array<int64_t, kNumStatColumns> stats;
  int64_t p50_ns = -1;  // per-call percentiles of the table's duration (see TimingTable); -1: none
  int64_t p99_ns = -1;
  // GPU time scaled to every CUDA call (build_timing_table): the measured spans' mean times the
  // measured and sampled-out calls; the measured total where nothing was sampled out.
  int64_t gpu_scaled_ns = 0;
};

struct TimingTable {
  std::vector<TimingRow> rows;  // engines with calls, sorted by time, most first
  TimingRow all;                // every engine added up
  std::vector<double> share;    // each row's time in % of all engines' time
  std::vector<double> cumulative;
  std::string percentiles_of;   // "total" (the call) or a phase ("enqueue", "gpu", ...)
  bool any_gpu = false;
  int64_t gpu_every = 1;        // the sampling rate the figures were taken at (TRT_TRACE_GPU_EVERY); -1: several
  uint64_t dropped_events = 0;
  uint64_t threads_with_drops = 0;
};

// An engine's GPU time scaled to every CUDA call: the measured spans' mean times the measured and
// sampled-out calls (TRT_TRACE_GPU_EVERY); the measured total where nothing was sampled out. The one
// formula for the tables and the plot (torch.ops.trt_trace._scaled_gpu_ns).
int64_t scaled_gpu_ns(const std::array<int64_t, kNumStatColumns>& stats);

// An engine's time is the longer of its host and (scaled) GPU totals (a synchronous call contains
// its GPU work, an asynchronous one's GPU work outlasts its launch): rows are sorted by it and their
// shares are of it. Rows with no calls are left out. all_p50_ns/all_p99_ns: the percentiles over
// every call. gpu_every: the GPU-timing sampling setting, for the table's note (1: none). The ALL
// row's scaled GPU time is the sum of the rows' (each engine scaled by its own mean).
TimingTable build_timing_table(std::vector<TimingRow> rows, int64_t all_p50_ns, int64_t all_p99_ns,
                               std::string percentiles_of, uint64_t dropped_events, uint64_t threads_with_drops,
                               int64_t gpu_every = 1);

// The gpu column appears when any row has GPU spans; where calls were sampled out its figures are
// scaled, marked `~`, and a note under the table says how many calls were measured. dropped_events
// > 0 adds a line saying how much was lost and the fix.
std::string timing_table_text(const TimingTable& table);

// The same table as one JSON object (for dashboards and scripts): times in ms, null where a
// figure does not exist (no GPU spans, no calls). gpu_ms is the scaled figure, gpu_measured_ms the
// measured one, beside gpu_calls (spans measured) and gpu_sampled_out.
std::string timing_table_json(const TimingTable& table);

}  // namespace trt_trace
