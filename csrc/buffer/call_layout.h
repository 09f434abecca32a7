// How a traced call travels through its thread's ring, and how the drainer
// turns it into the records it hands out.
//
// A call is four host phases that partition it; writing a 40-byte record per
// phase on the inference thread (up to five records per call) costs that
// thread ~80 instructions per call in stores alone. The hook writes two slots
// instead, and the drainer, off the inference thread, derives the rest:
//
//   slot 0  the kCall record, as handed out (begin, end, call id, engine, ...)
//   slot 1  a PhaseBoundsRecord (common/record.h): inputs, outputs and enqueue
//           begin (the workspace phase starts at the call's begin, the enqueue
//           phase ends at its end)
//
// expand_calls() makes of the pair the kCall record and one record per phase
// that took time (none of zero length), exactly what the hook wrote before
// (same fields, same order). Other slots (a call's GpuPendingRecords, layers, synthetic
// records) pass unchanged. Rings never hand out a call's slot without its
// bounds slot (RecordRing::pop), and drops count events, not slots, so
// `produced == recorded + dropped` holds for what the trace shows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/record.h"

namespace trt_trace {

constexpr size_t kCallSlots = 2;
constexpr size_t kMaxRecordsPerCall = 1 + kNumHostPhases;  // from its kCallSlots slots

// How many slots to drain into a buffer of max records: they expand into at
// most 2.5 records each (a call pair into up to 5), so at most max records, and
// placed at buf[max - slots_for_records(max), ...) they satisfy expand_calls'
// in-place condition. 0 below 10 records.
constexpr size_t slots_for_records(size_t max) noexcept { return max < 10 ? 0 : (max - 5) * 2 / 5; }

// Expands the n slots at buf[first, first + n) into buf[0, result): records in
// slot order, each call pair expanded. In place: requires first >= 1.5 n (the
// expansion, at most 2.5 records per slot read, then never overwrites a slot
// not yet read) and no call pair split at either end.
size_t expand_calls(Record* buf, size_t first, size_t n) noexcept;

}  // namespace trt_trace
