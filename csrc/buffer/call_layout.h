// How a traced call travels through its thread's ring, and how the drainer
// turns it into the records it hands out.
//
// A call is its host phases (common/phases.h) that partition it; writing a
// 40-byte record per phase on the inference thread (up to five records per call
// with four phases) costs that thread ~80 instructions per call in stores alone.
// The hook writes kCallSlots slots instead, and the drainer, off the inference
// thread, derives the rest:
//
//   slot 0     the kCall record, as handed out (begin, end, call id, engine, ...)
//   slot 1...  kPhaseBoundsSlots PhaseBoundsRecords (common/record.h): where each
//              host phase after the first begins, three to a slot (the first
//              phase starts at the call's begin, the last ends at its end); one
//              slot for up to four host phases
//
// expand_calls() makes of these the kCall record and one record per phase
// that took time (none of zero length), exactly what the hook wrote before
// (same fields, same order). Other slots (a call's GpuPendingRecords, layers, synthetic
// records) pass unchanged. Rings never hand out a call's slot without its
// bounds slots (RecordRing::pop), and drops count events, not slots, so
// `produced == recorded + dropped` holds for what the trace shows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/record.h"

namespace trt_trace {

constexpr size_t kCallSlots = 1 + kPhaseBoundsSlots;
constexpr size_t kMaxRecordsPerCall = 1 + kNumHostPhases;  // from its kCallSlots slots
// The smallest buffer a drain fills: two calls' records.
constexpr size_t kMinDrainRecords = 2 * kMaxRecordsPerCall;

// How many slots to drain into a buffer of max records: they expand into at
// most kMaxRecordsPerCall / kCallSlots records each (with four host phases, a
// call's two slots into up to 5: 2.5), so at most max records, and placed at
// buf[max - slots_for_records(max), ...) they satisfy expand_calls' in-place
// condition. 0 below kMinDrainRecords records.
constexpr size_t slots_for_records(size_t max) noexcept {
  return max < kMinDrainRecords ? 0 : (max - kMaxRecordsPerCall) * kCallSlots / kMaxRecordsPerCall;
}

// Expands the n slots at buf[first, first + n) into buf[0, result): records in
// slot order, each call's slots expanded. In place: requires
// first >= n * (kMaxRecordsPerCall - kCallSlots) / kCallSlots (1.5 n with four
// host phases: the expansion then never overwrites a slot not yet read) and no
// call's slots split at either end.
size_t expand_calls(Record* buf, size_t first, size_t n) noexcept;

}  // namespace trt_trace
