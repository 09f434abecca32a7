#include "hook/gpu_self_time.h"

#include <atomic>

namespace trt_trace {
namespace gpu {

Switch self_timing{false};

namespace {
std::atomic<int64_t> g_ns[kSelfSteps];
std::atomic<int64_t> g_count[kSelfSteps];
}  // namespace

void add_self_time(SelfStep step, int64_t ns) noexcept {
  g_ns[step].fetch_add(ns, std::memory_order_relaxed);
  g_count[step].fetch_add(1, std::memory_order_relaxed);
}

SelfTimes take_self_times() noexcept {
  SelfTimes t{};
  for (int s = 0; s < kSelfSteps; ++s) {
    t.ns[s] = g_ns[s].exchange(0, std::memory_order_relaxed);
    t.count[s] = g_count[s].exchange(0, std::memory_order_relaxed);
  }
  return t;
}

}  // namespace gpu
}  // namespace trt_trace
