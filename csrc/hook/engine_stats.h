// Per-engine aggregate counters, kept in C++ so the timing table is available
// at any moment without draining the rings (dump_engine_timing()).
//
// Counters live in fixed chunks that are never moved or freed, so the hot path
// updates them with relaxed atomic adds and no lock; the lock is taken only to
// add a chunk when an engine id crosses into a new one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/record.h"

namespace trt_trace {

// Column order shared with the Python side (trt_trace/records.py STATS_COLUMNS).
enum StatColumn : int {
  kStatCalls = 0,
  kStatErrors,
  kStatTotalNs,
  kStatWorkspaceNs,
  kStatInputsNs,
  kStatOutputsNs,
  kStatEnqueueNs,
  kStatGpuNs,
  kStatGpuCalls,
  kNumStatColumns,
};

class EngineStats {
 public:
  static EngineStats& instance() {
    static EngineStats* stats = new EngineStats();  // leaked: worker threads may record during exit
    return *stats;
  }

  // One finished call: host phase durations in workspace, inputs, outputs, enqueue order.
  void add_call(uint32_t engine_id, int64_t total_ns,
                const std::array<int64_t, kNumHostPhases>& phase_ns, bool error) noexcept;
  void add_gpu(uint32_t engine_id, int64_t gpu_ns) noexcept;

  // Row i = engine id i (row 0 unused), kNumStatColumns int64 columns.
  std::vector<std::array<int64_t, kNumStatColumns>> snapshot(uint32_t num_engines) const;
  void reset() noexcept;

 private:
  static constexpr uint32_t kChunk = 256;
  static constexpr uint32_t kMaxChunks = 4096;  // 1M engine ids
  struct Row {
    std::array<std::atomic<int64_t>, kNumStatColumns> v{};
  };
  struct Chunk {
    std::array<Row, kChunk> rows;
  };
  Row* row(uint32_t engine_id) noexcept;

  std::mutex grow_mutex_;
  std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
};

}  // namespace trt_trace
