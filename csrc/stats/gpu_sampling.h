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

// The rate the live stats' sampled-out counts were taken at (the table's "1 in N" note): the setting
// is put back when a session stops, so the table cannot read it from sample_every(). 0: no sampled
// call since the stats were reset; -1: calls were sampled at more than one rate. Noted on a
// measured call of a sampled engine (once in N calls), reset with the stats (EngineStats::reset).
extern std::atomic<int64_t> g_rate_in_stats;
inline int64_t rate_in_stats() noexcept { return g_rate_in_stats.load(std::memory_order_relaxed); }
inline void note_sampled_rate(int64_t every) noexcept {
  int64_t seen = g_rate_in_stats.load(std::memory_order_relaxed);
  if (seen == every || seen == -1) return;
  if (seen == 0 && g_rate_in_stats.compare_exchange_strong(seen, every, std::memory_order_relaxed)) return;
  if (seen != every) g_rate_in_stats.store(-1, std::memory_order_relaxed);
}

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

// Which events a measured call records, where the engine runs on a stream of its own
// (engine_stream_trace.h: Torch-TensorRT 2.11 always, 2.13 from the default stream). Each CUDA call
// a measured call makes costs its thread more inside a real call than in a loop of CUDA calls alone
// (an event record 1.4-2.2 us against 0.8-1.3 us on an H200): the call's other host work evicts the
// CUDA runtime's code and data from the caches (BENCHMARKS.md). So once a measured call of an engine has seen the engine's
// own stream, the next kCallerWaitEvery - 1 measured calls of it (on this thread) keep only the
// engine stream's pair, the engine's own GPU work (the table's gpu column), and record no caller-stream
// end; the one after records the caller stream's pair too, whose span is what the caller's stream
// waited (the runtime's hand-offs included). Every measured call records the caller's start event
// (gpu_events.h): a call made engine-stream-only whose engine runs on the caller's stream after all
// (2.13, once the caller left the default stream) ends that pair and gets its caller-stream span, so
// no measured call goes without a span. A call that sees no engine stream sets the countdown back:
// the next measured call with a hand-off records both pairs. kCallerWaitEvery is
// TRT_TRACE_CALLER_WAIT_EVERY's default; 1: both pairs on every measured call.
constexpr int64_t kCallerWaitEvery = 8;
extern std::atomic<int64_t> g_caller_wait_every;
inline int64_t caller_wait_every() noexcept { return g_caller_wait_every.load(std::memory_order_relaxed); }
// n in [1, kMaxGpuEvery]; returns false (and keeps the value) otherwise.
bool set_caller_wait_every(int64_t n) noexcept;

// The decision, on a countdown only the calling thread writes (EngineStats::Table keeps one per engine
// in its row), kept with the recording epoch it was set in (tracing_state.h): each session starts
// afresh, so that a trace's first measured call of an engine has both pairs. true = record the
// engine stream's pair only.
inline bool engine_stream_only(std::atomic<int64_t>& left, uint32_t epoch) noexcept {
  const int64_t n = left.load(std::memory_order_relaxed);
  if (static_cast<uint32_t>(n >> 32) != epoch || (n & 0xFFFFFFFF) == 0) return false;
  left.store(n - 1, std::memory_order_relaxed);
  return true;
}

// After the call: whether it was made engine-stream-only, and whether it saw the engine's stream.
inline void saw_engine_stream(std::atomic<int64_t>& left, uint32_t epoch, bool made_engine_stream_only,
                              bool seen) noexcept {
  const int64_t session = static_cast<int64_t>(epoch) << 32;
  if (!seen) {
    left.store(session, std::memory_order_relaxed);
  } else if (!made_engine_stream_only) {
    left.store(session | (caller_wait_every() - 1), std::memory_order_relaxed);
  }
}

}  // namespace gpu
}  // namespace trt_trace
