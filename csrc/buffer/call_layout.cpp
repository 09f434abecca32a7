#include "buffer/call_layout.h"

namespace trt_trace {

size_t expand_calls(Record* buf, size_t first, size_t n) noexcept {
  size_t w = 0;
  Record call{};  // the last kCall read (its slot may be overwritten by the expansion)
  int64_t b[kNumHostPhases + 1] = {};  // the call's phase bounds: its begin, the inner bounds, its end
  int bounds_slot = 0;                 // the call's bounds slots read so far
  for (size_t i = first; i < first + n; ++i) {
    const Record r = buf[i];
    if (r.phase != static_cast<uint8_t>(Phase::kPhaseBounds)) {
      if (r.phase == static_cast<uint8_t>(Phase::kCall)) {
        call = r;
        bounds_slot = 0;
      }
      buf[w++] = r;
      continue;
    }
    const PhaseBoundsRecord bounds = as<PhaseBoundsRecord>(r);
    const int64_t in_slot[kBoundsPerSlot] = {bounds.bound0_ns, bounds.bound1_ns, bounds.bound2_ns};
    for (int k = 0; k < kBoundsPerSlot && kBoundsPerSlot * bounds_slot + k < kNumInnerBounds; ++k) {
      b[1 + kBoundsPerSlot * bounds_slot + k] = in_slot[k];
    }
    if (++bounds_slot < kPhaseBoundsSlots) continue;  // the phases are written once all bounds are read
    b[0] = call.begin_ns;
    b[kNumHostPhases] = call.end_ns;
#pragma GCC unroll 8
    for (int p = 0; p < kNumHostPhases; ++p) {
      if (b[p + 1] > b[p]) {
        buf[w++] = span_record(static_cast<Phase>(p + 1), b[p], b[p + 1], call.call_id, call.engine_id,
                               call.thread_id, call.flags, call.device, 0);
      }
    }
  }
  return w;
}

}  // namespace trt_trace
