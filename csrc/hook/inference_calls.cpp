#include "hook/inference_calls.h"

#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "common/record.h"
#include "hook/call_scope.h"
#include "hook/tracing_state.h"

namespace trt_trace {
namespace {

// Zero-initialised like every thread_local: no init guard, no destructor.
struct OpenInference {
  int64_t begin_ns;
  uint64_t call_id;
  uint32_t epoch;  // 0: none open
};
thread_local OpenInference t_inference;

}  // namespace
}  // namespace trt_trace

int32_t trt_trace_inference_begin() {
  trt_trace::OpenInference& me = trt_trace::t_inference;
  if (me.epoch != 0) return 0;  // nested: the outer one holds it
  const uint32_t epoch = trt_trace::recording_epoch();
  if (epoch == 0 || !trt_trace::tracing_enabled()) return 0;
  // The id from the thread's block, as an engine call takes it (hook/call_scope.h): never shared with one.
  trt_trace::detail::HookThread& hook = trt_trace::detail::t_hook;
  if (hook.next_call_id == hook.call_id_end) {
    hook.next_call_id = trt_trace::reserve_call_ids();
    hook.call_id_end = hook.next_call_id + trt_trace::kCallIdBlock;
  }
  me.call_id = hook.next_call_id++;
  me.epoch = epoch;
  me.begin_ns = trt_trace::now_ns();
  return 1;
}

void trt_trace_inference_end(int32_t handle, int32_t kind, int32_t error) {
  trt_trace::OpenInference& me = trt_trace::t_inference;
  if (handle != 1 || me.epoch == 0) return;
  const int64_t end = trt_trace::now_ns();
  const uint32_t epoch = me.epoch;
  me.epoch = 0;
  if (epoch != trt_trace::recording_epoch()) return;  // the session ended (or another began) meanwhile
  const trt_trace::ThreadRings::Writer w = trt_trace::ThreadRings::instance().writer();
  uint64_t at = 0;
  // One event, no engine call (calls = 0): a full ring counts it as a dropped event.
  if (w.ring == nullptr || !w.ring->claim(1, 1, 0, &at)) return;
  w.ring->slot(at).inference =
      trt_trace::inference_record(me.begin_ns, end, me.call_id, w.thread_id,
                                  static_cast<uint8_t>(error != 0 ? trt_trace::kFlagError : 0), static_cast<uint32_t>(kind));
  w.ring->publish(at + 1);
}
