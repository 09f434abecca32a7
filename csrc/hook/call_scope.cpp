#include "hook/call_scope.h"

#include <array>
#include <cstring>

#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "hook/nvtx_ranges.h"
#include "hook/tracing_state.h"

namespace trt_trace {

namespace detail {
thread_local HookThread t_hook;
}  // namespace detail

namespace {
uint64_t take_call_id(detail::HookThread& me) noexcept {
  if (C10_UNLIKELY(me.next_call_id == me.call_id_end)) {
    me.next_call_id = reserve_call_ids();
    me.call_id_end = me.next_call_id + kCallIdBlock;
  }
  return me.next_call_id++;
}
}  // namespace

CallScope::CallScope(detail::HookThread& me, uint32_t engine_id, uint16_t device, bool record) noexcept
    : engine_id_(engine_id), device_(device), record_(record) {
  thread_ = &me;
  call_id_ = take_call_id(*thread_);
  outer_ = thread_->current_call;
  nested_ = outer_ != nullptr;
  thread_->current_call = this;
  // Without the observer (op_observer.h) the call is still timed; its phases all land in workspace.
  if (op_observer_available()) observe_.emplace();
  nvtx_ = record_ && nvtx::enabled();
  if (nvtx_) nvtx::push_call(engine_id_, call_id_);
  profiler_.begin(engine_id_);
  live_ = nvtx_ || profiler_.active();
  live_switch(Phase::kWorkspace);
  if (record_) epoch_ = recording_epoch();
  // The start event is tracer overhead, recorded before the call's host time starts.
  if (epoch_ != 0 && device_ != kNoDevice && gpu::enabled()) gpu_on_ = gpu::begin_call(device_, &gpu_);
  begin_ = now_ns();
}

void CallScope::switch_live_ranges(Phase phase) noexcept {
  if (live_phase_ == static_cast<uint8_t>(phase)) return;
  if (nvtx_) {
    if (live_phase_ != 0) nvtx::pop();
    nvtx::push_phase(static_cast<uint8_t>(phase), call_id_);
  }
  profiler_.switch_phase(phase);
  live_phase_ = static_cast<uint8_t>(phase);
}

CallScope::~CallScope() {
  if (!finished_) finish(true);
}

void CallScope::finish(bool error) noexcept {
  if (finished_) return;
  finished_ = true;
  const int64_t end = now_ns();
  thread_->current_call = outer_;
  observe_.reset();
  if (nvtx_) {
    if (live_phase_ != 0) nvtx::pop();
    nvtx::pop();
  }
  profiler_.end();
  if (!record_) return;

  // Boundaries of the four phases: [b[p], b[p+1]).
  std::array<int64_t, kNumHostPhases + 1> b;
  b[0] = begin_;
  b[4] = end;
  switch (stage_) {
    case kBeforeInputs:
      b[1] = b[2] = b[3] = end;
      break;
    case kInputs:  // no output allocation observed (pre-allocated outputs)
      b[1] = inputs_begin_;
      b[2] = b[3] = last_input_op_end_;
      break;
    case kOutputs:
    case kAfterOutputs:
      b[1] = inputs_begin_;
      b[2] = outputs_begin_;
      b[3] = enqueue_begin_;
      break;
  }

  if (gpu_on_) {
    if (error) {
      gpu::release(device_, &gpu_);
      gpu_on_ = false;
    } else {
      gpu_on_ = gpu::end_call(device_, &gpu_);
    }
  }

  const uint8_t flags = (error ? kFlagError : 0) | (nested_ ? kFlagNested : 0) | (gpu_.captured ? kFlagCaptured : 0);
  const std::array<int64_t, kNumHostPhases> phase_ns{b[1] - b[0], b[2] - b[1], b[3] - b[2], b[4] - b[3]};
  // The call, its phases that took time, its GPU events.
  const size_t n = 1 + (phase_ns[0] > 0) + (phase_ns[1] > 0) + (phase_ns[2] > 0) + (phase_ns[3] > 0) + gpu_on_;
  // Written straight into this thread's ring: all of the call's records, or none (drops counted).
  // Only for the session the call began in (a session that ended meanwhile has written its file).
  const bool recording = epoch_ != 0 && epoch_ == recording_epoch();
  const ThreadRings::Writer out = recording ? ThreadRings::instance().writer() : ThreadRings::Writer{nullptr, 0};
  uint64_t at;
  if (out.ring != nullptr && out.ring->claim(n, &at)) {
    auto put = [&](int64_t from, int64_t to, Phase phase, uint32_t stream) {
      out.ring->slot(at++) = Record{from, to, call_id_, engine_id_, out.thread_id, static_cast<uint8_t>(phase),
                                    flags, device_, stream};
    };
    put(begin_, end, Phase::kCall, 0);
#pragma GCC unroll 4
    for (int p = 0; p < kNumHostPhases; ++p) {
      if (phase_ns[p] > 0) put(b[p], b[p + 1], static_cast<Phase>(p + 1), 0);
    }
    if (gpu_on_) {
      // The event handles ride in the ring to the drainer, which resolves them.
      out.ring->slot(at++) = Record{static_cast<int64_t>(reinterpret_cast<uintptr_t>(gpu_.start)),
                                    static_cast<int64_t>(reinterpret_cast<uintptr_t>(gpu_.end)), call_id_, engine_id_,
                                    out.thread_id, static_cast<uint8_t>(Phase::kGpuPending),
                                    static_cast<uint8_t>(flags | (gpu_.on_engine_stream ? kFlagEngineStream : 0)),
                                    device_, gpu_.stream};
    }
    out.ring->publish(at);
  } else if (gpu_on_) {
    gpu::release(device_, &gpu_);
  }
  // The thread's stats table, cached in its hook state. (A thread that still calls engines from
  // its thread-local destructors after the table went back may share it with a new thread; at
  // worst such counts race.)
  EngineStats::Table* stats = thread_->stats;
  if (C10_UNLIKELY(stats == nullptr)) stats = thread_->stats = EngineStats::instance().this_thread();
  if (stats != nullptr) stats->add_call(engine_id_, phase_ns, error);
}

}  // namespace trt_trace
