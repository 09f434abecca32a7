#include "hook/gpu_timing.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "common/clock.h"
#include "hook/engine_stats.h"

#ifdef TRT_TRACE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace trt_trace {
namespace gpu {

std::atomic<bool> g_enabled{true};

#ifdef TRT_TRACE_WITH_CUDA

namespace {

constexpr int kMaxDevices = 64;
constexpr int64_t kReanchorNs = 1000000000;  // renew anchors every second
constexpr size_t kAnchorsKept = 8;

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
  if (cudaEventCreateWithFlags(&e, cudaEventDefault) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void give_back(uint16_t device, cudaEvent_t e) {
  if (e != nullptr) t_free[device].push_back(e);
}

}  // namespace

bool available() noexcept { return true; }

bool set_enabled(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
  return true;
}

bool begin_call(uint16_t device, CallEvents* ev) noexcept {
  if (device >= kMaxDevices) return false;
  try {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
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
    return true;
  } catch (...) {
    return false;
  }
}

bool end_call(uint16_t device, CallEvents* ev) noexcept {
  if (ev->start == nullptr) return false;
  try {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
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
  if (device >= kMaxDevices) return;
  give_back(device, static_cast<cudaEvent_t>(ev->start));
  give_back(device, static_cast<cudaEvent_t>(ev->end));
  ev->start = ev->end = nullptr;
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
  Record rec;            // the kGpuPending record (begin/end hold the events)
  int64_t not_before_ns; // the call's enqueue begin
};

struct ResolverState {
  std::array<DeviceClock, kMaxDevices> clocks;
  std::deque<Pending> pending;
  std::unordered_map<uint64_t, int64_t> enqueue_begin;  // call id -> host ns
  std::vector<cudaEvent_t> spare_anchor_events;
  int64_t anchors_made = 0;
  int64_t max_abs_drift_ns = 0;
  int64_t last_drift_ns = 0;
  int64_t last_window_ns = 0;
};

ResolverState& state() {
  static ResolverState* s = new ResolverState();
  return *s;
}

float elapsed_ms(cudaEvent_t from, cudaEvent_t to) {
  float ms = 0.f;
  if (cudaEventElapsedTime(&ms, from, to) != cudaSuccess) {
    cudaGetLastError();
    return 0.f;
  }
  return ms;
}

// A new anchor for `device`, if the last one is older than kReanchorNs.
void maybe_anchor(ResolverState& s, uint16_t device) {
  DeviceClock& clock = s.clocks[device];
  const int64_t now = now_ns();
  if (!clock.anchors.empty() && now - clock.anchors.back().host_ns < kReanchorNs) return;
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
      return;
    }
    const int64_t before = now_ns();
    cudaEventRecord(e, clock.stream);
    cudaEventSynchronize(e);
    const int64_t after = now_ns();
    if (after - before < best_window) {
      if (best.event != nullptr) cudaEventDestroy(best.event);
      best = Anchor{e, before + (after - before) / 2};
      best_window = after - before;
    } else {
      cudaEventDestroy(e);
    }
  }
  if (!clock.anchors.empty()) {
    const Anchor& prev = clock.anchors.back();
    const int64_t predicted = prev.host_ns + static_cast<int64_t>(elapsed_ms(prev.event, best.event) * 1e6);
    s.last_drift_ns = best.host_ns - predicted;
    s.max_abs_drift_ns = std::max(s.max_abs_drift_ns, std::abs(s.last_drift_ns));
  }
  s.last_window_ns = best_window;
  ++s.anchors_made;
  clock.anchors.push_back(best);
  while (clock.anchors.size() > kAnchorsKept) {
    cudaEventDestroy(clock.anchors.front().event);
    clock.anchors.pop_front();
  }
}

// Host time of a completed event: from the latest anchor made before `near_ns`.
int64_t host_time(const DeviceClock& clock, cudaEvent_t e, int64_t near_ns) {
  const Anchor* a = &clock.anchors.front();
  for (const Anchor& cand : clock.anchors) {
    if (cand.host_ns <= near_ns) a = &cand;
  }
  return a->host_ns + static_cast<int64_t>(static_cast<double>(elapsed_ms(a->event, e)) * 1e6);
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
  size_t n = 0;
  size_t scanned = 0;
  const size_t limit = s.pending.size();
  while (n < max && scanned < limit && !s.pending.empty()) {
    Pending p = s.pending.front();
    s.pending.pop_front();
    ++scanned;
    const uint16_t device = p.rec.device;
    auto start = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(p.rec.begin_ns));
    auto end = reinterpret_cast<cudaEvent_t>(static_cast<uintptr_t>(p.rec.end_ns));
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    cudaError_t st = wait ? cudaEventSynchronize(end) : cudaEventQuery(end);
    if (st == cudaErrorNotReady) {
      s.pending.push_back(p);  // later; other threads' spans may be ready
      continue;
    }
    if (st != cudaSuccess) {
      cudaGetLastError();
    } else {
      maybe_anchor(s, device);
      const DeviceClock& clock = s.clocks[device];
      if (!clock.anchors.empty()) {
        int64_t b = host_time(clock, start, p.not_before_ns);
        int64_t e = host_time(clock, end, p.not_before_ns);
        if (b < p.not_before_ns) b = p.not_before_ns;
        if (e < b) e = b;
        Record r = p.rec;
        r.begin_ns = b;
        r.end_ns = e;
        r.phase = static_cast<uint8_t>(Phase::kGpu);
        out[n++] = r;
        EngineStats::instance().add_gpu(r.engine_id, e - b);
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

std::vector<int64_t> Resolver::clock_stats() const {
  const ResolverState& s = state();
  return {s.anchors_made, s.max_abs_drift_ns, s.last_drift_ns, s.last_window_ns};
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

Resolver& Resolver::instance() {
  static Resolver* r = new Resolver();
  return *r;
}
size_t Resolver::take_pending(Record*, size_t n) { return n; }
size_t Resolver::resolve(Record*, size_t, bool) { return 0; }
size_t Resolver::pending() const noexcept { return 0; }
std::vector<int64_t> Resolver::clock_stats() const { return {0, 0, 0, 0}; }

#endif

}  // namespace gpu
}  // namespace trt_trace
