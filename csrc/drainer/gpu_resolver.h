// GPU execution spans of traced calls: the drainer's half. The calling
// threads' half, which records the events, is gpu_events.h; docs/gpu-clock.md
// has the whole model.
//
// The drainer hands every drained batch to the resolver: it takes the
// kGpuPending records (two event handles each) out, queries the span's last
// event (never blocking, except at the final drain) and turns each completed
// span into a kGpu record on the host clock:
//   host(ev) = anchor.host_ns + elapsed(anchor.event, ev) * rate
// Each event costs one elapsed-time call, measured from the newest anchor: the
// anchors' GPU distances from each other and the rates between them are
// measured once, when an anchor is made, and kept (the resolver's CUDA calls
// take the same driver locks as the calling threads' event records, so every
// one saved is host time given back to the calls).
// An anchor is an event recorded on an idle stream of the resolver's own and
// synchronised, its host time the midpoint of the tightest of three
// record->sync windows. A new anchor is made every 100 ms while spans resolve,
// and an event is placed linearly between the two anchors around it, so the GPU
// clock's rate difference cancels out; each new anchor measures the residual,
// its distance from the clock line through two before it. A caller-stream span
// starts no earlier than the call's enqueue phase: the engine's work cannot
// start before it is launched.
#pragma once

#include <array>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <vector>

#include "common/leaked.h"
#include "common/record.h"
#include "hook/gpu_events.h"

namespace trt_trace {
namespace gpu {

// How GPU times were placed on the host clock (torch.ops.trt_trace.gpu_clock_stats).
struct ClockStats {
  int64_t anchors = 0;               // anchors made
  int64_t max_abs_residual_ns = 0;   // the largest distance of an anchor from the line through earlier ones
  int64_t last_residual_ns = 0;
  int64_t anchor_window_ns = 0;      // the last anchor's record->sync window
  int64_t anchors_put_off = 0;       // anchors not made: their windows were loose (gpu_resolver.cpp)
  double gpu_clock_rate_ppm = 0;     // GPU clock rate vs CLOCK_MONOTONIC - 1, last interval
  int64_t p50_abs_residual_ns = 0;   // over the last kResidualsKept anchors
  int64_t p99_abs_residual_ns = 0;
};

// Drainer side. Not thread-safe: used under the drain lock (one consumer at a time).
class Resolver : public Leaked<Resolver> {
 public:
  // Takes the pending GPU records out of records[0..n) (compacting the rest in
  // place; returns the new n) and remembers each call's enqueue begin.
  size_t take_pending(Record* records, size_t n);
  // Appends up to max resolved kGpu / kCallerWait records to out. wait: block
  // until every pending span is complete (final drain only).
  size_t resolve(Record* out, size_t max, bool wait);
  size_t pending() const noexcept { return pending_.size(); }
  // A forked child cannot use its parent's CUDA events: forget them (no CUDA call).
  void forget_pending() noexcept;
  ClockStats clock_stats() const;

 private:
  struct Anchor {
    void* event;  // cudaEvent_t
    int64_t host_ns;
    double gap_ns = 0;  // GPU ns from the anchor before it (0 for a clock's first)
    double rate = 1.0;  // host ns per GPU ns from the anchor before it to this one
  };
  struct DeviceClock {
    void* stream = nullptr;  // cudaStream_t: the resolver's own idle stream
    std::deque<Anchor> anchors;
    int64_t tightest_window_ns = INT64_MAX;  // the tightest record->sync window of its anchors
  };
  struct Pending {
    GpuPendingRecord rec;       // the call's kGpuPending slot: its engine span's two events
    int64_t not_before_ns = 0;  // the call's enqueue begin
    int64_t completed_ns = 0;   // host time when the end event was seen complete (0: not yet)
    bool has_wait = false;      // the call's kCallerWaitPending record came with it
    GpuPendingRecord wait;      //   (its kCallerWaitPending slot: the caller-stream events)
  };

  // Records an anchor for `device` now; false where a loose one was put off (never if `must`): the
  // spans then wait for the next drain. Where CUDA fails there is no anchor, and true.
  bool make_anchor(uint16_t device, bool must);
  // Host time of a completed event of the device (one elapsed-time call, two for an event more
  // than a second older than the newest anchor); false where CUDA cannot time it.
  static bool host_time(const DeviceClock& clock, void* event, int64_t* host_ns);
  void note_residual(int64_t residual_ns);

  std::array<DeviceClock, kMaxDevices> clocks_;
  std::deque<Pending> pending_;
  std::unordered_map<uint64_t, int64_t> enqueue_begin_;  // call id -> host ns
  std::unordered_map<uint64_t, GpuPendingRecord> caller_wait_;  // call id -> its kCallerWaitPending, until its kGpuPending
  ClockStats stats_;                                     // percentiles filled in by clock_stats()
  std::vector<int64_t> abs_residuals_;                   // the last kResidualsKept, for percentiles
  size_t residual_next_ = 0;
};

}  // namespace gpu
}  // namespace trt_trace
