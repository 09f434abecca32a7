#include "hook/tracing_state.h"

#include "hook/engine_registry.h"

namespace trt_trace {

std::atomic<bool> g_tracing{false};

namespace {
std::atomic<uint64_t> g_next_call_id{1};
}

void set_tracing(bool enabled) {
  const bool was = g_tracing.exchange(enabled);
  // Tracing off: hold no reference to the user's engine objects.
  if (was && !enabled) EngineRegistry::instance().release_all();
}

uint64_t reserve_call_ids() noexcept { return g_next_call_id.fetch_add(kCallIdBlock, std::memory_order_relaxed); }

}  // namespace trt_trace
