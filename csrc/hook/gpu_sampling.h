// GPU-timing sampling (TRT_TRACE_GPU_EVERY=N, set_gpu_every): every Nth traced CUDA call of each
// engine gets GPU events, the others none, so that serving pays the CUDA runtime's event records
// (several µs of host time per call) on one call in N.
//
// The decision is the calling thread's alone, from its own stats row of the engine
// (EngineStats::Table::take_gpu_sample): the first of every N CUDA calls it makes of an engine is
// measured, the others are counted as sampled out (kStatGpuSampledOut). No shared counter is
// written on the hot path; with several calling threads an engine gets about one call in N measured
// per thread, not exactly every Nth call of the process. N = 1 (the default) costs one relaxed load
// and a compare: the call is measured as before. The skipped call returns before gpu::begin_call,
// so it makes no CUDA call at all.
#pragma once

#include <atomic>
#include <cstdint>

namespace trt_trace {
namespace gpu {

constexpr int64_t kMaxGpuEvery = 1 << 20;  // a span per million calls: beyond it there is nothing to scale from

extern std::atomic<int64_t> g_every;
inline int64_t sample_every() noexcept { return g_every.load(std::memory_order_relaxed); }
// n in [1, kMaxGpuEvery]; returns false (and keeps the value) otherwise.
bool set_sample_every(int64_t n) noexcept;

// The decision itself, on a countdown only the calling thread writes (EngineStats::Table keeps one
// per engine in its row): the first call, then every `every`th, is measured (true); a countdown left
// over from a larger `every` ends at once.
inline bool take_sample(std::atomic<int64_t>& left, int64_t every) noexcept {
  const int64_t n = left.load(std::memory_order_relaxed);
  if (n <= 0 || n >= every) {
    left.store(every - 1, std::memory_order_relaxed);
    return true;
  }
  left.store(n - 1, std::memory_order_relaxed);
  return false;
}

}  // namespace gpu
}  // namespace trt_trace
