// One drain step: records moved out of every thread's ring, GPU spans resolved so far appended. The
// one consumer of the rings and the GPU resolver: the native writer's thread in a session, the
// drain ops (tests) otherwise; a lock keeps
// them one at a time.
#pragma once

#include <cstddef>

#include "common/record.h"

namespace trt_trace {
namespace drainer {

// Records into out (room for `max` >= kMinDrainRecords (buffer/call_layout.h) records: a call's ring slots expand into up to
// kMaxRecordsPerCall records); returns how many. wait_gpu: wait for every pending GPU span (the
// final drain; never on a hot path).
size_t drain_batch(Record* out, size_t max, bool wait_gpu);

// In a forked child: the lock may have been held by a parent thread, and the parent's pending GPU
// spans are not the child's to resolve.
void after_fork_in_child() noexcept;

}  // namespace drainer
}  // namespace trt_trace
