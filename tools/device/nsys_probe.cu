// A tiny CUDA program for tools/device/nsys_probe.sh: 5 NVTX ranges in the domain "trt_trace", each
// carrying its number as uint64 payload (as trt_trace's do), each holding one device copy and one
// kernel that spins for 20 us on the GPU's globaltimer, so an nsys export of it shows NVTX_EVENTS,
// CUPTI_ACTIVITY_KIND_RUNTIME, _KERNEL and _MEMCPY rows joined by correlation id.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <cstdio>

__global__ void probe_spin(uint64_t ns) {
  uint64_t start, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - start < ns);
}

int main() {
  nvtxDomainHandle_t domain = nvtxDomainCreateA("trt_trace");
  nvtxStringHandle_t name = nvtxDomainRegisterStringA(domain, "probe_engine");
  float *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, 1 << 20) != cudaSuccess || cudaMalloc(&b, 1 << 20) != cudaSuccess) {
    std::printf("probe: cudaMalloc failed\n");
    return 1;
  }
  cudaStream_t s;
  cudaStreamCreate(&s);
  for (uint64_t call = 1; call <= 5; ++call) {
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = name;
    attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
    attr.payload.ullValue = call;
    nvtxDomainRangePushEx(domain, &attr);
    cudaMemcpyAsync(b, a, 1 << 20, cudaMemcpyDeviceToDevice, s);
    probe_spin<<<1, 1, 0, s>>>(20000);
    nvtxDomainRangePop(domain);
  }
  const cudaError_t err = cudaStreamSynchronize(s);
  std::printf("probe: 5 ranges, 5 copies, 5 kernels of 20 us: %s\n", cudaGetErrorString(err));
  return err == cudaSuccess ? 0 : 1;
}
