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
