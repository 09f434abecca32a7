#include "drainer/drain.h"

#include <mutex>
#include <new>

#include "buffer/thread_rings.h"
#include "drainer/gpu_resolver.h"

namespace trt_trace {
namespace drainer {
namespace {
std::mutex g_drain_mutex;  // the rings and the GPU resolver have one consumer at a time
}  // namespace

size_t drain_batch(Record* out, size_t max, bool wait_gpu) {
  std::lock_guard<std::mutex> lock(g_drain_mutex);
  size_t n = ThreadRings::instance().drain(out, max);
  n = gpu::Resolver::instance().take_pending(out, n);
  n += gpu::Resolver::instance().resolve(out + n, max - n, wait_gpu);
  return n;
}

void after_fork_in_child() noexcept {
  new (&g_drain_mutex) std::mutex();
  gpu::Resolver::instance().forget_pending();
}

}  // namespace drainer
}  // namespace trt_trace
