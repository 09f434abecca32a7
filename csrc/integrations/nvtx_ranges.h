// NVTX ranges for Nsight Systems, in a "trt_trace" domain: one range per traced
// call named after the engine, with the call's phases nested inside, each
// carrying the call id as a uint64 payload: the same id as the trace's
// `call_id` arg, so nsys rows and trace slices join without clock arithmetic.
//
// Off unless switched on (TRT_TRACE_NVTX=1 / set_nvtx). NVTX v3 is header-only;
// with no tool attached each call is a cheap no-op. Built only where the NVTX
// headers were found (TRT_TRACE_WITH_NVTX); elsewhere these are no-ops.
#pragma once

#include <cstdint>

#include "common/switch.h"

namespace trt_trace {
namespace nvtx {

// The switch (read as enabled()); set it through set_enabled, which returns
// false where NVTX was not compiled in.
extern Switch enabled;
bool set_enabled(bool on);

void push_call(uint32_t engine_id, uint64_t call_id) noexcept;
void push_phase(uint8_t phase, uint64_t call_id) noexcept;  // Phase value (workspace..enqueue)
void pop() noexcept;

}  // namespace nvtx
}  // namespace trt_trace
