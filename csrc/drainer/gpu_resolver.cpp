#include "drainer/gpu_resolver.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "common/clock.h"
#include "stats/engine_stats.h"

#ifdef TRT_TRACE_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>

#include "hook/gpu_event_pool.h"
#endif

namespace trt_trace {
namespace gpu {

#ifdef TRT_TRACE_WITH_CUDA

namespace {

constexpr int64_t kReanchorNs = 100000000;  // a new anchor every 100 ms while spans resolve
// Residual statistic: the clock line is drawn through two anchors at least this far apart (two
// anchors close together, e.g. a final drain right after a periodic anchor, turn their record->sync
// windows into a large rate error that says nothing about placement).
constexpr int64_t kMinBaselineNs = 20000000;
constexpr size_t kResidualsKept = 1 << 16;
constexpr size_t kAnchorsKept = 64;
// Anchor tries: kTries always, up to kMoreTries more while the best window is loose (over twice the
// device's tightest plus kLooseSlackNs); a loose anchor is put off for at most kPutOffAtMostNs.
constexpr int kTries = 3;
constexpr int kMoreTries = 5;
constexpr int64_t kLooseSlackNs = 2000;
constexpr int64_t kPutOffAtMostNs = 4 * kReanchorNs;

cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }

// Beyond this distance from the anchor it is measured from, an event is measured again from the
// anchor just before it: cudaEventElapsedTime's float milliseconds lose 0.12 us per ulp at 1 s.
constexpr double kPreciseNs = 1e9;

// Elapsed ns from a to b (both complete), as CUDA measures it (0.5 us resolution); false if it cannot.
bool elapsed_ns(void* a, void* b, double* ns) {
  float ms = 0.f;
  if (cudaEventElapsedTime(&ms, as_event(a), as_event(b)) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  *ns = static_cast<double>(ms) * 1e6;
  return true;
}

}  // namespace

// The tightest of three record->sync windows on an idle stream of our own, its host time the
// window's midpoint: an anchor is placed within half its window. A window far over the tightest this
// device has given (the drain thread preempted between record and sync, the driver lock held by a
// calling thread) makes a poor anchor: up to kMoreTries more tries, and if none is tight the anchor is
// put off (its spans wait for the next drain) unless `must` (the final drain) or the clock has had
// none for kPutOffAtMostNs.
bool Resolver::make_anchor(uint16_t device, bool must) {
  DeviceClock& clock = clocks_[device];
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  if (clock.stream == nullptr) {
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
      cudaGetLastError();
      return true;  // no anchor, nothing to wait for: placement fails as CUDA does
    }
    clock.stream = stream;
  }
  Anchor best{nullptr, 0};
  int64_t best_window = INT64_MAX;
  const auto loose = [&clock](int64_t window) {
    return clock.tightest_window_ns != INT64_MAX && window > 2 * clock.tightest_window_ns + kLooseSlackNs;
  };
  for (int attempt = 0; attempt < kTries + kMoreTries; ++attempt) {
    if (attempt >= kTries && !loose(best_window)) break;
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDefault) != cudaSuccess) {
      cudaGetLastError();
      break;
    }
    const int64_t before = now_ns();
    const bool ok = cudaEventRecord(e, static_cast<cudaStream_t>(clock.stream)) == cudaSuccess &&
                    cudaEventSynchronize(e) == cudaSuccess;
    const int64_t after = now_ns();
    if (ok && after - before < best_window) {
      if (best.event != nullptr) cudaEventDestroy(as_event(best.event));
      best = Anchor{e, before + (after - before) / 2};
      best_window = after - before;
    } else {
      cudaGetLastError();
      cudaEventDestroy(e);
    }
  }
  if (best.event == nullptr) return true;
  if (loose(best_window) && !must && !clock.anchors.empty() &&
      best.host_ns - clock.anchors.back().host_ns < kPutOffAtMostNs) {
    cudaEventDestroy(as_event(best.event));
    ++stats_.anchors_put_off;
    return false;
  }
  clock.tightest_window_ns = std::min(clock.tightest_window_ns, best_window);
  const size_t n = clock.anchors.size();
  if (n > 0) {  // the one measurement between two anchors, kept for every event placed between them
    const Anchor& prev = clock.anchors[n - 1];
    double gap = 0;
    if (elapsed_ns(prev.event, best.event, &gap) && gap > 0) {
      best.gap_ns = gap;
      best.rate = static_cast<double>(best.host_ns - prev.host_ns) / gap;
    }
  }
  // Residuals only across back-to-back anchors: after a pause (tracing off, no GPU calls) the
  // previous anchors are old and the line through them says little about the clock now.
  size_t a = n;  // the earlier anchor of the line, if any
  if (n >= 2 && best.host_ns - clock.anchors[n - 1].host_ns < 2 * kReanchorNs) {
    for (size_t i = n - 1; i-- > 0;) {
      const int64_t baseline = clock.anchors[n - 1].host_ns - clock.anchors[i].host_ns;
      if (baseline > 10 * kReanchorNs) break;
      if (baseline >= kMinBaselineNs) {
        a = i;
        break;
      }
    }
  }
  if (a < n && best.gap_ns > 0) {
    // How far the new anchor lies from the clock line through two earlier ones: the error that
    // piecewise-linear placement between anchors can still have.
    const Anchor& b = clock.anchors[n - 1];
    double gpu_ab = 0;
    for (size_t i = a + 1; i < n; ++i) gpu_ab += clock.anchors[i].gap_ns;
    const double rate = gpu_ab > 0 ? static_cast<double>(b.host_ns - clock.anchors[a].host_ns) / gpu_ab : 1.0;
    const int64_t predicted = b.host_ns + static_cast<int64_t>(best.gap_ns * rate);
    note_residual(best.host_ns - predicted);
    stats_.gpu_clock_rate_ppm = (rate - 1.0) * 1e6;
  }
  stats_.anchor_window_ns = best_window;
  ++stats_.anchors;
  clock.anchors.push_back(best);
  while (clock.anchors.size() > kAnchorsKept) {
    cudaEventDestroy(as_event(clock.anchors.front().event));
    clock.anchors.pop_front();
  }
  return true;
}

void Resolver::note_residual(int64_t residual_ns) {
  stats_.last_residual_ns = residual_ns;
  stats_.max_abs_residual_ns = std::max(stats_.max_abs_residual_ns, std::abs(residual_ns));
  if (abs_residuals_.size() < kResidualsKept) {
    abs_residuals_.push_back(std::abs(residual_ns));
  } else {
    abs_residuals_[residual_next_++ % kResidualsKept] = std::abs(residual_ns);
  }
}

// Linear between the two anchors around the event (the GPU and host clocks run at slightly
// different rates). The event is measured from the newest anchor and located among the earlier ones
// by their kept distances, so it costs one elapsed-time call.
bool Resolver::host_time(const DeviceClock& clock, void* event, int64_t* host_ns) {
  const size_t n = clock.anchors.size();
  if (n == 0) return false;
  double from_newest = 0;  // <= 0 for an event before the newest anchor (the usual case)
  if (!elapsed_ns(clock.anchors[n - 1].event, event, &from_newest)) return false;
  // Walk back to the anchor just before the event: i, at `from_i` GPU ns before the event.
  size_t i = n - 1;
  double from_i = from_newest;
  bool measure_again = std::abs(from_newest) > kPreciseNs;
  while (from_i < 0 && i > 0) {
    if (clock.anchors[i].gap_ns <= 0) {  // its distance from the one before is unknown: measure from here on
      measure_again = true;
      if (!elapsed_ns(clock.anchors[i - 1].event, event, &from_i)) return false;
    } else {
      from_i += clock.anchors[i].gap_ns;
    }
    --i;
  }
  const Anchor& a = clock.anchors[i];
  if (measure_again && !elapsed_ns(a.event, event, &from_i)) return false;
  // The rate of the interval the event lies in: from anchor i to i + 1; after the newest anchor (or
  // before the oldest kept one) that of the nearest interval.
  const double rate = i + 1 < n ? clock.anchors[i + 1].rate : a.rate;
  *host_ns = a.host_ns + static_cast<int64_t>(from_i * rate);
  return true;
}

size_t Resolver::take_pending(Record* records, size_t n) {
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    const Record& r = records[i];
    if (r.phase == static_cast<uint8_t>(Phase::kCallerWaitPending)) {
      caller_wait_[r.call_id] = as<GpuPendingRecord>(r);  // its kGpuPending follows (written together, drained in order)
      continue;
    }
    if (r.phase == static_cast<uint8_t>(Phase::kGpuPending)) {
      auto it = enqueue_begin_.find(r.call_id);
      const int64_t not_before = it != enqueue_begin_.end() ? it->second : 0;
      if (it != enqueue_begin_.end()) enqueue_begin_.erase(it);
      Pending p{as<GpuPendingRecord>(r), not_before, 0};
      auto w = caller_wait_.find(r.call_id);
      if (w != caller_wait_.end()) {
        p.has_wait = true;
        p.wait = w->second;
        caller_wait_.erase(w);
      }
      pending_.push_back(p);
      continue;
    }
    if (r.device != kNoDevice &&
        (r.phase == static_cast<uint8_t>(Phase::kCall) || r.phase == static_cast<uint8_t>(Phase::kEnqueue))) {
      if (enqueue_begin_.size() > 65536) enqueue_begin_.clear();  // calls that never got events
      enqueue_begin_[r.call_id] = r.begin_ns;  // kEnqueue comes after kCall and wins
    }
    records[kept++] = r;
  }
  return kept;
}

namespace {
// The span a resolved pending record becomes: the same call, engine, thread, flags, device and stream.
Record resolved_span(const GpuPendingRecord& p, Phase phase, int64_t begin_ns, int64_t end_ns) {
  return span_record(phase, begin_ns, end_ns, p.call_id, p.engine_id, p.thread_id, p.flags, p.device, p.stream);
}
}  // namespace

size_t Resolver::resolve(Record* out, size_t max, bool wait) {
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
  const size_t limit = pending_.size();
  for (size_t scanned = 0; n + 2 <= max && scanned < limit && !pending_.empty(); ++scanned) {
    Pending p = pending_.front();
    pending_.pop_front();
    const uint16_t device = p.rec.device;
    void* start = event_handle(p.rec.start_event);
    void* end = event_handle(p.rec.stop_event);
    void* last = p.has_wait ? event_handle(p.wait.stop_event) : end;
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
    DeviceClock& clock = clocks_[device];
    bool failed = false;
    if (p.completed_ns == 0) {
      // The end events only: each start completes before its end (one stream). With a caller-stream
      // wait both ends: the engine-stream end is recorded after the runtime's own hand-off event
      // (c10 reports a record once it is made), which is all the caller's stream waits for, so
      // either end may complete last.
      const auto complete = [wait](void* e) {
        return wait ? cudaEventSynchronize(as_event(e)) : cudaEventQuery(as_event(e));
      };
      cudaError_t st = complete(last);
      if (st == cudaSuccess && last != end) st = complete(end);
      if (st == cudaErrorNotReady) {
        pending_.push_back(p);  // later; other threads' spans may be ready
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
        const int64_t newest = clock.anchors.empty() ? 0 : clock.anchors.back().host_ns;
        if (!(wait || now_ns() - newest >= kReanchorNs) || !make_anchor(device, wait)) {
          pending_.push_back(p);  // at the next anchor, at most kReanchorNs from now
          continue;
        }
      }
      int64_t b = 0, e = 0, wait_b = 0, wait_e = 0;
      const bool placed = host_time(clock, start, &b) && host_time(clock, end, &e) &&
                          (!p.has_wait || (host_time(clock, event_handle(p.wait.start_event), &wait_b) &&
                                           host_time(clock, event_handle(p.wait.stop_event), &wait_e)));
      if (placed) {
        // The engine's work cannot start before its launch (an idle GPU reaches a start event as soon
        // as it is recorded, before the host has launched anything). Except where the enqueue phase
        // begins only after the span's end: in the output-allocator mode the phase model sees the
        // enqueue start after an allocation made from inside enqueueV3, so that bound would squash
        // an engine-stream span to nothing (seen with the real 2.11 runtime).
        const bool late_enqueue = (p.rec.flags & kFlagEngineStream) && p.not_before_ns >= e;
        if (!late_enqueue && b < p.not_before_ns) b = p.not_before_ns;
        if (e < b) e = b;
        if (p.has_wait) {
          // The caller's stream waited from reaching the call (not before its launch, as above) to
          // its release. The engine's stream waited for the caller's and the caller's for the
          // engine's, so on the GPU the wait contains the engine span; placement resolves 0.5 us
          // (cudaEventElapsedTime), so the containment is restated rather than trusted.
          out[n++] = resolved_span(p.wait, Phase::kCallerWait,
                                   std::min(b, std::max(wait_b, late_enqueue ? INT64_MIN : p.not_before_ns)),
                                   std::max(e, wait_e));
        }
        out[n++] = resolved_span(p.rec, Phase::kGpu, b, e);
        if (EngineStats::Table* stats = EngineStats::instance().this_thread()) stats->add_gpu(p.rec.engine_id, e - b);
      }
    }
    give_back_shared(device, as_event(start), as_event(end));  // for the calling threads
    if (p.has_wait) give_back_shared(device, as_event(event_handle(p.wait.start_event)), as_event(event_handle(p.wait.stop_event)));
  }
  return n;
}

void Resolver::forget_pending() noexcept {
  pending_.clear();
  enqueue_begin_.clear();
  caller_wait_.clear();
  for (auto& clock : clocks_) clock = DeviceClock{};
}

ClockStats Resolver::clock_stats() const {
  ClockStats out = stats_;
  std::vector<int64_t> r = abs_residuals_;
  auto pct = [&r](double q) -> int64_t {
    if (r.empty()) return 0;
    const size_t k = std::min(r.size() - 1, static_cast<size_t>(q * static_cast<double>(r.size())));
    std::nth_element(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(k), r.end());
    return r[k];
  };
  out.p50_abs_residual_ns = pct(0.50);
  out.p99_abs_residual_ns = pct(0.99);
  return out;
}

#else  // CPU-only build: no GPU spans

size_t Resolver::take_pending(Record*, size_t n) { return n; }
size_t Resolver::resolve(Record*, size_t, bool) { return 0; }
void Resolver::forget_pending() noexcept {}
ClockStats Resolver::clock_stats() const { return stats_; }

#endif

}  // namespace gpu
}  // namespace trt_trace
