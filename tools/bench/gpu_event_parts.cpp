// Where the host time of a traced call's GPU events goes: each CUDA step of gpu::begin_call / end_call
// timed alone, warm (in a tight loop) and cold (each time after `scrub_kib` KiB were written, as a
// real call's other host work evicts the caches), through the CUDA runtime and through the driver's
// own entry points (cudaGetDriverEntryPointByVersion, skipping the runtime's layer). Built and run by
// tools/bench/gpu_event_parts.py and tools/device/gpu_timing_check.py on a GPU machine.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <torch/extension.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

int64_t now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ns per step over n steps: in a tight loop (scrub_kib = 0), or each step timed alone after the scrub.
double ns_per(int64_t n, int64_t scrub_kib, const std::function<void(int64_t)>& step) {
  if (scrub_kib == 0) {
    const int64_t t0 = now();
    for (int64_t i = 0; i < n; ++i) step(i);
    return static_cast<double>(now() - t0) / static_cast<double>(n);
  }
  std::vector<char> scrub(static_cast<size_t>(scrub_kib) * 1024);
  volatile char* line = scrub.data();  // volatile: the writes are the point
  int64_t ns = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < scrub.size(); k += 64) line[k] = static_cast<char>(line[k] + 1);
    const int64_t t0 = now();
    step(i);
    ns += now() - t0;
  }
  return static_cast<double>(ns) / static_cast<double>(n);
}

template <typename F>
F driver_entry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    TORCH_CHECK(false, "no driver entry point ", name);
  }
  return reinterpret_cast<F>(fn);
}

// The original six steps, warm (tools/device/gpu_timing_check.py prints them in this order).
std::vector<double> gpu_event_parts(int64_t device, int64_t n) {
  const auto dev = static_cast<c10::DeviceIndex>(device);
  std::vector<cudaEvent_t> events(n);
  for (auto& e : events) cudaEventCreateWithFlags(&e, cudaEventDefault);
  cudaStreamCaptureStatus status;
  std::vector<double> out;
  out.push_back(ns_per(n, 0, [&](int64_t) { c10::cuda::CUDAGuard guard(dev); }));
  out.push_back(ns_per(n, 0, [&](int64_t) { (void)c10::cuda::current_device(); }));
  out.push_back(ns_per(n, 0, [&](int64_t) { (void)c10::cuda::getCurrentCUDAStream(dev); }));
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(dev).stream();
  out.push_back(ns_per(n, 0, [&](int64_t) { cudaStreamIsCapturing(stream, &status); }));
  // Never-recorded events, then the same events again once completed (as the pool hands them out).
  out.push_back(ns_per(n, 0, [&](int64_t i) { cudaEventRecord(events[i], stream); }));
  cudaStreamSynchronize(stream);
  out.push_back(ns_per(n, 0, [&](int64_t i) { cudaEventRecord(events[i], stream); }));
  cudaStreamSynchronize(stream);
  for (auto& e : events) cudaEventDestroy(e);
  return out;  // guard, current device, stream look-up, capture check, event record (new), event record (again)
}

// Each step of a measured call, warm and after a scrub, runtime vs driver: (name, ns) pairs.
std::vector<std::pair<std::string, double>> gpu_event_steps(int64_t device, int64_t n, int64_t scrub_kib) {
  using EventRecord = CUresult (*)(CUevent, CUstream);
  using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);
  using CtxGetDevice = CUresult (*)(CUdevice*);
  const auto cu_event_record = driver_entry<EventRecord>("cuEventRecord");
  const auto cu_is_capturing = driver_entry<IsCapturing>("cuStreamIsCapturing");
  const auto cu_ctx_get_device = driver_entry<CtxGetDevice>("cuCtxGetDevice");
  const auto dev = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAGuard guard(dev);
  std::vector<cudaEvent_t> events(n);
  for (auto& e : events) cudaEventCreateWithFlags(&e, cudaEventDefault);
  const cudaStream_t null_stream = c10::cuda::getDefaultCUDAStream(dev).stream();
  const cudaStream_t pool_stream = c10::cuda::getStreamFromPool(false, dev).stream();
  for (auto& e : events) cudaEventRecord(e, pool_stream);  // recorded and completed before, as pooled ones are
  cudaDeviceSynchronize();
  cudaStreamCaptureStatus status;
  CUstreamCaptureStatus cu_status;
  int index = 0;
  CUdevice cu_device = 0;
  std::vector<std::pair<std::string, double>> out;
  const auto add = [&](const char* name, const std::function<void(int64_t)>& step) {
    out.emplace_back(name, ns_per(n, scrub_kib, step));
    cudaDeviceSynchronize();
  };
  add("nothing (the clock reads)", [](int64_t) {});
  add("c10 current_device()", [&](int64_t) { (void)c10::cuda::current_device(); });
  add("cudaGetDevice", [&](int64_t) { cudaGetDevice(&index); });
  add("cuCtxGetDevice (driver)", [&](int64_t) { cu_ctx_get_device(&cu_device); });
  add("c10 current stream look-up", [&](int64_t) { (void)c10::cuda::getCurrentCUDAStream(dev); });
  add("cudaStreamIsCapturing, default stream", [&](int64_t) { cudaStreamIsCapturing(null_stream, &status); });
  add("cuStreamIsCapturing, default stream (driver)",
      [&](int64_t) { cu_is_capturing(reinterpret_cast<CUstream>(null_stream), &cu_status); });
  add("cudaStreamIsCapturing, pool stream", [&](int64_t) { cudaStreamIsCapturing(pool_stream, &status); });
  add("cudaEventRecord, default stream", [&](int64_t i) { cudaEventRecord(events[i], null_stream); });
  add("cuEventRecord, default stream (driver)",
      [&](int64_t i) { cu_event_record(reinterpret_cast<CUevent>(events[i]), reinterpret_cast<CUstream>(null_stream)); });
  add("cudaEventRecord, pool stream", [&](int64_t i) { cudaEventRecord(events[i], pool_stream); });
  add("cuEventRecord, pool stream (driver)",
      [&](int64_t i) { cu_event_record(reinterpret_cast<CUevent>(events[i]), reinterpret_cast<CUstream>(pool_stream)); });
  add("capture check + cudaEventRecord, default stream", [&](int64_t i) {
    cudaStreamIsCapturing(null_stream, &status);
    cudaEventRecord(events[i], null_stream);
  });
  add("capture check + cuEventRecord, default stream (driver)", [&](int64_t i) {
    cu_is_capturing(reinterpret_cast<CUstream>(null_stream), &cu_status);
    cu_event_record(reinterpret_cast<CUevent>(events[i]), reinterpret_cast<CUstream>(null_stream));
  });
  add("cudaEventQuery (completed)", [&](int64_t i) { cudaEventQuery(events[i]); });
  for (auto& e : events) cudaEventDestroy(e);
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("gpu_event_parts", &gpu_event_parts);
  m.def("gpu_event_steps", &gpu_event_steps);
}
