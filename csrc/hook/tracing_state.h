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

// Process-wide unique, increasing id of a traced call (starts at 1). Carried in
// every record of the call, in the trace's args and as the NVTX payload.
uint64_t next_call_id() noexcept;

}  // namespace trt_trace
