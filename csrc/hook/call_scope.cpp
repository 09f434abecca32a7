#include "hook/call_scope.h"

#include <array>
#include <cstring>

#include "buffer/call_layout.h"
#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "integrations/nvtx_ranges.h"
#include "hook/tracing_state.h"

namespace trt_trace {

namespace detail {
thread_local HookThread t_hook;
}  // namespace detail

void CallScope::switch_live_ranges(Phase phase) noexcept {
  if (live_phase_ == static_cast<uint8_t>(phase)) return;
  if (nvtx_) {
    if (live_phase_ != 0) nvtx::pop();
    nvtx::push_phase(static_cast<uint8_t>(phase), call_id_);
  }
  profiler_.switch_phase(phase);
  live_phase_ = static_cast<uint8_t>(phase);
}

void CallScope::load_output_shape() noexcept {
  const EngineRegistry::OutputShape shape = EngineRegistry::instance().output_shape(engine_id_);
  live_outputs_ = shape.outputs;
  live_conversions_ = shape.conversions;
}

void CallScope::live_output_op_start(OpKind kind) noexcept {
  using Conversions = EngineRegistry::Conversions;
  if (kind == OpKind::kAllocation) {
    ++live_allocations_;
    live_last_was_allocation_ = true;
    live_switch(Phase::kOutputs);
  } else if (kind == OpKind::kConversion) {
    live_conversion_begins();
    // The last output's conversion, after enqueue opened (not known to come yet): it stays in enqueue.
    if (live_phase_ != static_cast<uint8_t>(Phase::kEnqueue)) live_switch(Phase::kOutputs);
  } else {  // outputs ended: enqueue from here, if it has not begun yet
    if (live_last_was_allocation_ && live_conversions_ == Conversions::kUnknown && live_outputs_ != 0 &&
        live_allocations_ >= live_outputs_) {
      live_conversions_ = Conversions::kNone;
      EngineRegistry::instance().learn_conversions(engine_id_, live_conversions_);
    }
    live_switch(Phase::kEnqueue);
  }
}

void CallScope::live_conversion_begins() noexcept {
  if (live_last_was_allocation_ && live_conversions_ == EngineRegistry::Conversions::kUnknown) {
    live_conversions_ = EngineRegistry::Conversions::kAfterEach;  // the runtime converts each output: learnt
    EngineRegistry::instance().learn_conversions(engine_id_, live_conversions_);
  }
  live_last_was_allocation_ = false;
}

void CallScope::live_output_op_end() noexcept {
  if (live_outputs_ == 0) {  // the output count is unknown: each op's end may be the last
    live_switch(Phase::kEnqueue);
    return;
  }
  if (live_allocations_ < live_outputs_) return;  // more outputs to come
  // The last output's allocation: where the engine's runtime converts each output, its conversion follows.
  if (live_last_was_allocation_ && live_conversions_ == EngineRegistry::Conversions::kAfterEach) return;
  live_switch(Phase::kEnqueue);
}

void CallScope::live_outputs_at_finish() noexcept {
  // The call ended right after its last output op, which the ranges waited past: its enqueue range opens
  // (and closes) here, so that the call still has one; and no conversion came after the last allocation.
  if (live_last_was_allocation_ && live_conversions_ == EngineRegistry::Conversions::kUnknown &&
      live_outputs_ != 0 && live_allocations_ >= live_outputs_) {
    live_conversions_ = EngineRegistry::Conversions::kNone;
    EngineRegistry::instance().learn_conversions(engine_id_, live_conversions_);
  }
  live_switch(Phase::kEnqueue);
}

void CallScope::mark(Mark m) noexcept {
  switch (m) {
    case Mark::kInputsBegin:
      if (stage_ == kBeforeInputs) enter(kInputs, Phase::kInputs, &inputs_begin_, &last_input_op_end_);
      break;
    case Mark::kInputsEnd:
      if (stage_ == kInputs) last_input_op_end_ = now_ns();
      break;
    case Mark::kOutputsBegin:
      if (stage_ == kBeforeInputs) {  // no input set-up seen: inputs is empty
        const int64_t t = now_ns();
        inputs_begin_ = last_input_op_end_ = outputs_begin_ = enqueue_begin_ = t;
        stage_ = kOutputs;
        live_switch(Phase::kOutputs);
      } else if (stage_ == kInputs) {
        enter(kOutputs, Phase::kOutputs, &outputs_begin_, &enqueue_begin_);
      } else {
        break;
      }
      in_op_ = true;  // output set-up is open: its end moves enqueue's start
      break;
    case Mark::kOutputsEnd:
      if (stage_ == kOutputs && in_op_) {
        in_op_ = false;
        enqueue_begin_ = now_ns();
        live_switch(Phase::kEnqueue);
      }
      break;
    case Mark::kEnqueueBegin:
      switch (stage_) {
        case kBeforeInputs: {  // no set-up seen: workspace up to here, then enqueue
          const int64_t t = now_ns();
          inputs_begin_ = last_input_op_end_ = outputs_begin_ = enqueue_begin_ = t;
          break;
        }
        case kInputs:  // no output set-up (pre-allocated outputs): enqueue from the end of the input set-up
          outputs_begin_ = enqueue_begin_ = last_input_op_end_;
          break;
        case kOutputs:
          enqueue_begin_ = now_ns();
          break;
        case kAfterOutputs:
          return;
      }
      in_op_ = false;
      stage_ = kAfterOutputs;
      live_switch(Phase::kEnqueue);
      break;
  }
}

void CallScope::finish(bool error) noexcept {
  if (finished_) return;
  finished_ = true;
  const int64_t end = now_ns();
  end_ = end;
  thread_->current_call = outer_;
  if (C10_UNLIKELY(live_) && stage_ == kOutputs && !error) {
    if (marked_) {
      live_switch(Phase::kEnqueue);  // the call ended in output set-up: its enqueue range opens and closes here
    } else {
      live_outputs_at_finish();
    }
  }
  // How many outputs the engine allocates, learnt from a whole call where the count was unknown or the
  // call allocated fewer (aliased outputs): later calls open `enqueue` once, after the last allocation.
  if (C10_UNLIKELY(live_) && !marked_ && !error && stage_ >= kOutputs && live_allocations_ != 0 &&
      (live_outputs_ == 0 || live_allocations_ < live_outputs_)) {
    EngineRegistry::instance().learn_outputs(engine_id_, live_allocations_);
  }
  observe_.reset();
  if (nvtx_) {
    if (live_phase_ != 0) nvtx::pop();
    nvtx::pop();
  }
  profiler_.end();
  if (!record_) return;

  const std::array<int64_t, kNumInnerBounds> bounds = inner_bounds(end);

  const bool gpu_measured = gpu_on_ && !error;  // a measured call that ran: it tells which streams it used
  if (gpu_on_) {
    if (error) {
      gpu::release(device_, &gpu_);
      gpu_on_ = false;
    } else {
      gpu_on_ = gpu::end_call(device_, &gpu_);
    }
  }

  const uint8_t flags = flags_ | (error ? kFlagError : 0) | (gpu_.captured ? kFlagCaptured : 0);
  // Each host phase from its bounds (the first from the call's begin, the last to its end), and the events
  // the trace will show: the call, its phases that took time (the drainer expands the call's slots into
  // them, buffer/call_layout.h), its GPU span. Unrolled at compile time (for_each_host_phase).
  std::array<int64_t, kNumHostPhases> phase_ns;
  uint32_t phases = 0;
  for_each_host_phase([&](auto phase) {
    constexpr int p = decltype(phase)::value;
    int64_t from = begin_, to = end;
    if constexpr (p > 0) from = bounds[p - 1];
    if constexpr (p < kNumHostPhases - 1) to = bounds[p];
    phase_ns[p] = to - from;
    phases += phase_ns[p] > 0;
  });
  // An engine on its own stream: a caller-stream wait beside the engine's span (gpu_events.h).
  const uint32_t gpu_spans = gpu_on_ ? 1u + gpu_.on_engine_stream : 0u;
  const size_t slots = kCallSlots + gpu_spans;
  // Written straight into this thread's ring: all of the call's slots, or none (drops counted).
  // Only for the session the call began in (a session that ended meanwhile has written its file).
  RecordRing* ring = nullptr;
  detail::ThisThread* rt = thread_->rings;
  if (C10_LIKELY(epoch_ != 0 && epoch_ == recording_epoch())) {
    if (C10_UNLIKELY(rt == nullptr)) rt = thread_->rings = ThreadRings::this_thread();
    ring = C10_LIKELY(rt->ring != nullptr) ? rt->ring : ThreadRings::instance().writer().ring;
  }
  uint64_t at;
  if (ring != nullptr && ring->claim(slots, 1 + phases + gpu_spans, 1, &at)) {
    const uint32_t tid = rt->tid;
    ring->slot(at).span = span_record(Phase::kCall, begin_, end, call_id_, engine_id_, tid, flags, device_, 0);
    for (int s = 0; s < kPhaseBoundsSlots; ++s) {  // one slot up to four host phases
      ring->slot(at + 1 + s).bounds = phase_bounds_record(bounds, s, engine_id_, tid, flags, device_);
    }
    if (gpu_on_) {
      // The event handles ride in the ring to the drainer, which resolves them; a call's caller-stream
      // wait comes right before its engine span (gpu_resolver.h pairs them).
      const auto pending = [&](Phase kind, void* start, void* stop, uint8_t extra, uint32_t stream) {
        return gpu_pending_record(kind, start, stop, call_id_, engine_id_, tid, static_cast<uint8_t>(flags | extra),
                                  device_, stream);
      };
      if (gpu_.on_engine_stream) {
        ring->slot(at + kCallSlots).gpu_pending = pending(Phase::kCallerWaitPending, gpu_.start, gpu_.end, 0,
                                                          gpu_.stream);
        ring->slot(at + kCallSlots + 1).gpu_pending = pending(Phase::kGpuPending, gpu_.engine_start, gpu_.engine_end,
                                                 kFlagEngineStream, gpu_.engine_stream_id);
      } else {
        ring->slot(at + kCallSlots).gpu_pending = pending(Phase::kGpuPending, gpu_.start, gpu_.end,
                                                 gpu_.engine_only ? kFlagEngineStream : 0, gpu_.stream);
      }
    }
    ring->publish(at + slots);
  } else if (gpu_on_) {
    gpu::release(device_, &gpu_);
  }
  // The thread's stats table, cached in its hook state. (A thread that still calls engines from
  // its thread-local destructors after the table went back may share it with a new thread; at
  // worst such counts race.)
  EngineStats::Table* stats = thread_->stats;
  if (C10_UNLIKELY(stats == nullptr)) stats = thread_->stats = EngineStats::instance().this_thread();
  if (stats == nullptr) return;
  stats->add_call(engine_id_, phase_ns, error);
  if (gpu_measured) {
    stats->gpu_saw_engine_stream(engine_id_, epoch_, gpu_.caller_pair_skipped,
                                 gpu_.on_engine_stream || gpu_.engine_only);
  }
}

}  // namespace trt_trace
