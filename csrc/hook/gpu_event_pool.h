// The CUDA events GPU spans are made of, pooled: creating an event costs far
// more than re-recording one (BENCHMARKS.md), so events are reused once the
// drainer has read them.
//
// Each calling thread takes events from a free list of its own (no lock); the
// resolver hands used ones back to a shared list that threads refill from in
// bulk (one lock per refill, not per event). CUDA builds only.
#pragma once

#ifdef TRT_TRACE_WITH_CUDA

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <optional>

#include "hook/gpu_call_events.h"

namespace trt_trace {
namespace gpu {

// A free event of `device` (pooled, or created); nullptr if CUDA refuses one.
cudaEvent_t acquire_event(uint16_t device);
// Back to the calling thread's own free list (nullptr is ignored).
void give_back(uint16_t device, cudaEvent_t e);
// Back to the shared list, from the drainer (the calling threads refill from it).
void give_back_shared(uint16_t device, cudaEvent_t a, cudaEvent_t b);

// The stream's device made current for the event calls, only where it is not already: a guard
// sets and restores the device whatever it was, ~0.8 us of host time per guard on an H200
// (BENCHMARKS.md), and the engine's device is almost always the calling thread's current one.
class DeviceOf {
 public:
  explicit DeviceOf(const c10::cuda::CUDAStream& stream) {
    if (c10::cuda::current_device() != stream.device_index()) guard_.emplace(stream.device_index());
  }

 private:
  std::optional<c10::cuda::CUDAGuard> guard_;
};

}  // namespace gpu
}  // namespace trt_trace

#endif  // TRT_TRACE_WITH_CUDA
