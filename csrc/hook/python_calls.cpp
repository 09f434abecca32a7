#include "hook/python_calls.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "common/record.h"
#include "engines/engine_registry.h"
#include "hook/call_scope.h"
#include "hook/tracing_state.h"
#include "integrations/profiler_scopes.h"
#include "layers/layer_switch.h"
#include "layers/layer_window.h"

namespace trt_trace {
namespace {

// Python calls nested on one thread (a Python engine run inside another's call): deeper ones go untraced.
constexpr int32_t kMaxDepth = 8;

// One layer decision of a Python call (trt_trace_py_layers_open .. _close), with the facts its call
// scope leaves when it ends (the layers are laid out from its enqueue phase).
struct LayerSlot {
  int32_t call_index;  // the call scope's index in `slots` that this decision is for
  bool has_facts;
  bool recorded;
  uint16_t device;
  uint64_t call_id;
  int64_t enqueue_begin;
  alignas(layers::LayerCall) unsigned char call[sizeof(layers::LayerCall)];
  layers::LayerCall* get() noexcept { return std::launder(reinterpret_cast<layers::LayerCall*>(call)); }
};

// Raw storage, zero-initialised like every thread_local: no init guard, no destructor, no allocation.
struct PythonCalls {
  int32_t depth;
  alignas(CallScope) unsigned char slots[kMaxDepth][sizeof(CallScope)];
  int32_t layer_depth;
  LayerSlot layers[kMaxDepth];
  CallScope* at(int32_t i) noexcept { return std::launder(reinterpret_cast<CallScope*>(slots[i])); }
};
thread_local PythonCalls t_python_calls;

void close_top(PythonCalls& calls, bool error) noexcept {
  const int32_t index = calls.depth - 1;
  CallScope* call = calls.at(index);
  call->finish(error);
  if (calls.layer_depth > 0) {  // a layer decision waits for this call's facts
    LayerSlot& slot = calls.layers[calls.layer_depth - 1];
    if (slot.call_index == index && !slot.has_facts) {
      slot.has_facts = true;
      slot.call_id = call->call_id();
      slot.device = call->device();
      slot.enqueue_begin = call->enqueue_begin();
      slot.recorded = call->epoch() != 0 && call->epoch() == recording_epoch();
    }
  }
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

int32_t trt_trace_py_call_begin(uint32_t engine_id, int32_t device, int32_t layered) {
  const bool record = trt_trace::tracing_enabled();
  trt_trace::detail::HookThread& hook = trt_trace::detail::t_hook;
  if (!record && C10_LIKELY(!trt_trace::profiler_scopes_wanted(trt_trace::detail::record_function_tls(hook)))) {
    return 0;
  }
  if (C10_UNLIKELY(record && layered == 0 && trt_trace::layers::armed())) return -1;
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

int32_t trt_trace_py_layers_open(uint32_t engine_id, int32_t device) {
  trt_trace::PythonCalls& calls = trt_trace::t_python_calls;
  if (calls.layer_depth >= trt_trace::kMaxDepth || calls.depth >= trt_trace::kMaxDepth || engine_id == 0) return -1;
  trt_trace::LayerSlot& slot = calls.layers[calls.layer_depth];
  const uint16_t dev = device >= 0 && device < 0xffff ? static_cast<uint16_t>(device) : trt_trace::kNoDevice;
  slot.call_index = calls.depth;
  slot.has_facts = false;
  try {
    new (slot.call) trt_trace::layers::LayerCall(engine_id, /*nested=*/CallScope::current() != nullptr, dev);
  } catch (...) {  // out of memory for the engine's state: the call runs as usual
    return -1;
  }
  ++calls.layer_depth;
  trt_trace::layers::LayerCall* call = slot.get();
  if (!call->profiled()) return 0;
  return call->wants_layer_information() ? 2 : 1;
}

void trt_trace_py_layers_close(int32_t outcome, const char* note, const char* names, const int64_t* ns, int32_t n,
                               const char* info) {
  trt_trace::PythonCalls& calls = trt_trace::t_python_calls;
  if (calls.layer_depth == 0) return;
  trt_trace::LayerSlot& slot = calls.layers[calls.layer_depth - 1];
  trt_trace::layers::LayerCall* call = slot.get();
  if (call->profiled()) {
    try {
      if (info != nullptr) call->layer_information(info);
      if (outcome == 2) {
        call->not_profiled(note != nullptr ? note : "");
      } else {
        // No facts: the call was never opened (tracing went off meanwhile): its layers reach no trace.
        const trt_trace::layers::ProfiledCall facts{slot.has_facts ? slot.call_id : 0, slot.device,
                                                    slot.enqueue_begin, slot.has_facts && slot.recorded};
        std::vector<trt_trace::layers::TracedLayer> layers;
        if (outcome == 0 && names != nullptr && ns != nullptr) {
          layers.reserve(n > 0 ? static_cast<size_t>(n) : 0);
          const char* p = names;
          for (int32_t i = 0; i < n; ++i) {
            const size_t len = std::strlen(p);
            layers.push_back({std::string_view(p, len), ns[i] > 0 ? ns[i] : 0});
            p += len + 1;
          }
        }
        call->finished(facts, outcome != 0, layers);
      }
    } catch (...) {  // out of memory: this call's layers are lost, the window goes on
    }
  }
  call->~LayerCall();
  --calls.layer_depth;
}

int32_t trt_trace_py_calls_open() { return trt_trace::t_python_calls.depth; }
