#include "hook/engine_stream_trace.h"

namespace trt_trace {
namespace gpu {

Switch engine_stream_spans{true};

}  // namespace gpu
}  // namespace trt_trace

#ifdef TRT_TRACE_WITH_CUDA

#include <c10/core/impl/GPUTrace.h>
#include <c10/core/impl/PyInterpreter.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "hook/gpu_event_pool.h"
#include "hook/gpu_self_time.h"

namespace trt_trace {
namespace gpu {
namespace {

thread_local CallEvents* t_watched = nullptr;  // the innermost traced CUDA call with a start event
thread_local uint16_t t_watched_device = 0;

// Event wait on `stream` inside a traced call: the runtime makes a stream other than the caller's
// wait for the caller's work; the engine's work starts there after this point.
void on_wait(cudaStream_t stream) noexcept {
  CallEvents* ev = t_watched;
  if (ev == nullptr || ev->engine_start != nullptr || ev->captured ||
      stream == static_cast<cudaStream_t>(ev->caller_stream))
    return;
  const SelfTimer timer(kSelfEngineStart);
  // No capture check here: begin_call found the caller's stream not capturing, and a stream made to
  // wait for it joins no capture through that wait.
  cudaEvent_t e = acquire_event(t_watched_device);
  if (e == nullptr) return;
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    give_back(t_watched_device, e);
    return;
  }
  ev->engine_stream = stream;
  ev->engine_start = e;
}

// Event record on the engine's stream after its start: the work so far is the engine's; the last
// such record of the call ends the span (re-recording moves the one event).
void on_record(cudaStream_t stream) noexcept {
  CallEvents* ev = t_watched;
  if (ev == nullptr || ev->engine_start == nullptr || stream != static_cast<cudaStream_t>(ev->engine_stream)) return;
  const SelfTimer timer(kSelfEngineEnd);
  cudaEvent_t e = static_cast<cudaEvent_t>(ev->engine_end);
  if (e == nullptr && (e = acquire_event(t_watched_device)) == nullptr) return;
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    if (ev->engine_end == nullptr) give_back(t_watched_device, e);
    return;
  }
  ev->engine_end = e;
}

// The installed trace: our vtable copy and the entries it chains to.
struct StreamTrace {
  struct Object {
    void** vptr;
  } object{nullptr};
  const c10::impl::PyInterpreterVTable* previous = nullptr;
  void* previous_record = nullptr;
  void* previous_wait = nullptr;
  c10::impl::PyInterpreter* interpreter = nullptr;
  std::atomic<bool> installed{false};
};

StreamTrace& stream_trace() {
  static auto* t = new StreamTrace();  // leaked: c10 may call it until the process ends
  return *t;
}

using TraceEventFn = void (*)(const void* self, c10::DeviceType, uintptr_t event, uintptr_t stream);

// Itanium C++ ABI: a pointer to a virtual member holds 1 + its byte offset in the vtable.
template <typename M>
size_t vtable_slot(M member) {
  uintptr_t word = 0;
  std::memcpy(&word, &member, sizeof word);
  return (word - 1) / sizeof(void*);
}

void trace_event_record(const void*, c10::DeviceType type, uintptr_t event, uintptr_t stream) {
  if (type == c10::DeviceType::CUDA) on_record(reinterpret_cast<cudaStream_t>(stream));
  const StreamTrace& t = stream_trace();
  reinterpret_cast<TraceEventFn>(t.previous_record)(t.previous, type, event, stream);
}

void trace_event_wait(const void*, c10::DeviceType type, uintptr_t event, uintptr_t stream) {
  if (type == c10::DeviceType::CUDA) on_wait(reinterpret_cast<cudaStream_t>(stream));
  const StreamTrace& t = stream_trace();
  reinterpret_cast<TraceEventFn>(t.previous_wait)(t.previous, type, event, stream);
}

void install() {
  static std::once_flag once;
  std::call_once(once, [] {
    using VTable = c10::impl::PyInterpreterVTable;
    StreamTrace& t = stream_trace();
    const c10::impl::PyInterpreter* current = c10::impl::GPUTrace::get_trace();
    const VTable* base = nullptr;
    if (current != nullptr) {
      base = current->vtable_;
    } else {
      static auto* noop = new c10::impl::PyInterpreter(nullptr);
      noop->disarm();  // points it at c10's no-op vtable
      base = noop->vtable_;
    }
    if (base == nullptr) return;
    void* const* vptr = *reinterpret_cast<void* const* const*>(base);
    const size_t record = vtable_slot(&VTable::trace_gpu_event_record);
    const size_t wait = vtable_slot(&VTable::trace_gpu_event_wait);
    // Every entry up to the interface's last method (plus a margin: reading a few words past a
    // vtable is harmless, missing one is not), and the two words before the address point.
    const size_t n = std::max({vtable_slot(&VTable::reset_backward_hooks),
                               vtable_slot(&VTable::trace_gpu_event_synchronization), record, wait}) + 9;
    auto** copy = new void*[n + 2];
    std::memcpy(copy, vptr - 2, (n + 2) * sizeof(void*));
    void** table = copy + 2;
    t.previous = base;
    t.previous_record = table[record];
    t.previous_wait = table[wait];
    table[record] = reinterpret_cast<void*>(&trace_event_record);
    table[wait] = reinterpret_cast<void*>(&trace_event_wait);
    t.object.vptr = table;
    t.interpreter = new c10::impl::PyInterpreter(reinterpret_cast<const VTable*>(&t.object));
    c10::impl::GPUTrace::gpuTraceState.store(t.interpreter, std::memory_order_release);
    c10::impl::GPUTrace::haveState = true;
    t.installed.store(true, std::memory_order_release);
  });
}

}  // namespace

bool watch_engine_stream(CallEvents* ev, uint16_t device) noexcept {
  if (!engine_stream_spans()) return false;
  install();
  ev->outer = t_watched;
  ev->active = true;
  t_watched = ev;
  t_watched_device = device;
  return true;
}

void stop_watching(CallEvents* ev) noexcept {
  if (!ev->active) return;
  ev->active = false;
  t_watched = ev->outer;
}

bool engine_stream_trace_installed() noexcept {
  return stream_trace().installed.load(std::memory_order_acquire) &&
         c10::impl::GPUTrace::get_trace() == stream_trace().interpreter;
}

}  // namespace gpu
}  // namespace trt_trace

#else  // CPU-only build

namespace trt_trace {
namespace gpu {
bool watch_engine_stream(CallEvents*, uint16_t) noexcept { return false; }
void stop_watching(CallEvents*) noexcept {}
bool engine_stream_trace_installed() noexcept { return false; }
}  // namespace gpu
}  // namespace trt_trace

#endif
