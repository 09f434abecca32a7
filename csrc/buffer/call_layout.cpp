#include "buffer/call_layout.h"

namespace trt_trace {

size_t expand_calls(Record* buf, size_t first, size_t n) noexcept {
  size_t w = 0;
  Record call{};  // the last kCall read (its slot may be overwritten by the expansion)
  for (size_t i = first; i < first + n; ++i) {
    const Record r = buf[i];
    if (r.phase != static_cast<uint8_t>(Phase::kPhaseBounds)) {
      if (r.phase == static_cast<uint8_t>(Phase::kCall)) call = r;
      buf[w++] = r;
      continue;
    }
    const PhaseBoundsRecord bounds = as<PhaseBoundsRecord>(r);
    const int64_t b[kNumHostPhases + 1] = {call.begin_ns, bounds.inputs_begin_ns, bounds.outputs_begin_ns,
                                           bounds.enqueue_begin_ns, call.end_ns};
#pragma GCC unroll 4
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
