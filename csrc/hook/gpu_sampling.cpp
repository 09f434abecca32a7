#include "hook/gpu_sampling.h"

namespace trt_trace {
namespace gpu {

std::atomic<int64_t> g_every{1};
std::atomic<int64_t> g_caller_wait_every{kCallerWaitEvery};

bool set_sample_every(int64_t n) noexcept {
  if (n < 1 || n > kMaxGpuEvery) return false;
  g_every.store(n, std::memory_order_relaxed);
  return true;
}

bool set_caller_wait_every(int64_t n) noexcept {
  if (n < 1 || n > kMaxGpuEvery) return false;
  g_caller_wait_every.store(n, std::memory_order_relaxed);
  return true;
}

}  // namespace gpu
}  // namespace trt_trace
