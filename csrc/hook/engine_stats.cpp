#include "hook/engine_stats.h"

namespace trt_trace {

EngineStats::Row* EngineStats::row(uint32_t engine_id) noexcept {
  const uint32_t c = engine_id / kChunk;
  if (c >= kMaxChunks) return nullptr;
  Chunk* chunk = chunks_[c].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    std::lock_guard<std::mutex> lock(grow_mutex_);
    chunk = chunks_[c].load(std::memory_order_acquire);
    if (chunk == nullptr) {
      chunk = new (std::nothrow) Chunk();
      if (chunk == nullptr) return nullptr;
      chunks_[c].store(chunk, std::memory_order_release);
    }
  }
  return &chunk->rows[engine_id % kChunk];
}

void EngineStats::add_call(uint32_t engine_id, int64_t total_ns,
                           const std::array<int64_t, kNumHostPhases>& phase_ns,
                           bool error) noexcept {
  Row* r = row(engine_id);
  if (r == nullptr) return;
  constexpr auto relaxed = std::memory_order_relaxed;
  r->v[kStatCalls].fetch_add(1, relaxed);
  if (error) r->v[kStatErrors].fetch_add(1, relaxed);
  r->v[kStatTotalNs].fetch_add(total_ns, relaxed);
  for (int p = 0; p < kNumHostPhases; ++p) {
    if (phase_ns[p] != 0) r->v[kStatWorkspaceNs + p].fetch_add(phase_ns[p], relaxed);
  }
}

void EngineStats::add_gpu(uint32_t engine_id, int64_t gpu_ns) noexcept {
  Row* r = row(engine_id);
  if (r == nullptr) return;
  r->v[kStatGpuNs].fetch_add(gpu_ns, std::memory_order_relaxed);
  r->v[kStatGpuCalls].fetch_add(1, std::memory_order_relaxed);
}

std::vector<std::array<int64_t, kNumStatColumns>> EngineStats::snapshot(uint32_t num_engines) const {
  std::vector<std::array<int64_t, kNumStatColumns>> out(num_engines);
  for (uint32_t id = 0; id < num_engines; ++id) {
    const Chunk* chunk = chunks_[id / kChunk].load(std::memory_order_acquire);
    for (int c = 0; c < kNumStatColumns; ++c) {
      out[id][c] = chunk ? chunk->rows[id % kChunk].v[c].load(std::memory_order_relaxed) : 0;
    }
  }
  return out;
}

void EngineStats::reset() noexcept {
  for (auto& slot : chunks_) {
    Chunk* chunk = slot.load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    for (auto& r : chunk->rows) {
      for (auto& v : r.v) v.store(0, std::memory_order_relaxed);
    }
  }
}

}  // namespace trt_trace
