#include "hook/python_calls.h"

#include <new>
#include <string>

#include "common/record.h"
#include "engines/engine_registry.h"
#include "hook/call_scope.h"
#include "hook/tracing_state.h"
#include "integrations/profiler_scopes.h"

namespace trt_trace {
namespace {

// Python calls nested on one thread (a Python engine run inside another's call): deeper ones go untraced.
constexpr int32_t kMaxDepth = 8;

// Raw storage, zero-initialised like every thread_local: no init guard, no destructor, no allocation.
struct PythonCalls {
  int32_t depth;
  alignas(CallScope) unsigned char slots[kMaxDepth][sizeof(CallScope)];
  CallScope* at(int32_t i) noexcept { return std::launder(reinterpret_cast<CallScope*>(slots[i])); }
};
thread_local PythonCalls t_python_calls;

void close_top(PythonCalls& calls, bool error) noexcept {
  CallScope* call = calls.at(calls.depth - 1);
  call->finish(error);
  call->~CallScope();
  --calls.depth;
}

}  // namespace
}  // namespace trt_trace

using trt_trace::CallScope;

uint32_t trt_trace_py_engine(const char* name) {
  if (name == nullptr) return 0;
  try {
    return trt_trace::EngineRegistry::instance().register_named(name[0] != '\0' ? name : "unnamed_engine");
  } catch (...) {  // out of memory: the engine goes untraced
    return 0;
  }
}

int32_t trt_trace_py_call_begin(uint32_t engine_id, int32_t device) {
  const bool record = trt_trace::tracing_enabled();
  trt_trace::detail::HookThread& hook = trt_trace::detail::t_hook;
  if (!record && C10_LIKELY(!trt_trace::profiler_scopes_wanted(trt_trace::detail::record_function_tls(hook)))) {
    return 0;
  }
  trt_trace::PythonCalls& calls = trt_trace::t_python_calls;
  if (C10_UNLIKELY(calls.depth >= trt_trace::kMaxDepth || engine_id == 0)) return 0;
  const uint16_t dev = device >= 0 && device < 0xffff ? static_cast<uint16_t>(device) : trt_trace::kNoDevice;
  new (calls.slots[calls.depth]) CallScope(hook, engine_id, dev, record, /*observe=*/false);
  return ++calls.depth;
}

void trt_trace_py_call_mark(int32_t mark) {
  trt_trace::PythonCalls& calls = trt_trace::t_python_calls;
  if (calls.depth == 0 || mark < 0 || mark > static_cast<int32_t>(CallScope::Mark::kEnqueueBegin)) return;
  CallScope* call = calls.at(calls.depth - 1);
  if (CallScope::current() != call) return;  // a call traced by the hook is open inside it: not its mark
  call->mark(static_cast<CallScope::Mark>(mark));
}

void trt_trace_py_call_end(int32_t handle, int32_t error) {
  trt_trace::PythonCalls& calls = trt_trace::t_python_calls;
  if (handle < 1 || handle > calls.depth) return;  // not open (closed already): nothing to close
  while (calls.depth > handle) trt_trace::close_top(calls, /*error=*/true);
  trt_trace::close_top(calls, error != 0);
}

int32_t trt_trace_py_calls_open() { return trt_trace::t_python_calls.depth; }
