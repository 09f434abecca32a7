// GPU timing's own host time, measured where it is paid (benchmark support).
//
// A measured call's GPU events cost the calling thread several CUDA runtime calls; how much of a
// whole call's added time they are, and which of them grows inside a real call, cannot be read off
// a loop of the same CUDA calls alone (tools/bench/gpu_event_sampling.py). While switched on
// (ops.gpu_self_time), each step below adds its wall time to a process-wide sum; off (the default)
// a step pays one relaxed load, and only on measured calls.
#pragma once

#include <cstdint>

#include "common/clock.h"
#include "common/switch.h"

namespace trt_trace {
namespace gpu {

enum SelfStep : int {
  kSelfBegin,        // begin_call: the capture check and the start event
  kSelfEngineStart,  // the engine stream's start event, at the runtime's wait (engine_stream_trace.h)
  kSelfEngineEnd,    // the engine stream's end event, at the runtime's record there
  kSelfEnd,          // end_call: the caller stream's end event
  kSelfSteps
};

extern Switch self_timing;
void add_self_time(SelfStep step, int64_t ns) noexcept;

// The sums since the last take (ns, then the number of times each step ran), reset by taking them.
struct SelfTimes {
  int64_t ns[kSelfSteps];
  int64_t count[kSelfSteps];
};
SelfTimes take_self_times() noexcept;

// Times the scope it lives in as `step`, while self-timing is on.
class SelfTimer {
 public:
  explicit SelfTimer(SelfStep step) noexcept
      : step_(step), t0_(self_timing() ? now_ns() : 0) {}
  ~SelfTimer() {
    if (t0_ != 0) add_self_time(step_, now_ns() - t0_);
  }
  SelfTimer(const SelfTimer&) = delete;
  SelfTimer& operator=(const SelfTimer&) = delete;

 private:
  SelfStep step_;
  int64_t t0_;
};

}  // namespace gpu
}  // namespace trt_trace
