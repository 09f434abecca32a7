// Engine calls and phases as user scopes in torch.profiler's own trace.
//
// While torch.profiler (or the autograd profiler) records RecordFunction
// USER_SCOPE events, with or without a trt_trace session, each engine call opens a scope named
// `trt::<engine>/execute_engine` and, inside it, one per phase
// `trt::<engine>/<phase>`: profiler users see engine names and phases with no
// trt_trace file at all.
//
// Phase scopes switch where the op observer sees a boundary, which is inside
// the boundary op's own profiler event (the dispatcher records an op before its
// first kernel runs): the first op of a phase starts a fraction of a
// microsecond before its phase scope does. The call scope nests exactly.
//
// Names are built once per engine (std::string, never freed) because the
// profiler reads them by reference when a scope starts.
#pragma once

#include <ATen/record_function.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "common/record.h"

namespace trt_trace {

namespace detail {
bool profiler_records_user_scopes() noexcept;  // the exact check, while a profiler is on
}  // namespace detail

// Cheap when no profiler is on (a thread-local and a global pointer are null), inline: every
// engine call asks. First the profiler's own state, the cheapest test that can say no:
// torch.profiler (and the autograd profiler) keeps it in this thread's debug info, or in one
// process-wide slot when global. Then, only while one is on, the dispatcher's per-op check.
inline bool profiler_scopes_wanted() noexcept {
  using torch::profiler::impl::ProfilerStateBase;
  if (C10_LIKELY(ProfilerStateBase::get(/*global=*/false) == nullptr &&
                 ProfilerStateBase::get(/*global=*/true) == nullptr)) {
    return false;
  }
  return detail::profiler_records_user_scopes();
}

class ProfilerScopes {
 public:
  // Opens the call scope if a profiler records USER_SCOPE (phases: switch_phase).
  void begin(uint32_t engine_id) noexcept {
    if (C10_LIKELY(!profiler_scopes_wanted())) return;
    open_call(engine_id);
  }
  bool active() const noexcept { return call_.has_value(); }
  // Closes the open phase scope and opens `phase`'s.
  void switch_phase(Phase phase) noexcept;
  // Closes the phase scope, then the call scope.
  void end() noexcept {
    if (C10_LIKELY(!call_.has_value())) return;  // no profiler recorded this call
    phase_.reset();
    call_.reset();
  }

 private:
  void open_call(uint32_t engine_id) noexcept;
  void open(std::optional<at::RecordFunction>& scope, const std::string& name) noexcept;

  const std::array<std::string, kNumHostPhases + 1>* names_ = nullptr;
  std::optional<at::RecordFunction> call_;
  std::optional<at::RecordFunction> phase_;
};

}  // namespace trt_trace
