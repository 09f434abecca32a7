#include "stats/engine_stats.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <new>

namespace trt_trace {

namespace {
thread_local EngineStats::Table* t_table = nullptr;  // trivially initialised: no guard on look-up
}  // namespace

// Gives the thread's table back when the thread exits (touched at its first use and at exit only).
struct StatsTableOwner {
  EngineStats::Table* table = nullptr;
  ~StatsTableOwner() {
    if (table != nullptr) EngineStats::instance().release(table);
    t_table = nullptr;
  }
};

namespace {
thread_local StatsTableOwner t_owner;
}  // namespace

EngineStats* EngineStats::create() {
  auto* s = new EngineStats();
  // A forked child must not inherit the lock held by a parent thread, nor keep
  // tables claimed by threads that do not exist there.
  pthread_atfork([] { EngineStats::instance().mutex_.lock(); },
                 [] { EngineStats::instance().mutex_.unlock(); },
                 [] {
                   EngineStats& self = EngineStats::instance();
                   for (auto& t : self.tables_) t->owned_ = t.get() == t_table;
                   self.mutex_.unlock();
                 });
  return s;
}

EngineStats::Table* EngineStats::this_thread() noexcept {
  if (C10_LIKELY(t_table != nullptr)) return t_table;
  Table* table = acquire();
  if (table != nullptr) {
    t_owner.table = table;
    t_table = table;
  }
  return table;
}

EngineStats::Table* EngineStats::acquire() noexcept {
  try {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& t : tables_) {
      if (!t->owned_) {
        t->owned_ = true;
        return t.get();
      }
    }
    auto table = std::make_unique<Table>();
    table->owned_ = true;
    tables_.push_back(std::move(table));
    return tables_.back().get();
  } catch (...) {
    return nullptr;  // out of memory: the thread's calls are traced but not counted
  }
}

void EngineStats::release(Table* table) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  table->owned_ = false;
}

EngineStats::Table::Row* EngineStats::Table::grow(uint32_t engine_id) noexcept {
  const uint32_t c = engine_id / kChunk;
  if (c >= kMaxChunks) return nullptr;
  if (void* mem = std::calloc(1, sizeof(HistChunk))) {
    hist_chunks_[c].store(new (mem) HistChunk, std::memory_order_release);  // default-init: stays zero
  }
  auto* chunk = new (std::nothrow) Chunk();
  if (chunk == nullptr) return nullptr;
  chunks_[c].store(chunk, std::memory_order_release);  // readers see the zeroed rows first
  return &chunk->rows[engine_id % kChunk];
}

std::vector<std::array<int64_t, kNumStatColumns>> EngineStats::sum_locked(uint32_t num_engines) const {
  std::vector<std::array<int64_t, kNumStatColumns>> out(num_engines);
  for (const auto& t : tables_) {
    for (uint32_t c = 0; c * Table::kChunk < num_engines && c < Table::kMaxChunks; ++c) {
      const Table::Chunk* chunk = t->chunks_[c].load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      const uint32_t end = std::min(num_engines, (c + 1) * Table::kChunk);
      for (uint32_t id = c * Table::kChunk; id < end; ++id) {
        const Table::Row& row = chunk->rows[id % Table::kChunk];
        for (int k = 0; k < kNumStatColumns; ++k) out[id][k] += row[k].load(std::memory_order_relaxed);
      }
    }
  }
  return out;
}

std::vector<int64_t> EngineStats::sum_histograms_locked(uint32_t num_engines, int series) const {
  constexpr int kB = histogram::kBuckets;
  std::vector<int64_t> out(static_cast<size_t>(num_engines) * kB);
  for (const auto& t : tables_) {
    for (uint32_t c = 0; c * Table::kChunk < num_engines && c < Table::kMaxChunks; ++c) {
      const Table::HistChunk* chunk = t->hist_chunks_[c].load(std::memory_order_acquire);
      if (chunk == nullptr) continue;
      const uint32_t end = std::min(num_engines, (c + 1) * Table::kChunk);
      for (int b = 0; b < kB; ++b) {
        const auto& counts = chunk->counts[series][b];
        for (uint32_t id = c * Table::kChunk; id < end; ++id) {
          out[static_cast<size_t>(id) * kB + b] += counts[id % Table::kChunk].load(std::memory_order_relaxed);
        }
      }
    }
  }
  return out;
}

std::vector<int64_t> EngineStats::histograms(uint32_t num_engines, int series) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto out = sum_histograms_locked(num_engines, series);
  const auto& base = hist_baseline_[series];
  for (size_t i = 0; i < std::min(out.size(), base.size()); ++i) out[i] -= base[i];
  return out;
}

std::vector<std::array<int64_t, kNumStatColumns>> EngineStats::snapshot(uint32_t num_engines) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto out = sum_locked(num_engines);
  for (uint32_t id = 0; id < num_engines; ++id) {
    auto& row = out[id];
    if (id < baseline_.size()) {
      for (int k = 0; k < kNumStatColumns; ++k) row[k] -= baseline_[id][k];
    }
    row[kStatTotalNs] = 0;
    for (int p = 0; p < kNumHostPhases; ++p) row[kStatTotalNs] += row[host_phase_column(p)];
  }
  return out;
}

void EngineStats::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  gpu::g_rate_in_stats.store(0, std::memory_order_relaxed);  // the sampled-out counts start again
  uint32_t rows = 0;  // every engine id any table has a row for
  for (const auto& t : tables_) {
    for (uint32_t c = 0; c < Table::kMaxChunks; ++c) {
      if (t->chunks_[c].load(std::memory_order_acquire) != nullptr) rows = std::max(rows, (c + 1) * Table::kChunk);
    }
  }
  baseline_ = sum_locked(rows);
  for (int s = 0; s < kNumHistSeries; ++s) hist_baseline_[s] = sum_histograms_locked(rows, s);
}

}  // namespace trt_trace
