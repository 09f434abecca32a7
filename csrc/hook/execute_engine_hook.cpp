// The interposer: a boxed kernel for tensorrt::execute_engine at the
// BackendSelect key, which every call of the op passes through (eager,
// inference_mode, TorchScript, the AOTInductor proxy executor), registered from
// this library without touching the runtime's own registration. It hands each
// call on to the next key (the runtime's CompositeExplicitAutograd kernel).
//
// Registration order does not matter: an impl may be registered before the
// op's schema is defined by the runtime library.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <optional>

#include "common/record.h"
#include "hook/call_scope.h"
#include "engines/engine_registry.h"
#include "integrations/profiler_scopes.h"
#include "hook/tracing_state.h"
#include "layers/layer_switch.h"
#include "layers/layer_window.h"

namespace trt_trace {
namespace {

// The CUDA device of the first CUDA tensor in a tensor-list argument or result.
// Reads the list in place (no List copy, no refcount traffic): this runs on every traced call.
uint16_t cuda_device_of(const c10::IValue& tensors) {
  if (!tensors.isList()) return kNoDevice;
  for (const c10::IValue& v : tensors.toListRef()) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.is_cuda()) return static_cast<uint16_t>(t.get_device());
  }
  return kNoDevice;
}

// The CUDA device of the first tensor in a tensor-list result (kNoDevice: none, or not on CUDA).
uint16_t cuda_device_of_first(const c10::IValue& tensors) {
  if (!tensors.isList()) return kNoDevice;
  const auto list = tensors.toListRef();
  if (list.empty() || !list[0].isTensor()) return kNoDevice;
  const at::Tensor& t = list[0].toTensor();
  return t.defined() && t.is_cuda() ? static_cast<uint16_t>(t.get_device()) : kNoDevice;
}

// Hands the call on inside `call` and ends it.
C10_ALWAYS_INLINE void run_call(const c10::OperatorHandle& op, c10::DispatchKeySet next, torch::jit::Stack* stack,
                                       CallScope& call) {
  try {
    op.redispatchBoxed(next, stack);
  } catch (...) {
    call.finish(/*error=*/true);  // slices closed and flagged; the exception goes on unchanged
    throw;
  }
  // CPU inputs are moved to the engine's GPU by the runtime: its outputs, all on that device, name it.
  if (call.device() == kNoDevice && !stack->empty()) call.set_device(cuda_device_of_first(stack->back()));
  call.finish(/*error=*/false);
}

// A traced call while per-layer timing is on: its engine's window (layers/layer_window.h) decides, around
// the call scope, whether the runtime profiles it; a profiled call's layers go into the ring after it.
void layered_call(const c10::OperatorHandle& op, c10::DispatchKeySet next, torch::jit::Stack* stack,
                  detail::HookThread& me, uint32_t engine_id, uint16_t device) {
  layers::LayerCall window(engine_id, stack->back(), /*nested=*/me.current_call != nullptr, device);
  CallScope call(me, engine_id, device, /*record=*/true);
  if (!window.profiled()) {
    run_call(op, next, stack, call);
    return;
  }
  const auto facts = [&call] {
    return layers::ProfiledCall{call.call_id(), call.device(), call.enqueue_begin(),
                                call.epoch() != 0 && call.epoch() == recording_epoch()};
  };
  try {
    run_call(op, next, stack, call);
  } catch (...) {
    window.finished(facts(), /*error=*/true);
    throw;  // unchanged, as every traced call's
  }
  window.finished(facts(), /*error=*/false);
}

// record = false: tracing is off, a profiler records (scopes only, see profiler_scopes.h).
// me: detail::t_hook of the calling thread.
void traced_call(const c10::OperatorHandle& op, c10::DispatchKeySet next, torch::jit::Stack* stack,
                 detail::HookThread& me, bool record) {
  const uint32_t engine_id = EngineRegistry::instance().id_for(stack->back(), me.registry_cache);
  const uint16_t device = cuda_device_of((*stack)[stack->size() - 2]);
  if (C10_UNLIKELY(record && layers::armed())) {  // per-layer timing (TRT_TRACE_LAYERS) switched on
    layered_call(op, next, stack, me, engine_id, device);
    return;
  }
  CallScope call(me, engine_id, device, record);
  run_call(op, next, stack, call);
}

void execute_engine_hook(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::DispatchKeySet next =
      ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::BackendSelect);
  // A Python engine object (2.13 and later without the C++ runtime register the op from Python, its engine a
  // Python object): the Python side traces that call, named, with its phases (hook/python_calls.h).
  if (stack->size() < 2 || C10_UNLIKELY(stack->back().isPyObject())) {
    op.redispatchBoxed(next, stack);
    return;
  }
  // The call's one look-up of the hook's thread-local state: traced or not, the call needs it (the profiler
  // check reads the thread's RecordFunction state through it).
  detail::HookThread& me = detail::t_hook;
  if (!tracing_enabled()) {
    if (C10_LIKELY(!profiler_scopes_wanted(detail::record_function_tls(me)))) {
      op.redispatchBoxed(next, stack);
      return;
    }
    traced_call(op, next, stack, me, /*record=*/false);
    return;
  }
  traced_call(op, next, stack, me, /*record=*/true);
}

// The registration, held so that it can be undone: destroying the library
// deregisters the kernel (benchmarks compare "not installed" in one process).
std::unique_ptr<torch::Library>& hook_library() {
  static auto* lib = new std::unique_ptr<torch::Library>();
  return *lib;
}

void install_hook(bool installed) {
  auto& lib = hook_library();
  if (installed && !lib) {
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "tensorrt",
                                           std::make_optional(c10::DispatchKey::BackendSelect), __FILE__, __LINE__);
    lib->impl("execute_engine", torch::CppFunction::makeFromBoxedFunction<&execute_engine_hook>());
  } else if (!installed) {
    lib.reset();
  }
}

bool hook_installed() { return hook_library() != nullptr; }

const bool g_installed_at_load = (install_hook(true), true);

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("_install_hook(bool installed) -> ()", &trt_trace::install_hook);
  m.def("_hook_installed() -> bool", &trt_trace::hook_installed);
}
