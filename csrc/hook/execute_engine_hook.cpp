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

#include "common/record.h"
#include "hook/call_scope.h"
#include "hook/engine_registry.h"
#include "hook/tracing_state.h"

namespace trt_trace {
namespace {

// The CUDA device of the first CUDA tensor in a tensor-list argument or result.
uint16_t cuda_device_of(const c10::IValue& tensors) {
  if (!tensors.isTensorList()) return kNoDevice;
  for (const at::Tensor& t : tensors.toTensorList()) {
    if (t.defined() && t.is_cuda()) return static_cast<uint16_t>(t.get_device());
  }
  return kNoDevice;
}

void traced_call(const c10::OperatorHandle& op, c10::DispatchKeySet next, torch::jit::Stack* stack) {
  const uint32_t engine_id = EngineRegistry::instance().id_for(stack->back());
  CallScope call(engine_id, cuda_device_of((*stack)[stack->size() - 2]));
  try {
    op.redispatchBoxed(next, stack);
  } catch (...) {
    call.finish(/*error=*/true);  // slices closed and flagged; the exception goes on unchanged
    throw;
  }
  // CPU inputs are moved to the engine's GPU by the runtime: its outputs name the device.
  if (call.device() == kNoDevice && !stack->empty()) call.set_device(cuda_device_of(stack->back()));
  call.finish(/*error=*/false);
}

void execute_engine_hook(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  const c10::DispatchKeySet next =
      ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::BackendSelect);
  if (!tracing_enabled() || stack->size() < 2) {
    op.redispatchBoxed(next, stack);
    return;
  }
  traced_call(op, next, stack);
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_IMPL(tensorrt, BackendSelect, m) {
  m.impl("execute_engine", torch::CppFunction::makeFromBoxedFunction<&trt_trace::execute_engine_hook>());
}
