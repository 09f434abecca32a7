// The process-wide switch and call-id counter.
//
// When tracing is off, the hook's whole cost is one relaxed load of g_tracing,
// a look for a recording profiler (torch.profiler scopes, see
// profiler_scopes.h) and the hand-off to the original kernel.
#pragma once

#include <atomic>
#include <cstdint>

namespace trt_trace {

extern std::atomic<bool> g_tracing;

inline bool tracing_enabled() noexcept { return g_tracing.load(std::memory_order_relaxed); }
void set_tracing(bool enabled);

// Call ids: process-wide unique ids of traced calls (from 1), carried in every
// record of a call, in the trace's args and as the NVTX payload. Each calling
// thread takes a block of kCallIdBlock ids at a time and hands them out in
// order (hook/call_scope.h), so calls do not contend for one shared counter;
// ids therefore increase per thread, not across threads.
constexpr uint64_t kCallIdBlock = 1024;
// The first id of a fresh block of kCallIdBlock ids.
uint64_t reserve_call_ids() noexcept;

}  // namespace trt_trace
