#include "hook/gpu_event_pool.h"

#ifdef TRT_TRACE_WITH_CUDA

#include <array>
#include <mutex>
#include <vector>

namespace trt_trace {
namespace gpu {
namespace {

struct SharedPool {
  std::mutex mutex;
  std::array<std::vector<cudaEvent_t>, kMaxDevices> free;
};

SharedPool& shared_pool() {
  static SharedPool* p = new SharedPool();  // leaked: threads may give events back until exit
  return *p;
}

thread_local std::array<std::vector<cudaEvent_t>, kMaxDevices> t_free;

}  // namespace

cudaEvent_t acquire_event(uint16_t device) {
  auto& local = t_free[device];
  if (local.empty()) {
    SharedPool& pool = shared_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    local.swap(pool.free[device]);
  }
  if (!local.empty()) {
    cudaEvent_t e = local.back();
    local.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));  // events belong to the current device
  if (cudaEventCreateWithFlags(&e, cudaEventDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void give_back(uint16_t device, cudaEvent_t e) {
  if (e != nullptr) t_free[device].push_back(e);
}

void give_back_shared(uint16_t device, cudaEvent_t a, cudaEvent_t b) {
  SharedPool& pool = shared_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (a != nullptr) pool.free[device].push_back(a);
  if (b != nullptr) pool.free[device].push_back(b);
}

}  // namespace gpu
}  // namespace trt_trace

#endif  // TRT_TRACE_WITH_CUDA
