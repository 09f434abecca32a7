#include "hook/profiler_scopes.h"

#include <deque>
#include <mutex>

#include "hook/engine_registry.h"

namespace trt_trace {
namespace {

using ScopeNames = std::array<std::string, kNumHostPhases + 1>;

// Index = engine id. A deque: elements never move, so a returned pointer stays valid.
std::mutex g_names_mutex;
std::deque<ScopeNames>* g_names = new std::deque<ScopeNames>();  // kept for the life of the process

const ScopeNames* names_for(uint32_t engine_id) {
  std::lock_guard<std::mutex> lock(g_names_mutex);  // profiler is on: a lock per call is noise
  if (g_names->size() <= engine_id) g_names->resize(engine_id + 1);
  ScopeNames& names = (*g_names)[engine_id];
  if (names[0].empty()) {  // built names are never empty ("trt::...")
    const std::string prefix = "trt::" + EngineRegistry::instance().name(engine_id) + "/";
    for (int p = 0; p <= kNumHostPhases; ++p) names[p] = prefix + kPhaseNames[p];
  }
  return &names;
}

}  // namespace

bool detail::profiler_records_user_scopes() noexcept {
  // A profiler is on: does anything record USER_SCOPE events on this thread now (its schedule
  // may be between its active steps)?
  try {
    return at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE).has_value();
  } catch (...) {
    return false;
  }
}

void ProfilerScopes::open(std::optional<at::RecordFunction>& scope, const std::string& name) noexcept {
  try {
    auto callbacks = at::getStepCallbacksUnlessEmpty(at::RecordScope::USER_SCOPE);
    if (!callbacks) return;
    scope.emplace(std::move(*callbacks));
    scope->before(std::string_view(name));
  } catch (...) {
    scope.reset();
  }
}

void ProfilerScopes::open_call(uint32_t engine_id) noexcept {
  try {
    names_ = names_for(engine_id);
  } catch (...) {
    return;
  }
  open(call_, (*names_)[static_cast<int>(Phase::kCall)]);
}

void ProfilerScopes::switch_phase(Phase phase) noexcept {
  if (!call_) return;
  phase_.reset();  // ends the open phase scope
  open(phase_, (*names_)[static_cast<int>(phase)]);
}

}  // namespace trt_trace
