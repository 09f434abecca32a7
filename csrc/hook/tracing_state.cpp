#include "hook/tracing_state.h"

#include "engines/engine_registry.h"

namespace trt_trace {

std::atomic<bool> g_tracing{false};

std::atomic<uint32_t> g_recording_epoch{0};

namespace {
std::atomic<uint64_t> g_next_call_id{1};
std::atomic<uint32_t> g_last_epoch{0};
}

void set_tracing(bool enabled) {
  const bool was = g_tracing.exchange(enabled);
  // Tracing off: hold no reference to the user's engine objects.
  if (was && !enabled) EngineRegistry::instance().release_all();
}

void set_recording(bool enabled) {
  uint32_t epoch = 0;
  if (enabled) {
    do {
      epoch = g_last_epoch.fetch_add(1, std::memory_order_relaxed) + 1;
    } while (epoch == 0);  // wrapped: 0 means off
  }
  g_recording_epoch.store(epoch, std::memory_order_release);
}

uint64_t reserve_call_ids() noexcept { return g_next_call_id.fetch_add(kCallIdBlock, std::memory_order_relaxed); }

}  // namespace trt_trace
