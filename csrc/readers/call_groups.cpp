// The per-chunk work of a summary in one native pass over the joined calls (Call rows, read_types.h, which
// numpy can only read field by field, each a strided copy): the calls grouped by (pid, engine id),
// each group's table sums (STATS_COLUMNS), and the durations whose exact values are kept, gathered
// group by group for the value counts (trt_trace/io/readers/value_counts.py).
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "readers/read_types.h"
#include "stats/stat_columns.h"

using namespace trt_trace;

// The stats rows' columns are StatColumn (stats/stat_columns.h, as trt_trace/schema/phases.py STATS_COLUMNS);
// the last, gpu_sampled_out, counted wherever a CUDA call has no GPU span (a summary reports it only where
// GPU timing was sampled).
constexpr int kNumGroupStats = kNumStatColumns;

// calls[0, n) grouped by (pid << 32 | engine id), groups in key order. cols[0, n_cols): the Call::ns
// columns (CallColumn) whose values are gathered; the GPU column only where a call has a span.
// Outputs, where the number of groups g returned is <= cap (else call again with cap = g):
// keys[g]; stats[g * kNumStatColumns] (StatColumn); counts[k * cap + group]: how many values column k has in
// each group; values[k * n + ...]: column k's values, group after group, in call order.
TT_API int64_t tt_call_groups(const Call* calls, int64_t n, const int32_t* cols, int32_t n_cols, uint64_t* keys,
                              int64_t* stats, int64_t* counts, int64_t* values, int64_t cap) {
  std::vector<uint64_t> found;  // distinct keys in order of first appearance
  std::vector<uint32_t> group(static_cast<size_t>(n));
  std::unordered_map<uint64_t, uint32_t> many;  // past a few groups: a hash instead of the scan
  uint64_t last_key = ~0ull;
  uint32_t last_group = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t key = static_cast<uint64_t>(calls[i].pid) << 32 | calls[i].engine_id;
    if (key != last_key) {
      uint32_t g = static_cast<uint32_t>(found.size());
      if (found.size() <= 16) {
        for (uint32_t k = 0; k < found.size(); ++k) {
          if (found[k] == key) {
            g = k;
            break;
          }
        }
        if (g == found.size()) {
          found.push_back(key);
          if (found.size() > 16) {
            for (uint32_t k = 0; k < found.size(); ++k) many[found[k]] = k;
          }
        }
      } else {
        auto [it, fresh] = many.emplace(key, g);
        if (fresh) found.push_back(key);
        g = it->second;
      }
      last_key = key;
      last_group = g;
    }
    group[static_cast<size_t>(i)] = last_group;
  }
  const int64_t n_groups = static_cast<int64_t>(found.size());
  if (n_groups > cap) return n_groups;
  // Groups in key order: rank[first-appearance index] = sorted position.
  std::vector<uint32_t> order(found.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return found[a] < found[b]; });
  std::vector<uint32_t> rank(found.size());
  for (uint32_t k = 0; k < order.size(); ++k) {
    rank[order[k]] = k;
    keys[k] = found[order[k]];
  }
  std::fill(stats, stats + n_groups * kNumGroupStats, 0);
  std::fill(counts, counts + static_cast<int64_t>(n_cols) * cap, 0);
  for (int64_t i = 0; i < n; ++i) {
    const Call& c = calls[i];
    const uint32_t g = rank[group[static_cast<size_t>(i)]];
    group[static_cast<size_t>(i)] = g;
    int64_t* st = stats + g * kNumGroupStats;
    const bool has_gpu = c.ns[kNsGpu] != -1;
    st[kStatCalls] += 1;
    st[kStatErrors] += (c.flags & kCallError) != 0;
    st[kStatTotalNs] += c.ns[kNsTotal];
    for (int p = 0; p < kNumHostPhases; ++p) st[host_phase_column(p)] += c.ns[kNsFirstHostPhase + p];
    if (has_gpu) {
      st[kStatGpuNs] += c.ns[kNsGpu];
      st[kStatGpuCalls] += 1;
    } else if ((c.flags & kCallOnCuda) && !(c.flags & (kCallError | kCallCaptured))) {
      st[kStatGpuSampledOut] += 1;
    }
    for (int32_t k = 0; k < n_cols; ++k) {
      if (cols[k] != kNsGpu || has_gpu) counts[k * cap + g] += 1;
    }
  }
  std::vector<int64_t> at(static_cast<size_t>(n_groups));
  for (int32_t k = 0; k < n_cols; ++k) {
    int64_t sum = 0;
    for (int64_t g = 0; g < n_groups; ++g) {
      at[static_cast<size_t>(g)] = sum;
      sum += counts[k * cap + g];
    }
    int64_t* out = values + k * n;
    const int col = cols[k];
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = calls[i].ns[col];
      if (col == kNsGpu && v == -1) continue;
      out[at[group[static_cast<size_t>(i)]]++] = v;
    }
  }
  return n_groups;
}
