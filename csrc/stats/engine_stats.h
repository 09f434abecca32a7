// Per-engine aggregate counters, kept in C++ so the timing table is available
// at any moment without draining the rings (dump_engine_timing()).
//
// Each thread counts into a table of its own, as it records into a ring of its
// own: the hot path adds with a relaxed load and store (no atomic
// read-modify-write, no lock) and writes no cache line that another thread
// writes. Shared per-engine counters would bounce between the cores of the
// threads that call one engine, the usual serving set-up. A snapshot sums every
// table; reset() takes a snapshot as the baseline that later snapshots
// subtract, so only a table's owner ever writes it. A table whose thread exited
// goes to the next new thread with its counts kept: memory is bounded by the
// peak number of counting threads. Rows live in chunks that are never moved or
// freed; only the owner adds one.
//
// Beside its counters each engine row has two duration histograms (the call's
// host total and its GPU span; duration_histogram.h) for live percentiles,
// updated the same way: one bucket index and one relaxed load and store.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <c10/macros/Macros.h>

#include "common/leaked.h"
#include "common/record.h"
#include "stats/stat_columns.h"
#include "stats/duration_histogram.h"
#include "stats/gpu_sampling.h"

namespace trt_trace {

// The duration histograms of an engine row.
enum HistogramSeries : int {
  kHistTotal = 0,  // the call's host time (the sum of its phases)
  kHistGpu,        // its GPU span
  kNumHistSeries,
};

class EngineStats : public Leaked<EngineStats> {
 public:
  // One thread's counters. Written by its owner only.
  class Table {
   public:
    // One finished call: host phase durations in common/phases.h order (unrolled: for_each_host_phase).
    // Always inlined: one per traced call (the lambda of for_each_host_phase made GCC keep it out of line).
    C10_ALWAYS_INLINE void add_call(uint32_t engine_id, const std::array<int64_t, kNumHostPhases>& phase_ns,
                                    bool error) noexcept {
      Row* r = row(engine_id);
      if (C10_UNLIKELY(r == nullptr)) return;
      add((*r)[kStatCalls], 1);
      if (C10_UNLIKELY(error)) add((*r)[kStatErrors], 1);
      int64_t total = 0;
      for_each_host_phase([&](auto phase) {
        constexpr int p = decltype(phase)::value;
        add((*r)[host_phase_column(p)], phase_ns[p]);
        total += phase_ns[p];
      });
      add_duration(engine_id, kHistTotal, total);
    }
    void add_gpu(uint32_t engine_id, int64_t gpu_ns) noexcept {
      Row* r = row(engine_id);
      if (r == nullptr) return;
      add((*r)[kStatGpuNs], gpu_ns);
      add((*r)[kStatGpuCalls], 1);
      add_duration(engine_id, kHistGpu, gpu_ns);
    }
    // GPU-timing sampling, 1 call in `every` (gpu_sampling.h): whether this CUDA call of the engine
    // gets GPU events. A countdown in the row: the first call, then every `every`th, is measured; the
    // others are counted as sampled out. A countdown left over from a larger `every` ends at once.
    // No row (out of memory): measured, as without sampling.
    bool take_gpu_sample(uint32_t engine_id, int64_t every) noexcept {
      Row* r = row(engine_id);
      if (C10_UNLIKELY(r == nullptr)) return true;
      if (gpu::take_sample((*r)[kRowGpuCountdown], every)) {
        gpu::note_sampled_rate(every);
        return true;
      }
      add((*r)[kStatGpuSampledOut], 1);
      return false;
    }
    // Which events this measured CUDA call of the engine records, where the engine runs on a stream
    // of its own (gpu_sampling.h): true = the engine stream's pair only. No row: both pairs.
    bool gpu_engine_stream_only(uint32_t engine_id, uint32_t epoch) noexcept {
      Row* r = row(engine_id);
      return r != nullptr && gpu::engine_stream_only((*r)[kRowEngineStreamLeft], epoch);
    }
    void gpu_saw_engine_stream(uint32_t engine_id, uint32_t epoch, bool made_engine_stream_only, bool seen) noexcept {
      Row* r = row(engine_id);
      if (r != nullptr) gpu::saw_engine_stream((*r)[kRowEngineStreamLeft], epoch, made_engine_stream_only, seen);
    }
    // One duration into the engine's histogram: a bucket index and the owner's add, no lock, no
    // allocation (the histograms come with the row's chunk).
    void add_duration(uint32_t engine_id, int series, int64_t ns) noexcept {
      const uint32_t c = engine_id / kChunk;
      HistChunk* h = C10_LIKELY(c < kMaxChunks) ? hist_chunks_[c].load(std::memory_order_relaxed) : nullptr;
      if (C10_UNLIKELY(h == nullptr)) return;  // out of memory when the chunk was made: no histograms
      add(h->counts[series][histogram::bucket_of(ns)][engine_id % kChunk], 1);
    }

   private:
    friend class EngineStats;
    static constexpr uint32_t kChunk = 256;
    static constexpr uint32_t kMaxChunks = 4096;  // 1M engine ids
    // The columns, then the owner's private state (never summed or reported).
    static constexpr int kRowGpuCountdown = kNumStatColumns;  // calls left to sample out (take_gpu_sample)
    static constexpr int kRowEngineStreamLeft = kNumStatColumns + 1;  // gpu_engine_stream_only's countdown
    using Row = std::array<std::atomic<int64_t>, kNumStatColumns + 2>;
    struct Chunk {
      std::array<Row, kChunk> rows{};
    };
    // 2.4 MiB of address space per 256 engines, from calloc: zero pages that the OS commits only
    // where buckets are counted (std::atomic<int64_t> needs no construction in C++17). Bucket-major:
    // a bucket's counts of the 256 engines lie together, so engines whose calls take similar times
    // share pages instead of committing one page each.
    struct HistChunk {
      std::array<std::array<std::array<std::atomic<int64_t>, kChunk>, histogram::kBuckets>, kNumHistSeries> counts;
    };
    // The owner's add: readers may load concurrently, nobody else stores.
    static void add(std::atomic<int64_t>& v, int64_t d) noexcept {
      v.store(v.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
    }
    Row* row(uint32_t engine_id) noexcept {
      const uint32_t c = engine_id / kChunk;
      Chunk* chunk = C10_LIKELY(c < kMaxChunks) ? chunks_[c].load(std::memory_order_relaxed) : nullptr;
      if (C10_UNLIKELY(chunk == nullptr)) return grow(engine_id);
      return &chunk->rows[engine_id % kChunk];
    }
    Row* grow(uint32_t engine_id) noexcept;  // adds the chunk for engine_id (out of line, rare)

    std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
    std::array<std::atomic<HistChunk*>, kMaxChunks> hist_chunks_{};
    bool owned_ = false;  // guarded by EngineStats::mutex_
  };

  // The calling thread's table, made (or taken over from an exited thread) on
  // its first use; null if out of memory.
  Table* this_thread() noexcept;

  // Row i = engine id i (row 0 unused), kNumStatColumns int64 columns, counted
  // since the last reset().
  std::vector<std::array<int64_t, kNumStatColumns>> snapshot(uint32_t num_engines) const;
  // Histogram `series` of engine ids 0..num_engines-1, kBuckets counts each (row-major), counted
  // since the last reset().
  std::vector<int64_t> histograms(uint32_t num_engines, int series) const;
  void reset();

 private:
  friend class Leaked<EngineStats>;
  static EngineStats* create();  // with its fork handlers
  std::vector<std::array<int64_t, kNumStatColumns>> sum_locked(uint32_t num_engines) const;
  std::vector<int64_t> sum_histograms_locked(uint32_t num_engines, int series) const;
  Table* acquire() noexcept;
  void release(Table* table) noexcept;
  friend struct StatsTableOwner;

  mutable std::mutex mutex_;  // guards tables_ (the list and owned_ flags) and baseline_
  std::vector<std::unique_ptr<Table>> tables_;
  std::vector<std::array<int64_t, kNumStatColumns>> baseline_;
  std::array<std::vector<int64_t>, kNumHistSeries> hist_baseline_;
};

}  // namespace trt_trace
