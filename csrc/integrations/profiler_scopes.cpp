#include "integrations/profiler_scopes.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>

#include "engines/engine_registry.h"

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

namespace {

// The op callbacks around the profiler's (profiler_scopes.h), on this thread while a profiled call runs.
thread_local bool t_op_callbacks = false;
thread_local at::CallbackHandle t_before = at::INVALID_CALLBACK_HANDLE;
thread_local at::CallbackHandle t_after = at::INVALID_CALLBACK_HANDLE;
thread_local bool t_early = false;  // t_before runs before the profiler's start callback

}  // namespace

bool profiler_op_callbacks_installed() noexcept { return t_op_callbacks; }

void ProfilerScopes::add_op_callbacks() noexcept {
  if (t_op_callbacks) return;  // an outer profiled call on this thread has them
  try {
    // Both go after the profiler's own (this thread's, added when it started); the first is then moved
    // in front of all of them. Callbacks run in that order, starts and ends alike (ATen's
    // LocalCallbackManager: the process-wide ones first, then this thread's in their order).
    t_before = at::addThreadLocalCallback(
        at::RecordFunctionCallback(&detail::before_profiled_op, nullptr).scopes({at::RecordScope::FUNCTION}));
    t_after = at::addThreadLocalCallback(
        at::RecordFunctionCallback(nullptr, &detail::after_profiled_op).scopes({at::RecordScope::FUNCTION}));
    at::RecordFunctionTLS tls = at::get_record_function_tls_();
    auto& callbacks = tls.sorted_tls_callbacks_;
    auto it = std::find_if(callbacks.begin(), callbacks.end(),
                           [](const at::RecordFunctionCallbacksEntry& e) { return e.handle_ == t_before; });
    if (it != callbacks.end()) {
      std::rotate(callbacks.begin(), it, it + 1);
      at::set_record_function_tls_(tls);
    }
    t_op_callbacks = true;
    hooked_ = true;
    // A process-wide profiler's callbacks run before every thread's: ours cannot come first.
    t_early = it != callbacks.end() && torch::profiler::impl::ProfilerStateBase::get(/*global=*/true) == nullptr;
  } catch (...) {
    remove_op_callbacks();
  }
}

void ProfilerScopes::remove_op_callbacks() noexcept {
  for (at::CallbackHandle* handle : {&t_before, &t_after}) {
    if (*handle == at::INVALID_CALLBACK_HANDLE) continue;
    try {
      at::removeCallback(*handle);
    } catch (...) {
    }
    *handle = at::INVALID_CALLBACK_HANDLE;
  }
  t_op_callbacks = false;
  t_early = false;
  hooked_ = false;
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
  if (call_) {
    add_op_callbacks();  // or an outer profiled call's serve this one too
    early_ = t_op_callbacks && t_early;
  }
}

void ProfilerScopes::apply(Phase phase) noexcept {
  if (!call_ || open_ == phase) return;
  phase_.reset();  // ends the open phase scope
  open(phase_, (*names_)[static_cast<int>(phase)]);
  open_ = phase;
}

}  // namespace trt_trace
