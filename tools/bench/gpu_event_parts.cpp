// Where the host time of a traced call's GPU events goes: each CUDA step of gpu::begin_call /
// end_call timed alone in a loop on an idle stream (built and run by tools/device/gpu_timing_check.py on a
// GPU machine). Returns ns per step, in the order of kParts.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/extension.h>

#include <chrono>
#include <functional>
#include <vector>

namespace {

double ns_per(int64_t n, const std::function<void(int64_t)>& step) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < n; ++i) step(i);
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n;
}

std::vector<double> gpu_event_parts(int64_t device, int64_t n) {
  const auto dev = static_cast<c10::DeviceIndex>(device);
  std::vector<cudaEvent_t> events(n);
  for (auto& e : events) cudaEventCreateWithFlags(&e, cudaEventDefault);
  cudaStreamCaptureStatus status;
  std::vector<double> out;
  out.push_back(ns_per(n, [&](int64_t) { c10::cuda::CUDAGuard guard(dev); }));
  out.push_back(ns_per(n, [&](int64_t) { (void)c10::cuda::current_device(); }));
  out.push_back(ns_per(n, [&](int64_t) { (void)c10::cuda::getCurrentCUDAStream(dev); }));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(dev).stream();
  out.push_back(ns_per(n, [&](int64_t) { cudaStreamIsCapturing(stream, &status); }));
  // Never-recorded events, then the same events again once completed (as the pool hands them out).
  out.push_back(ns_per(n, [&](int64_t i) { cudaEventRecord(events[i], stream); }));
  cudaStreamSynchronize(stream);
  out.push_back(ns_per(n, [&](int64_t i) { cudaEventRecord(events[i], stream); }));
  cudaStreamSynchronize(stream);
  for (auto& e : events) cudaEventDestroy(e);
  return out;  // guard, current device, stream look-up, capture check, event record (new), event record (again)
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("gpu_event_parts", &gpu_event_parts); }
