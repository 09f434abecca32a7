#include "integrations/nvtx_ranges.h"

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "common/record.h"
#include "engines/engine_registry.h"

#ifdef TRT_TRACE_WITH_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace trt_trace {
namespace nvtx {

Switch enabled{false};

#ifdef TRT_TRACE_WITH_NVTX
namespace {

constexpr uint32_t kMaxNamedEngines = 1 << 16;

struct Domain {
  nvtxDomainHandle_t handle = nullptr;
  std::array<nvtxStringHandle_t, 6> phases{};
  // Engine names, registered once per engine id (then read without a lock).
  std::array<std::atomic<nvtxStringHandle_t>, kMaxNamedEngines> engines{};
  std::mutex register_mutex;
};

Domain& domain() {
  static Domain* d = [] {
    auto* out = new Domain();
    out->handle = nvtxDomainCreateA("trt_trace");
    for (size_t p = 0; p < out->phases.size(); ++p) {
      out->phases[p] = nvtxDomainRegisterStringA(out->handle, kPhaseNames[p]);
    }
    return out;
  }();
  return *d;
}

nvtxStringHandle_t engine_string(Domain& d, uint32_t engine_id) {
  if (engine_id >= kMaxNamedEngines) return d.phases[0];
  nvtxStringHandle_t h = d.engines[engine_id].load(std::memory_order_acquire);
  if (h != nullptr) return h;
  const std::string name = EngineRegistry::instance().name(engine_id);
  std::lock_guard<std::mutex> lock(d.register_mutex);
  h = d.engines[engine_id].load(std::memory_order_acquire);
  if (h == nullptr) {
    h = nvtxDomainRegisterStringA(d.handle, name.c_str());
    d.engines[engine_id].store(h, std::memory_order_release);
  }
  return h;
}

void push(Domain& d, nvtxStringHandle_t message, uint64_t call_id) {
  nvtxEventAttributes_t attr{};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  attr.message.registered = message;
  attr.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  attr.payload.ullValue = call_id;
  nvtxDomainRangePushEx(d.handle, &attr);
}

}  // namespace

bool set_enabled(bool on) {
  if (on) domain();  // create the domain and strings before the first call needs them
  enabled.set(on);
  return true;
}

void push_call(uint32_t engine_id, uint64_t call_id) noexcept {
  Domain& d = domain();
  push(d, engine_string(d, engine_id), call_id);
}

void push_phase(uint8_t phase, uint64_t call_id) noexcept {
  Domain& d = domain();
  push(d, d.phases[phase < d.phases.size() ? phase : 0], call_id);
}

void pop() noexcept { nvtxDomainRangePop(domain().handle); }

#else  // no NVTX headers at build time

bool set_enabled(bool) { return false; }
void push_call(uint32_t, uint64_t) noexcept {}
void push_phase(uint8_t, uint64_t) noexcept {}
void pop() noexcept {}

#endif

}  // namespace nvtx
}  // namespace trt_trace
