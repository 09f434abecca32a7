// The process-wide switch and call-id counter.
//
// When tracing is off, the hook's whole cost is the thread's hook state, one
// relaxed load of g_tracing, a look for a recording profiler (torch.profiler
// scopes, see profiler_scopes.h: two loads and one call while none records)
// and the hand-off to the original kernel.
#pragma once

#include <atomic>
#include <cstdint>

namespace trt_trace {

extern std::atomic<bool> g_tracing;

inline bool tracing_enabled() noexcept { return g_tracing.load(std::memory_order_relaxed); }
void set_tracing(bool enabled);

// Whether traced calls also go into the trace buffer (the rings), and for which
// session. The switch alone (set_profile_execution) only counts calls into the
// engine table; a tracing session turns recording on with a fresh epoch. A call
// takes the epoch when it begins and writes its records only if that epoch is
// still the current one when it ends, so a call that straddles the end of one
// session never reaches the next session's file. 0 = not recording.
extern std::atomic<uint32_t> g_recording_epoch;
inline uint32_t recording_epoch() noexcept { return g_recording_epoch.load(std::memory_order_relaxed); }
// On: a new epoch (never 0); off: 0.
void set_recording(bool enabled);

// Call ids: process-wide unique ids of traced calls (from 1), carried in every
// record of a call, in the trace's args and as the NVTX payload. Each calling
// thread takes a block of kCallIdBlock ids at a time and hands them out in
// order (hook/call_scope.h), so calls do not contend for one shared counter;
// ids therefore increase per thread, not across threads.
constexpr uint64_t kCallIdBlock = 1024;
// The first id of a fresh block of kCallIdBlock ids.
uint64_t reserve_call_ids() noexcept;

}  // namespace trt_trace
