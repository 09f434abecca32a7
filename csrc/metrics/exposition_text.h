// The /metrics text: the per-engine counters and duration histograms in Prometheus' text format
// (version 0.0.4), formatted in C++ so that a scrape needs no Python and never waits for the GIL.
//
// Metric names, labels, HELP texts, sample order and numbers are those prometheus_client wrote for
// the collector this replaces (tests/legacy_metrics.py keeps it as the oracle; tests/test_metrics_text.py
// compares the two byte for byte): engines that share a name are added up, engines with no call
// are left out, the GPU families hold only engines with GPU spans or sampled-out calls.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "stats/engine_stats.h"
#include "stats/stat_columns.h"

namespace trt_trace {
namespace metrics {

// Prometheus' histogram bounds: powers of two from 2^10 ns (~1 us) to 2^35 ns (~34 s). They are
// bounds of the live histograms' buckets too (duration_histogram.h), so every count is exact.
constexpr int kFirstBoundExp = 10;
constexpr int kLastBoundExp = 35;

// One scrape's inputs, indexed by engine id (0: no engine). Rows of stats and histograms may be
// fewer than names (engines register meanwhile): only ids present in all of them are shown.
struct EngineCounters {
  std::vector<std::string> names;
  std::vector<std::array<int64_t, kNumStatColumns>> stats;
  std::array<std::vector<int64_t>, kNumHistSeries> histograms;  // id * histogram::kBuckets + bucket
  uint64_t dropped_events = 0;
};

// This process's counters now (since the last reset()), as dump_engine_timing() reads them.
EngineCounters live_counters();

// The exposition text of `counters`, appended to `out`.
void append_exposition_text(std::string& out, const EngineCounters& counters);

}  // namespace metrics
}  // namespace trt_trace
