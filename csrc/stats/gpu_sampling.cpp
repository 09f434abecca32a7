#include "stats/gpu_sampling.h"

namespace trt_trace {
namespace gpu {

std::atomic<int64_t> g_every{1};
std::atomic<int64_t> g_caller_wait_every{kCallerWaitEvery};
std::atomic<int64_t> g_rate_in_stats{0};

namespace {
// A "1 in n calls" setting: n in [1, kMaxGpuEvery] is stored, anything else refused.
bool store_call_count(std::atomic<int64_t>& setting, int64_t n) noexcept {
  if (n < 1 || n > kMaxGpuEvery) return false;
  setting.store(n, std::memory_order_relaxed);
  return true;
}
}  // namespace

bool set_sample_every(int64_t n) noexcept { return store_call_count(g_every, n); }
bool set_caller_wait_every(int64_t n) noexcept { return store_call_count(g_caller_wait_every, n); }

}  // namespace gpu
}  // namespace trt_trace
