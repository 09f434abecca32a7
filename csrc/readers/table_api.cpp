// The per-engine table for readers that never load torch (`trt-trace summary`): the same C++
// formatter as dump_engine_timing() and the torch op (stats/timing_table.cpp, compiled into both
// libraries), behind a C interface that trt_trace/io/readers/native.py calls through ctypes.
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "stats/timing_table.h"
#include "readers/read_types.h"

using namespace trt_trace;

namespace {

std::vector<TimingRow> rows_of(const char* names, const int64_t* name_off, int64_t n, const int64_t* stats,
                               const int64_t* percentiles) {
  std::vector<TimingRow> rows;
  rows.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    TimingRow r{std::string(names + name_off[i], static_cast<size_t>(name_off[i + 1] - name_off[i])), {}};
    for (int c = 0; c < kNumStatColumns; ++c) r.stats[c] = stats[i * kNumStatColumns + c];
    if (percentiles) {
      r.p50_ns = percentiles[2 * i];
      r.p99_ns = percentiles[2 * i + 1];
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

// The table as text (json == 0) or JSON into out; returns its length (all of it is written only
// where it fits in cap: call again with a larger buffer otherwise).
TT_API int64_t tt_format_table(const char* names, const int64_t* name_off, int64_t n, const int64_t* stats,
                               const int64_t* percentiles, int64_t all_p50, int64_t all_p99,
                               const char* percentiles_of, int32_t json, int64_t gpu_every, int64_t dropped,
                               int64_t threads_with_drops, char* out, int64_t cap) {
  TimingTable table = build_timing_table(rows_of(names, name_off, n, stats, percentiles), all_p50, all_p99,
                                         percentiles_of, static_cast<uint64_t>(dropped),
                                         static_cast<uint64_t>(threads_with_drops), std::max<int64_t>(gpu_every, 1));
  const std::string text = json ? timing_table_json(table) : timing_table_text(table);
  if (static_cast<int64_t>(text.size()) <= cap) std::memcpy(out, text.data(), text.size());
  return static_cast<int64_t>(text.size());
}

// Each row's GPU ns scaled to all its CUDA calls (timing_table.h: the one formula).
TT_API void tt_scaled_gpu_ns(const int64_t* stats, int64_t n, int64_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    std::array<int64_t, kNumStatColumns> row;
    for (int c = 0; c < kNumStatColumns; ++c) row[c] = stats[i * kNumStatColumns + c];
    out[i] = scaled_gpu_ns(row);
  }
}

// sizeof and field offsets of Slice and Call, for the test against trt_trace/io/readers/columns.py.
TT_API int64_t tt_layout(int64_t* out, int64_t cap) {
  const int64_t v[] = {
      sizeof(Slice), offsetof(Slice, pid), offsetof(Slice, tid), offsetof(Slice, name_off), offsetof(Slice, kind),
      offsetof(Slice, has_device), sizeof(Call), offsetof(Call, ns), offsetof(Call, wait_ns), offsetof(Call, call_id),
      offsetof(Call, pid), offsetof(Call, engine_id), offsetof(Call, thread_id), offsetof(Call, device),
      offsetof(Call, flags)};
  const int64_t n = sizeof(v) / sizeof(v[0]);
  for (int64_t i = 0; i < n && i < cap; ++i) out[i] = v[i];
  return n;
}
