// Engine calls and phases as user scopes in torch.profiler's own trace.
//
// While torch.profiler (or the autograd profiler) records RecordFunction
// USER_SCOPE events, with or without a trt_trace session, each engine call opens a scope named
// `trt::<engine>/execute_engine` and, inside it, one per phase
// `trt::<engine>/<phase>`: profiler users see engine names and phases with no
// trt_trace file at all.
//
// Nesting. The profiler builds its tree (and self times: a scope's total less
// its children's) from the events' times, so every event of the call must lie
// wholly inside one phase scope. But the op observer (op_observer.h) sees a
// phase boundary from inside the boundary op, after the profiler stamped the
// op's start and before it stamps its end: a phase switched there would cut
// the op's event in two, which the tree then hangs beside both phases, and
// the call scope's self time goes negative. So while a profiled call runs,
// two RecordFunction callbacks of trt_trace's own sit on this thread around
// the profiler's: one ordered before the profiler's (its start runs before the
// profiler stamps an op's start), one after (its end runs after the profiler
// stamps the op's end). Phase switches then happen only between top-level ops:
//
//  * an op about to start at the call's top level starts the phase the
//    observer will start inside it (the call scope's own rule, asked ahead:
//    CallScope::live_phase_at_op_start), before its event begins;
//  * a switch the observer makes inside an op (the end of the last output
//    allocation starts `enqueue`) waits for the end of the top-level op it is
//    in, and is made after that op's event ends.
//
// With a process-wide profiler (callbacks global, run before any thread's),
// only the second kind is possible: a phase then begins after the op that
// started it. The callbacks exist only during profiled calls (added at the
// call scope's start, removed at its end): other calls and threads never run them.
//
// Names are built once per engine (std::string, never freed) because the
// profiler reads them by reference when a scope starts.
#pragma once

#include <ATen/record_function.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <array>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>

#include "common/record.h"

namespace trt_trace {

namespace detail {
bool profiler_records_user_scopes() noexcept;  // the exact check, while a profiler is on
// The op callbacks around the profiler's (add_op_callbacks) that report a profiled call's top-level ops to
// its call scope: defined with the call scope (hook/profiled_ops.cpp), the one part that knows the call.
std::unique_ptr<at::ObserverContext> before_profiled_op(const at::RecordFunction& fn);
void after_profiled_op(const at::RecordFunction& fn, at::ObserverContext* ctx);
}  // namespace detail

// Whether this thread has the op callbacks now (only inside a profiled call; for the tests).
bool profiler_op_callbacks_installed() noexcept;

// Cheap when no profiler is on, inline: every engine call asks (while tracing is off, nothing else).
// `rf` is the calling thread's RecordFunction state (at::get_record_function_tls_(): one object per
// thread, at one address for the thread's life, which the hook looks up once per thread). A profiler
// that records this thread only (torch.profiler's default, the autograd and NVTX profilers) adds its
// callback to this list when it starts, and one that records every thread keeps its state in one
// process-wide slot: an empty list and no process-wide state say "no profiler" with two loads and one
// call, where the profiler's thread-local state is a chain of calls into c10's thread-local debug info.
// Otherwise the same checks as before, in full: the profiler's own state (this thread's or the
// process-wide one), then, only while one is on, the dispatcher's per-op check.
inline bool profiler_scopes_wanted(const at::RecordFunctionTLS& rf) noexcept {
  using torch::profiler::impl::ProfilerStateBase;
  if (C10_LIKELY(rf.sorted_tls_callbacks_.empty() && ProfilerStateBase::get(/*global=*/true) == nullptr)) {
    return false;
  }
  if (ProfilerStateBase::get(/*global=*/false) == nullptr && ProfilerStateBase::get(/*global=*/true) == nullptr) {
    return false;
  }
  return detail::profiler_records_user_scopes();
}

class ProfilerScopes {
 public:
  // Opens the call scope if a profiler records USER_SCOPE (phases: switch_phase); rf: the calling
  // thread's RecordFunction state (profiler_scopes_wanted).
  void begin(uint32_t engine_id, const at::RecordFunctionTLS& rf) noexcept {
    if (C10_LIKELY(!profiler_scopes_wanted(rf))) return;
    open_call(engine_id);
  }
  bool active() const noexcept { return call_.has_value(); }
  // Ops of the call under way as the profiler sees them (0: between top-level ops).
  uint32_t depth() const noexcept { return depth_; }
  // The phase the call is in now, as the op observer says: switched at once between top-level ops,
  // else when the top-level op it is in has ended (above).
  void switch_phase(Phase phase) noexcept {
    if (!call_) return;
    target_ = phase;
    if (depth_ == 0) apply(phase);
  }
  // From the callbacks around the profiler's: a top-level op starts (`starts`: the phase it will
  // start, 0 for none) or an op ends.
  void on_op_start(uint8_t starts) noexcept {
    if (depth_++ == 0 && starts != 0 && early_) apply(static_cast<Phase>(starts));
  }
  void on_op_end() noexcept {
    if (depth_ > 0 && --depth_ == 0 && open_ != target_) apply(target_);
  }
  // Closes the phase scope, then the call scope.
  void end() noexcept {
    if (C10_LIKELY(!call_.has_value())) return;  // no profiler recorded this call
    phase_.reset();
    call_.reset();
    if (hooked_) remove_op_callbacks();
  }

 private:
  void open_call(uint32_t engine_id) noexcept;
  void open(std::optional<at::RecordFunction>& scope, const std::string& name) noexcept;
  void apply(Phase phase) noexcept;
  void add_op_callbacks() noexcept;
  void remove_op_callbacks() noexcept;

  const std::array<std::string, kNumHostPhases + 1>* names_ = nullptr;
  std::optional<at::RecordFunction> call_;
  std::optional<at::RecordFunction> phase_;
  Phase open_ = Phase::kCall;    // the phase whose scope is open (kCall: none)
  Phase target_ = Phase::kCall;  // the phase the observer says the call is in
  uint32_t depth_ = 0;           // ops of this call under way, as the profiler sees them
  bool hooked_ = false;          // this call added the op callbacks (an outer profiled call may have)
  bool early_ = false;           // the before-the-profiler callback runs first (a per-thread profiler)
};

}  // namespace trt_trace
