#include "hook/gpu_timing.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "common/clock.h"
#include "hook/engine_stats.h"

#ifdef TRT_TRACE_WITH_CUDA
#include <c10/core/impl/GPUTrace.h>
#include <c10/core/impl/PyInterpreter.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include <cstring>
#endif

namespace trt_trace {
namespace gpu {

std::atomic<bool> g_enabled{true};

#ifdef TRT_TRACE_WITH_CUDA

namespace {

constexpr int kMaxDevices = 64;
constexpr int64_t kReanchorNs = 100000000;  // a new anchor every 100 ms while spans resolve
// Residual statistic: the clock line is drawn through two anchors at least this far apart (two
// anchors close together, e.g. a final drain right after a periodic anchor, turn their record->sync
// windows into a large rate error that says nothing about placement).
constexpr int64_t kMinBaselineNs = 20000000;
constexpr size_t kResidualsKept = 1 << 16;
constexpr size_t kAnchorsKept = 64;

// Event pool: each thread takes events from its own free list; the resolver
// returns used ones to a shared list that threads refill from in bulk (one
// lock per refill, not per event).
struct SharedPool {
  std::mutex mutex;
  std::array<std::vector<cudaEvent_t>, kMaxDevices> free;
};
SharedPool& shared_pool() {
  static SharedPool* p = new SharedPool();
  return *p;
}
thread_local std::array<std::vector<cudaEvent_t>, kMaxDevices> t_free;

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

void give_back(uint16_t device, cudaEvent_t e) {
  if (e != nullptr) t_free[device].push_back(e);
}

// ---- The engine's own stream, seen through c10's GPU trace (see gpu_timing.h) ----------------

thread_local CallEvents* t_active = nullptr;  // the innermost traced CUDA call with a start event
thread_local uint16_t t_active_device = 0;

// Event wait on `stream` inside a traced call: the runtime makes a stream other than the caller's
// wait for the caller's work; the engine's work starts there after this point.
void on_engine_stream_wait(cudaStream_t stream) noexcept {
  CallEvents* ev = t_active;
  if (ev == nullptr || ev->engine_start != nullptr || stream == static_cast<cudaStream_t>(ev->caller_stream)) return;
  cudaEvent_t e = acquire_event(t_active_device);
  if (e == nullptr) return;
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    give_back(t_active_device, e);
    return;
  }
  ev->engine_stream = stream;
  ev->engine_start = e;
}

// Event record on the engine's stream after its start: the work so far is the engine's; the last
// such record of the call ends the span (re-recording moves the one event).
void on_engine_stream_record(cudaStream_t stream) noexcept {
  CallEvents* ev = t_active;
  if (ev == nullptr || ev->engine_start == nullptr || stream != static_cast<cudaStream_t>(ev->engine_stream)) return;
  cudaEvent_t e = static_cast<cudaEvent_t>(ev->engine_end);
  if (e == nullptr && (e = acquire_event(t_active_device)) == nullptr) return;
  if (cudaEventRecord(e, stream) != cudaSuccess) {
    cudaGetLastError();
    if (ev->engine_end == nullptr) give_back(t_active_device, e);
    return;
  }
  ev->engine_end = e;
}

// Our GPU trace: a copy of a c10 PyInterpreterVTable's vtable (the one already installed, or
// c10's no-op one) with the event record and wait entries replaced by functions that look at
// them and then call the entries they replaced. Copying the vtable (rather than deriving a class)
// keeps this independent of the rest of that interface, which changes between torch versions.
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

template <typename M>
size_t vtable_slot(M member) {
  uintptr_t word = 0;
  std::memcpy(&word, &member, sizeof word);  // Itanium ABI: 1 + the byte offset, for a virtual
  return (word - 1) / sizeof(void*);
}

void trace_event_record(const void*, c10::DeviceType type, uintptr_t event, uintptr_t stream) {
  if (type == c10::DeviceType::CUDA) on_engine_stream_record(reinterpret_cast<cudaStream_t>(stream));
  const StreamTrace& t = stream_trace();
  reinterpret_cast<TraceEventFn>(t.previous_record)(t.previous, type, event, stream);
}

void trace_event_wait(const void*, c10::DeviceType type, uintptr_t event, uintptr_t stream) {
  if (type == c10::DeviceType::CUDA) on_engine_stream_wait(reinterpret_cast<cudaStream_t>(stream));
  const StreamTrace& t = stream_trace();
  reinterpret_cast<TraceEventFn>(t.previous_wait)(t.previous, type, event, stream);
}

void install_stream_trace() {
  static std::once_flag once;
  std::call_once(once, [] {
    // TRT_TRACE_ENGINE_STREAM=0: caller-stream spans only (no GPU trace of trt_trace's in c10).
    const char* knob = std::getenv("TRT_TRACE_ENGINE_STREAM");
    if (knob != nullptr && std::strcmp(knob, "0") == 0) return;
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

void deactivate(CallEvents* ev) noexcept {
  if (!ev->active) return;
  ev->active = false;
  t_active = ev->outer;
}

}  // namespace

bool stream_trace_installed() noexcept {
  return stream_trace().installed.load(std::memory_order_acquire) &&
         c10::impl::GPUTrace::get_trace() == stream_trace().interpreter;
}

bool available() noexcept { return true; }

bool set_enabled(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
  return true;
}

bool begin_call(uint16_t device, CallEvents* ev) noexcept {
  if (device >= kMaxDevices) return false;
  try {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    DeviceOf on_device(stream);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.stream(), &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (status != cudaStreamCaptureStatusNone) {
      ev->captured = true;  // recording an event now would break the capture
      return false;
    }
    cudaEvent_t start = acquire_event(device);
    if (start == nullptr) return false;
    if (cudaEventRecord(start, stream.stream()) != cudaSuccess) {
      cudaGetLastError();
      give_back(device, start);
      return false;
    }
    ev->start = start;
    ev->stream = static_cast<uint32_t>(stream.id());
    ev->caller_stream = stream.stream();
    install_stream_trace();
    ev->outer = t_active;
    ev->active = true;
    t_active = ev;
    t_active_device = device;
    return true;
  } catch (...) {
    return false;
  }
}

bool end_call(uint16_t device, CallEvents* ev) noexcept {
  deactivate(ev);
  if (ev->start == nullptr) return false;
  if (ev->engine_start != nullptr && ev->engine_end != nullptr) {
    // The engine ran on its own stream: its own work is the span (the caller-stream start goes back).
    give_back(device, static_cast<cudaEvent_t>(ev->start));
    ev->start = ev->engine_start;
    ev->end = ev->engine_end;
    ev->engine_start = ev->engine_end = nullptr;
    ev->on_engine_stream = true;
    try {  // the engine stream's id, for the span's `stream`
      ev->stream = static_cast<uint32_t>(
          c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(ev->engine_stream), static_cast<c10::DeviceIndex>(device)).id());
    } catch (...) {
    }
    return true;
  }
  give_back(device, static_cast<cudaEvent_t>(ev->engine_start));
  ev->engine_start = nullptr;
  try {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    DeviceOf on_device(stream);
    cudaEvent_t end = acquire_event(device);
    if (end != nullptr && cudaEventRecord(end, stream.stream()) == cudaSuccess) {
      ev->end = end;
      return true;
    }
    cudaGetLastError();
    give_back(device, end);
  } catch (...) {
  }
  release(device, ev);
  return false;
}

void release(uint16_t device, CallEvents* ev) noexcept {
  deactivate(ev);
  if (device >= kMaxDevices) return;
  give_back(device, static_cast<cudaEvent_t>(ev->start));
  give_back(device, static_cast<cudaEvent_t>(ev->end));
  give_back(device, static_cast<cudaEvent_t>(ev->engine_start));
  give_back(device, static_cast<cudaEvent_t>(ev->engine_end));
  ev->start = ev->end = ev->engine_start = ev->engine_end = nullptr;
}

namespace {

struct Anchor {
  cudaEvent_t event;
  int64_t host_ns;
};

struct DeviceClock {
  cudaStream_t stream = nullptr;
  std::deque<Anchor> anchors;
};

struct Pending {
  Record rec;             // the kGpuPending record (begin/end hold the events)
  int64_t not_before_ns;  // the call's enqueue begin
  int64_t completed_ns;   // host time when the end event was seen complete (0: not yet)
};

struct ResolverState {
  std::array<DeviceClock, kMaxDevices> clocks;
  std::deque<Pending> pending;
  std::unordered_map<uint64_t, int64_t> enqueue_begin;  // call id -> host ns
  int64_t anchors_made = 0;
  int64_t max_abs_residual_ns = 0;  // anchor vs the linear clock fitted on the two before it
  int64_t last_residual_ns = 0;
  std::vector<int64_t> abs_residuals;  // the last kResidualsKept, for percentiles
  size_t residual_next = 0;
  int64_t last_window_ns = 0;
  double rate_ppm = 0;              // GPU clock rate vs CLOCK_MONOTONIC, last interval
};

ResolverState& state() {
  static ResolverState* s = new ResolverState();
  return *s;
}

// Elapsed ns from a to b (both complete), as CUDA measures it (0.5 us resolution).
double elapsed_ns(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.f;
  if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess) {
    cudaGetLastError();
    return 0.0;
  }
  return static_cast<double>(ms) * 1e6;
}

// Records an anchor for `device` now: the tightest of three record->sync windows on an idle
// stream of our own, its host time the window's midpoint.
void make_anchor(ResolverState& s, uint16_t device) {
  DeviceClock& clock = s.clocks[device];
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  if (clock.stream == nullptr && cudaStreamCreateWithFlags(&clock.stream, cudaStreamNonBlocking) != cudaSuccess) {
    cudaGetLastError();
    clock.stream = nullptr;
    return;
  }
  Anchor best{nullptr, 0};
  int64_t best_window = INT64_MAX;
  for (int attempt = 0; attempt < 3; ++attempt) {
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDefault) != cudaSuccess) {
      cudaGetLastError();
      break;
    }
    const int64_t before = now_ns();
    const bool ok = cudaEventRecord(e, clock.stream) == cudaSuccess && cudaEventSynchronize(e) == cudaSuccess;
    const int64_t after = now_ns();
    if (ok && after - before < best_window) {
      if (best.event != nullptr) cudaEventDestroy(best.event);
      best = Anchor{e, before + (after - before) / 2};
      best_window = after - before;
    } else {
      cudaGetLastError();
      cudaEventDestroy(e);
    }
  }
  if (best.event == nullptr) return;
  const size_t n = clock.anchors.size();
  // Residuals only across back-to-back anchors: after a pause (tracing off, no GPU calls) the
  // previous anchors are old and the line through them says little about the clock now.
  const Anchor* a = nullptr;
  if (n >= 2 && best.host_ns - clock.anchors[n - 1].host_ns < 2 * kReanchorNs) {
    for (size_t i = n - 1; i-- > 0;) {
      const int64_t baseline = clock.anchors[n - 1].host_ns - clock.anchors[i].host_ns;
      if (baseline > 10 * kReanchorNs) break;
      if (baseline >= kMinBaselineNs) {
        a = &clock.anchors[i];
        break;
      }
    }
  }
  if (a != nullptr) {
    // How far the new anchor lies from the clock line through two earlier ones: the error that
    // piecewise-linear placement between anchors can still have.
    const Anchor& b = clock.anchors[n - 1];
    const double gpu_ab = elapsed_ns(a->event, b.event);
    const double rate = gpu_ab > 0 ? static_cast<double>(b.host_ns - a->host_ns) / gpu_ab : 1.0;
    const int64_t predicted = b.host_ns + static_cast<int64_t>(elapsed_ns(b.event, best.event) * rate);
    s.last_residual_ns = best.host_ns - predicted;
    s.max_abs_residual_ns = std::max(s.max_abs_residual_ns, std::abs(s.last_residual_ns));
    if (s.abs_residuals.size() < kResidualsKept) {
      s.abs_residuals.push_back(std::abs(s.last_residual_ns));
    } else {
      s.abs_residuals[s.residual_next++ % kResidualsKept] = std::abs(s.last_residual_ns);
    }
    s.rate_ppm = (rate - 1.0) * 1e6;
  }
  s.last_window_ns = best_window;
  ++s.anchors_made;
  clock.anchors.push_back(best);
  while (clock.anchors.size() > kAnchorsKept) {
    cudaEventDestroy(clock.anchors.front().event);
    clock.anchors.pop_front();
  }
}

// Host time of a completed event that precedes the newest anchor: linear between the two
// anchors around it (the GPU and host clocks run at slightly different rates).
int64_t host_time(const DeviceClock& clock, cudaEvent_t e) {
  const size_t n = clock.anchors.size();
  for (size_t i = n; i-- > 0;) {
    const Anchor& a = clock.anchors[i];
    const double from_a = elapsed_ns(a.event, e);
    if (from_a < 0 && i > 0) continue;
    if (i + 1 < n) {
      const Anchor& b = clock.anchors[i + 1];
      const double gpu_ab = elapsed_ns(a.event, b.event);
      const double rate = gpu_ab > 0 ? static_cast<double>(b.host_ns - a.host_ns) / gpu_ab : 1.0;
      return a.host_ns + static_cast<int64_t>(from_a * rate);
    }
    return a.host_ns + static_cast<int64_t>(from_a);
  }
  return 0;
}

}  // namespace

Resolver& Resolver::instance() {
  static Resolver* r = new Resolver();
  return *r;
}

size_t Resolver::take_pending(Record* records, size_t n) {
  ResolverState& s = state();
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const Record& r = records[i];
    if (r.phase == static_cast<uint8_t>(Phase::kGpuPending)) {
      auto it = s.enqueue_begin.find(r.call_id);
      const int64_t not_before = it != s.enqueue_begin.end() ? it->second : 0;
      if (it != s.enqueue_begin.end()) s.enqueue_begin.erase(it);
      s.pending.push_back(Pending{r, not_before});
      continue;
    }
    if (r.device != kNoDevice &&
        (r.phase == static_cast<uint8_t>(Phase::kCall) || r.phase == static_cast<uint8_t>(Phase::kEnqueue))) {
      if (s.enqueue_begin.size() > 65536) s.enqueue_begin.clear();  // calls that never got events
      s.enqueue_begin[r.call_id] = r.begin_ns;  // kEnqueue comes after kCall and wins
    }
    records[kept++] = r;
  }
  return kept;
}

size_t Resolver::resolve(Record* out, size_t max, bool wait) {
  ResolverState& s = state();
  // This thread's CUDA calls (queries, synchronisations, anchors) must neither fail nor break a
  // CUDA graph that another thread captures in the global mode (the default of torch's
  // CUDAGraph, used by Torch-TensorRT's CUDA graph mode): they obey only this thread's captures.
  static thread_local bool capture_mode_set = false;
  if (!capture_mode_set) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
    if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) cudaGetLastError();
    capture_mode_set = true;
  }
  size_t n = 0;
  const size_t limit = s.pending.size();
  for (size_t scanned = 0; n < max && scanned < limit && !s.pending.empty(); ++scanned) {
    Pending p = s.pending.front();
    s.pending.pop_front();
    const uint16_t device = p.rec.device;
    auto start = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(p.rec.begin_ns));
    auto end = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(p.rec.end_ns));
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    DeviceClock& clock = s.clocks[device];
    bool failed = false;
    if (p.completed_ns == 0) {
      const cudaError_t st = wait ? cudaEventSynchronize(end) : cudaEventQuery(end);
      if (st == cudaErrorNotReady) {
        s.pending.push_back(p);  // later; other threads' spans may be ready
        continue;
      }
      failed = st != cudaSuccess;
      if (failed) cudaGetLastError();
      p.completed_ns = now_ns();
    }
    if (!failed) {
      // Placement needs an anchor taken after the span completed (to interpolate).
      const bool anchored_after = !clock.anchors.empty() && clock.anchors.back().host_ns > p.completed_ns;
      if (!anchored_after) {
        const int64_t last = clock.anchors.empty() ? 0 : clock.anchors.back().host_ns;
        if (wait || now_ns() - last >= kReanchorNs) {
          make_anchor(s, device);
        } else {
          s.pending.push_back(p);  // at the next anchor, at most kReanchorNs from now
          continue;
        }
      }
      if (!clock.anchors.empty()) {
        int64_t b = host_time(clock, start);
        int64_t e = host_time(clock, end);
        // The engine's work cannot start before its launch. An engine-stream start event cannot pass
        // before the runtime's hand-off right before the launch, so it needs no such bound (and the
        // enqueue phase can begin after the launch: in the output-allocator mode it starts after an
        // allocation made from inside enqueueV3).
        if (!(p.rec.flags & kFlagEngineStream) && b < p.not_before_ns) b = p.not_before_ns;
        if (e < b) e = b;
        Record r = p.rec;
        r.begin_ns = b;
        r.end_ns = e;
        r.phase = static_cast<uint8_t>(Phase::kGpu);
        out[n++] = r;
        if (EngineStats::Table* stats = EngineStats::instance().this_thread()) stats->add_gpu(r.engine_id, e - b);
      }
    }
    // Events back to the shared pool for the calling threads.
    SharedPool& pool = shared_pool();
    std::lock_guard<std::mutex> lock(pool.mutex);
    pool.free[device].push_back(start);
    pool.free[device].push_back(end);
  }
  return n;
}

size_t Resolver::pending() const noexcept { return state().pending.size(); }

void Resolver::forget_pending() noexcept {
  ResolverState& s = state();
  s.pending.clear();
  s.enqueue_begin.clear();
  for (auto& clock : s.clocks) clock = DeviceClock{};
}

std::vector<int64_t> Resolver::clock_stats() const {
  const ResolverState& s = state();
  std::vector<int64_t> r = s.abs_residuals;
  auto pct = [&r](double q) -> int64_t {
    if (r.empty()) return 0;
    const size_t k = std::min(r.size() - 1, static_cast<size_t>(q * static_cast<double>(r.size())));
    std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(k), r.end());
    return r[k];
  };
  const int64_t p50 = pct(0.50), p99 = pct(0.99);
  return {s.anchors_made, s.max_abs_residual_ns, s.last_residual_ns, s.last_window_ns,
          static_cast<int64_t>(s.rate_ppm * 1000), p50, p99};
}

double event_pair_host_ns(uint16_t device, int64_t calls) noexcept {
  if (calls <= 0 || device >= kMaxDevices) return -1;
  try {
    std::vector<CallEvents> calls_events(static_cast<size_t>(calls));
    // Two passes: the first creates the pool's events (a one-off cost, not a per-call one), the
    // second reuses them once completed, as calls do after the drainer resolved their events.
    int64_t ns = -1;
    for (int pass = 0; pass < 2; ++pass) {
      bool ok = true;
      const int64_t t0 = now_ns();
      for (CallEvents& ev : calls_events) {
        ev = CallEvents{};
        if (!begin_call(device, &ev) || !end_call(device, &ev)) {
          ok = false;
          break;
        }
      }
      ns = ok ? now_ns() - t0 : -1;
      c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
      cudaDeviceSynchronize();
      for (CallEvents& ev : calls_events) release(device, &ev);
      if (!ok) return -1;
    }
    return static_cast<double>(ns) / static_cast<double>(calls);
  } catch (...) {
    return -1;
  }
}

#else  // CPU-only build: no GPU spans

bool available() noexcept { return false; }
bool set_enabled(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
  return false;
}
bool begin_call(uint16_t, CallEvents*) noexcept { return false; }
bool end_call(uint16_t, CallEvents*) noexcept { return false; }
void release(uint16_t, CallEvents*) noexcept {}
bool stream_trace_installed() noexcept { return false; }

Resolver& Resolver::instance() {
  static Resolver* r = new Resolver();
  return *r;
}
size_t Resolver::take_pending(Record*, size_t n) { return n; }
size_t Resolver::resolve(Record*, size_t, bool) { return 0; }
size_t Resolver::pending() const noexcept { return 0; }
void Resolver::forget_pending() noexcept {}
std::vector<int64_t> Resolver::clock_stats() const { return {0, 0, 0, 0, 0, 0, 0}; }
double event_pair_host_ns(uint16_t, int64_t) noexcept { return -1; }

#endif

}  // namespace gpu
}  // namespace trt_trace
