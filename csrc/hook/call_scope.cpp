#include "hook/call_scope.h"

#include <array>
#include <cstring>

#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "hook/engine_stats.h"
#include "hook/nvtx_ranges.h"
#include "hook/tracing_state.h"

namespace trt_trace {

namespace detail {
thread_local CallScope* t_current_call = nullptr;
}  // namespace detail

using detail::t_current_call;

CallScope::CallScope(uint32_t engine_id, uint16_t device, bool record) noexcept
    : engine_id_(engine_id), device_(device), record_(record), call_id_(next_call_id()) {
  CallScope*& current = t_current_call;  // one thread-local access
  outer_ = current;
  nested_ = outer_ != nullptr;
  current = this;
  // Without the observer (op_observer.h) the call is still timed; its phases all land in workspace.
  if (op_observer_available()) observe_.emplace();
  nvtx_ = record_ && nvtx::enabled();
  if (nvtx_) nvtx::push_call(engine_id_, call_id_);
  profiler_.begin(engine_id_);
  live_switch(Phase::kWorkspace);
  // The start event is tracer overhead, recorded before the call's host time starts.
  if (record_ && device_ != kNoDevice && gpu::enabled()) gpu_on_ = gpu::begin_call(device_, &gpu_);
  begin_ = now_ns();
}

void CallScope::live_switch(Phase phase) noexcept {
  if ((!nvtx_ && !profiler_.active()) || live_phase_ == static_cast<uint8_t>(phase)) return;
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

void CallScope::on_op_start(OpKind kind) noexcept {
  switch (stage_) {
    case kBeforeInputs:
      if (kind == OpKind::kInputView) {
        const int64_t t = now_ns();
        inputs_begin_ = t;
        last_input_op_end_ = t;
        stage_ = kInputs;
        live_switch(Phase::kInputs);
      }
      break;
    case kInputs:
      if (kind == OpKind::kAllocation) {
        const int64_t t = now_ns();
        outputs_begin_ = t;
        enqueue_begin_ = t;
        stage_ = kOutputs;
        live_switch(Phase::kOutputs);
      }
      break;
    case kOutputs:
      if (kind == OpKind::kAllocation) {
        live_switch(Phase::kOutputs);
      } else {
        stage_ = kAfterOutputs;
      }
      break;
    case kAfterOutputs:
      break;
  }
}

void CallScope::on_op_end() noexcept {
  if (stage_ == kInputs) {
    last_input_op_end_ = now_ns();
  } else if (stage_ == kOutputs) {
    enqueue_begin_ = now_ns();
    live_switch(Phase::kEnqueue);
  }
}

void CallScope::finish(bool error) noexcept {
  if (finished_) return;
  finished_ = true;
  const int64_t end = now_ns();
  t_current_call = outer_;
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
  const uint32_t tid = current_thread_id();
  std::array<Record, 2 + kNumHostPhases> records;
  size_t n = 0;
  records[n++] = Record{begin_, end, call_id_, engine_id_, tid,
                        static_cast<uint8_t>(Phase::kCall), flags, device_, 0};
  std::array<int64_t, kNumHostPhases> phase_ns;
  for (int p = 0; p < kNumHostPhases; ++p) {
    phase_ns[p] = b[p + 1] - b[p];
    if (phase_ns[p] > 0) {
      records[n++] = Record{b[p], b[p + 1], call_id_, engine_id_, tid,
                            static_cast<uint8_t>(p + 1), flags, device_, 0};
    }
  }
  if (gpu_on_) {
    // The event handles ride in the ring to the drainer, which resolves them.
    records[n++] = Record{static_cast<int64_t>(reinterpret_cast<uintptr_t>(gpu_.start)),
                          static_cast<int64_t>(reinterpret_cast<uintptr_t>(gpu_.end)),
                          call_id_,
                          engine_id_,
                          tid,
                          static_cast<uint8_t>(Phase::kGpuPending),
                          flags,
                          device_,
                          gpu_.stream};
  }
  if (!ThreadRings::instance().push(records.data(), n) && gpu_on_) gpu::release(device_, &gpu_);
  EngineStats::instance().add_call(engine_id_, end - begin_, phase_ns, error);
}

}  // namespace trt_trace
