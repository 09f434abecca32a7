// Times one traced execute_engine call and splits it into host phases.
//
// Phase model (the real runtime's call sequence: docs/runtime.md, docs/phase-model.md): the runtime's own
// steps are invisible, but the aten ops it dispatches are not. While a traced
// call runs, the op observer (hook/observe_ops.h) reports the call's top-level
// ops (nested ops are not seen) and the scope marks three boundaries:
//
//   begin ── workspace ── first aten::view ── inputs ── first aten::empty* ──
//         outputs ── end of the last consecutive aten::empty* / _to_copy ── enqueue ── end
//
//  * workspace: everything before input binding: moving CPU inputs to the GPU,
//    the dynamic workspace allocation (only with the Dynamic strategy), waiting
//    for the per-engine lock, stream choice and the shape key.
//  * inputs:    from the first input view to the first output allocation:
//    view/contiguous (and CUDA-graph staging copies), shape and address binding,
//    shape inference.
//  * outputs:   the output allocations (aten::empty; in 2.11 each followed by
//    its .to(dtype) conversion, aten::_to_copy) and address binding in between.
//  * enqueue:   from the end of the last output allocation to the end of the
//    call: the last output binding, enqueueV3 (launch cost only; the GPU runs
//    asynchronously), the engine-to-caller stream sync and CUDA-graph copies.
//
// Skipped steps: with pre-allocated outputs (no allocation) `outputs` is empty
// and enqueue starts at the end of the last input-phase op. With no input view
// observed (no inputs) the whole call is `workspace`. The four phases never
// overlap and always add up to the call exactly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include <c10/macros/Macros.h>

#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "common/record.h"
#include "engines/engine_registry.h"
#include "stats/engine_stats.h"
#include "hook/gpu_events.h"
#include "stats/gpu_sampling.h"
#include "integrations/nvtx_ranges.h"
#include "hook/observe_ops.h"
#include "integrations/profiler_scopes.h"
#include "hook/tracing_state.h"

namespace trt_trace {

class CallScope;
namespace detail {
// What the hook keeps per calling thread, in one thread_local without
// initialisers: zero-initialised like every thread_local, so no init guard and
// no destructor; one look-up per call finds it all.
struct HookThread {
  CallScope* current_call;                    // the innermost traced call (nullptr outside traced calls)
  uint64_t next_call_id;                      // this thread's block of call ids, [next, end)
  uint64_t call_id_end;                       //   (see reserve_call_ids in tracing_state.h)
  EngineStats::Table* stats;                  // EngineStats::this_thread(), looked up once
  ThisThread* rings;                          // ThreadRings::this_thread(), looked up once
  c10::impl::PODLocalDispatchKeySet* dispatch_keys;  // c10's key sets of this thread, looked up once
  const at::RecordFunctionTLS* record_function;      // ATen's RecordFunction state of this thread, looked up once
  EngineRegistry::LookupCache registry_cache; // engine object -> id
};
extern thread_local HookThread t_hook;

// The thread's RecordFunction state, for profiler_scopes_wanted (integrations/profiler_scopes.h).
C10_ALWAYS_INLINE const at::RecordFunctionTLS& record_function_tls(HookThread& me) noexcept {
  if (C10_UNLIKELY(me.record_function == nullptr)) me.record_function = &at::get_record_function_tls_();
  return *me.record_function;
}
}  // namespace detail

class CallScope {
 public:
  // record = tracing is on: the call is counted in the engine table (with NVTX
  // ranges as switched on) and, while a session records (recording_epoch() in
  // tracing_state.h), goes into the trace buffer with its GPU events. record =
  // false: only torch.profiler scopes (the hook creates such a scope only while
  // one records).
  // me: detail::t_hook of the calling thread.
  // observe = false: the op observer stays off and the phases come from mark() alone (a runtime whose
  // steps dispatch no ops the observer knows: the Python runtime, hook/python_calls.h).
  CallScope(detail::HookThread& me, uint32_t engine_id, uint16_t device, bool record = true,
            bool observe = true) noexcept;
  ~CallScope() {
    if (C10_UNLIKELY(!finished_)) finish(true);  // left without finish(): closed and flagged as an error
  }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  // Ends the call: records it and its phases. error = the engine threw.
  void finish(bool error) noexcept;

  uint64_t call_id() const noexcept { return call_id_; }
  uint16_t device() const noexcept { return device_; }
  // The recording epoch the call began in (0: not recorded in the rings).
  uint32_t epoch() const noexcept { return epoch_; }
  // After finish(): where the call's enqueue phase began (per-layer records are laid out from there).
  int64_t enqueue_begin() const noexcept { return inner_bounds(end_)[static_cast<int>(Phase::kEnqueue) - 2]; }
  // Only before any GPU event was recorded (CPU inputs: the outputs name the device).
  void set_device(uint16_t device) noexcept { device_ = device; }

  static CallScope* current() noexcept { return detail::t_hook.current_call; }

  // Phase boundaries told by the runtime itself (a scope made with observe = false). Each takes effect
  // only in the stage it names, so a step the runtime repeats later in the call moves no boundary:
  //   kInputsBegin   input set-up starts: workspace ends (before inputs only)
  //   kInputsEnd     input set-up ended: where enqueue starts if no output set-up follows
  //   kOutputsBegin  output set-up starts (before inputs or in inputs; before inputs, inputs is empty)
  //   kOutputsEnd    the output allocations ended: enqueue starts here unless kEnqueueBegin comes
  //   kEnqueueBegin  the launch section starts: outputs (or, with none, the tail after the input set-up)
  //                  end; every later mark is ignored
  enum class Mark : uint8_t { kInputsBegin, kInputsEnd, kOutputsBegin, kOutputsEnd, kEnqueueBegin };
  void mark(Mark m) noexcept;

  // Called by the op observer around each op of this call. on_op_start returns
  // false for an op started inside another (not reported; no on_op_end then).
  // The clock is read only where an op marks a boundary.
  bool on_op_start(OpKind kind) noexcept;
  void on_op_end() noexcept;

  // Called around every op of this call while a profiler records it, outside the profiler's own
  // event of the op (profiler_scopes.h): the profiler's phase scopes switch only there.
  // An output's conversion the observer may not see (2.11's `.to(dtype)` to the same dtype dispatches no
  // _to_copy) still belongs to outputs: its start is learnt here, and its end, after the profiler's, may
  // open enqueue (live_output_op_end).
  void profiled_op_start(OpKind kind) noexcept {
    if (C10_UNLIKELY(marked_)) {  // the phases follow mark(), never an op
      profiler_.on_op_start(static_cast<uint8_t>(Phase::kCall));
      return;
    }
    if (C10_UNLIKELY(kind == OpKind::kConversion) && stage_ == kOutputs && profiler_.depth() == 0) {
      live_conversion_begins();
      profiled_conversion_ = true;
    }
    profiler_.on_op_start(static_cast<uint8_t>(live_phase_at_op_start(kind)));
  }
  void profiled_op_end() noexcept {
    profiler_.on_op_end();
    if (C10_UNLIKELY(profiled_conversion_) && profiler_.depth() == 0) {
      profiled_conversion_ = false;
      if (stage_ == kOutputs) live_output_op_end();
    }
  }

 private:
  // Live ranges (NVTX, profiler scopes): the phase now open (0 = none). Phases
  // switch in real time, and a call has one range per phase as its trace has:
  // `outputs` stays open until the engine's last output is allocated (and
  // converted, where its runtime converts each: EngineRegistry::output_shape,
  // learnt from the engine's first call with live ranges, whose last conversion
  // then lands in `enqueue`). With pre-allocated outputs the `inputs` range runs
  // to the end of the call; an engine whose output count is unknown (no Outputs
  // list in its __str__) switches at each allocation's end, as before.
  C10_ALWAYS_INLINE void live_switch(Phase phase) noexcept {
    if (C10_LIKELY(!live_)) return;  // neither NVTX nor a profiler: nothing to switch
    switch_live_ranges(phase);
  }
  void switch_live_ranges(Phase phase) noexcept;
  // The output phase's live bookkeeping (only while live_): an output op of `kind` starts (or another op,
  // which ends outputs), an output op ended, the call ends.
  void live_output_op_start(OpKind kind) noexcept;
  void live_conversion_begins() noexcept;
  void live_output_op_end() noexcept;
  void live_outputs_at_finish() noexcept;
  void load_output_shape() noexcept;
  // A phase boundary now: the clock read once, into the two marks it sets.
  C10_ALWAYS_INLINE void enter(uint8_t stage, Phase phase, int64_t* mark, int64_t* also) noexcept {
    const int64_t t = now_ns();
    *mark = t;
    *also = t;
    stage_ = static_cast<Stage>(stage);
    live_switch(phase);
  }

  enum Stage : uint8_t { kBeforeInputs, kInputs, kOutputs, kAfterOutputs };

  // The inner phase boundaries of a call that ended at `end` (where each host phase after the first begins,
  // common/phases.h): workspace [begin_, b1), inputs [b1, b2), outputs [b2, b3), enqueue [b3, end).
  // A new host phase: where it begins, in each stage, here (and, if its live range switches at its own
  // moment, an enter() or live_switch() there); finish() and everything after it follow from the list.
  std::array<int64_t, kNumInnerBounds> inner_bounds(int64_t end) const noexcept {
    switch (stage_) {
      case kBeforeInputs:
        return {end, end, end};
      case kInputs:  // no output allocation observed (pre-allocated outputs)
        return {inputs_begin_, last_input_op_end_, last_input_op_end_};
      default:  // kOutputs, kAfterOutputs
        return {inputs_begin_, outputs_begin_, enqueue_begin_};
    }
  }

  // The phase on_op_start will switch the live ranges to for an op of `kind` starting now (kCall:
  // none), without changing anything: the profiler's scopes switch before the op's event begins.
  Phase live_phase_at_op_start(OpKind kind) const noexcept {
    if (in_op_) return Phase::kCall;  // inside a reported op: the observer will not report it
    switch (stage_) {
      case kBeforeInputs:
        return kind == OpKind::kInputView ? Phase::kInputs : Phase::kCall;
      case kInputs:
        return kind == OpKind::kAllocation ? Phase::kOutputs : Phase::kCall;
      case kOutputs:  // any other op ends outputs: enqueue, if the live ranges are not in it yet
        if (kind == OpKind::kConversion) {  // after the last output: never back to outputs (see live_switch)
          return live_phase_ == static_cast<uint8_t>(Phase::kEnqueue) ? Phase::kCall : Phase::kOutputs;
        }
        return kind == OpKind::kAllocation ? Phase::kOutputs : Phase::kEnqueue;
      default:
        return Phase::kCall;
    }
  }

  // GPU-timing sampling with 1 call in `every` > 1 (gpu_sampling.h), counted in the thread's own row.
  static bool take_gpu_sample(detail::HookThread& me, uint32_t engine_id, int64_t every) noexcept {
    EngineStats::Table* stats = me.stats;
    if (C10_UNLIKELY(stats == nullptr)) stats = me.stats = EngineStats::instance().this_thread();
    return stats == nullptr || stats->take_gpu_sample(engine_id, every);
  }

  // Whether this measured call records the engine stream's pair only (gpu_sampling.h), from the
  // thread's own row.
  static bool gpu_engine_stream_only(detail::HookThread& me, uint32_t engine_id, uint32_t epoch) noexcept {
    EngineStats::Table* stats = me.stats;
    if (C10_UNLIKELY(stats == nullptr)) stats = me.stats = EngineStats::instance().this_thread();
    return stats != nullptr && stats->gpu_engine_stream_only(engine_id, epoch);
  }

  uint32_t engine_id_;
  uint16_t device_;
  bool finished_ = false;
  uint8_t flags_ = 0;           // RecordFlags known at the start (kFlagNested)
  bool record_;
  bool nvtx_ = false;
  bool live_ = false;           // NVTX ranges or profiler scopes are open (live_switch)
  bool in_op_ = false;          // between on_op_start and on_op_end of a reported op (marked: in output set-up)
  bool marked_ = false;         // the phases come from mark() (observe = false)
  bool gpu_on_ = false;         // this call has a start event recorded
  gpu::CallEvents gpu_{};
  std::optional<ObserveOps> observe_;  // this thread's ops seen while the call runs
  uint8_t live_phase_ = 0;
  uint16_t live_outputs_ = 0;      // the engine's outputs (0: unknown), read once the live ranges open
  uint16_t live_allocations_ = 0;  // output allocations begun in this call
  bool live_last_was_allocation_ = false;  // the last output op was an allocation, not a conversion
  bool profiled_conversion_ = false;       // a top-level conversion is under way, as the profiler saw it
  EngineRegistry::Conversions live_conversions_ = EngineRegistry::Conversions::kUnknown;
  ProfilerScopes profiler_;
  Stage stage_ = kBeforeInputs;
  uint32_t epoch_ = 0;          // the recording epoch at the call's start (0: not recorded in the rings)
  uint64_t call_id_;
  int64_t begin_;
  int64_t inputs_begin_ = 0;
  int64_t last_input_op_end_ = 0;
  int64_t outputs_begin_ = 0;
  int64_t enqueue_begin_ = 0;
  int64_t end_ = 0;             // set by finish()
  CallScope* outer_;
  detail::HookThread* thread_;  // detail::t_hook of the calling thread (looked up once)
};

// Inline, always: the hook constructs one per call (the compiler drops the stores it does not need; made
// out of line, as GCC chose to, its own call and register saves cost ~15 instructions a call).
C10_ALWAYS_INLINE CallScope::CallScope(detail::HookThread& me, uint32_t engine_id, uint16_t device,
                                       bool record, bool observe) noexcept
    : engine_id_(engine_id), device_(device), record_(record) {
  thread_ = &me;
  marked_ = !observe;
  if (C10_UNLIKELY(me.next_call_id == me.call_id_end)) {
    me.next_call_id = reserve_call_ids();
    me.call_id_end = me.next_call_id + kCallIdBlock;
  }
  call_id_ = me.next_call_id++;
  outer_ = me.current_call;
  flags_ = outer_ != nullptr ? kFlagNested : 0;
  me.current_call = this;
  // Without the observer (op_observer.h) the call is still timed; its phases all land in workspace.
  if (C10_LIKELY(observe && op_observer_available())) {
    if (C10_UNLIKELY(me.dispatch_keys == nullptr)) me.dispatch_keys = &c10::impl::raw_local_dispatch_key_set;
    observe_.emplace(*me.dispatch_keys);
  }
  nvtx_ = record_ && nvtx::enabled();
  if (C10_UNLIKELY(nvtx_)) nvtx::push_call(engine_id_, call_id_);
  profiler_.begin(engine_id_, detail::record_function_tls(me));
  live_ = nvtx_ || profiler_.active();
  if (C10_UNLIKELY(live_)) load_output_shape();
  live_switch(Phase::kWorkspace);
  if (record_) epoch_ = recording_epoch();
  // The start event is tracer overhead, recorded before the call's host time starts. A call sampled
  // out (TRT_TRACE_GPU_EVERY, gpu_sampling.h) is decided before any CUDA call is made.
  if (epoch_ != 0 && device_ != kNoDevice && gpu::enabled()) {
    const int64_t every = gpu::sample_every();
    if (C10_LIKELY(every == 1) || take_gpu_sample(me, engine_id_, every)) {
      gpu_on_ = gpu::begin_call(device_, &gpu_, gpu_engine_stream_only(me, engine_id_, epoch_));
    }
  }
  begin_ = now_ns();
}

// Inline: called for every op of a traced call.
C10_ALWAYS_INLINE bool CallScope::on_op_start(OpKind kind) noexcept {
  if (in_op_) return false;
  in_op_ = true;
  switch (stage_) {
    case kBeforeInputs:  // the first input view starts inputs
      if (kind == OpKind::kInputView) enter(kInputs, Phase::kInputs, &inputs_begin_, &last_input_op_end_);
      break;
    case kInputs:  // the first output allocation starts outputs
      if (kind == OpKind::kAllocation) {
        enter(kOutputs, Phase::kOutputs, &outputs_begin_, &enqueue_begin_);
        if (C10_UNLIKELY(live_)) live_output_op_start(kind);
      }
      break;
    case kOutputs:
      // An output's allocation, or its conversion right after it (2.11: empty, then .to(dtype)),
      // keeps output setup open; any other op ends it.
      if (kind != OpKind::kAllocation && kind != OpKind::kConversion) stage_ = kAfterOutputs;
      if (C10_UNLIKELY(live_)) live_output_op_start(kind);
      break;
    case kAfterOutputs:
      break;
  }
  return true;
}

C10_ALWAYS_INLINE void CallScope::on_op_end() noexcept {
  in_op_ = false;
  if (stage_ == kInputs) {
    last_input_op_end_ = now_ns();
  } else if (stage_ == kOutputs) {
    enqueue_begin_ = now_ns();
    if (C10_UNLIKELY(live_)) live_output_op_end();
  }
}

}  // namespace trt_trace
