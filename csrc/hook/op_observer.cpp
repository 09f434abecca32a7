#include "hook/op_observer.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/view_ops.h>
#include <torch/library.h>

#include <cstdio>
#include <memory>
#include <string>

#include "hook/call_scope.h"

namespace trt_trace {
namespace {

// Keys below the observer's: where every observed op goes on.
inline c10::DispatchKeySet below(c10::DispatchKeySet ks) {
  return ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kObserveOpsKey);
}

// Reports one op to the thread's traced call: its start now, its end when this
// goes out of scope (also when the op throws). Not reported: ops outside traced
// calls and ops dispatched from inside an observed op.
class ObservedOp {
 public:
  explicit ObservedOp(OpKind kind) noexcept : call_(CallScope::current()) {
    if (call_ != nullptr && !call_->on_op_start(kind)) call_ = nullptr;
  }
  ~ObservedOp() {
    if (call_ != nullptr) call_->on_op_end();
  }
  ObservedOp(const ObservedOp&) = delete;
  ObservedOp& operator=(const ObservedOp&) = delete;

 private:
  CallScope* call_;
};

at::Tensor observe_view(c10::DispatchKeySet ks, const at::Tensor& self, c10::SymIntArrayRef size) {
  ObservedOp observed(OpKind::kInputView);
  return at::_ops::view::redispatch(below(ks), self, size);
}

at::Tensor observe_empty(c10::DispatchKeySet ks, c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  ObservedOp observed(OpKind::kAllocation);
  return at::_ops::empty_memory_format::redispatch(below(ks), size, dtype, layout, device, pin_memory,
                                                   memory_format);
}

OpKind kind_of(const c10::OperatorHandle& op) {
  const std::string& name = op.operator_name().name;
  if (name == "aten::view") return OpKind::kInputView;
  if (name.compare(0, 11, "aten::empty") == 0) return OpKind::kAllocation;
  return OpKind::kOther;
}

void observe_any(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard nested_ops_skip_observer(kObserveOpsKey);
  ObservedOp observed(kind_of(op));
  op.redispatchBoxed(below(ks), stack);
}

struct Registration {
  std::unique_ptr<torch::Library> fallback;
  std::unique_ptr<torch::Library> fast_path;
};

bool register_kernels() {
  static Registration* reg = new Registration();  // kept for the life of the process
  try {
    reg->fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_", std::make_optional(kObserveOpsKey),
                                                     __FILE__, __LINE__);
    reg->fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&observe_any>());
    reg->fast_path = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                                      std::make_optional(kObserveOpsKey), __FILE__, __LINE__);
    reg->fast_path->impl("view", TORCH_FN(observe_view));
    reg->fast_path->impl("empty.memory_format", TORCH_FN(observe_empty));
    return true;
  } catch (const std::exception& e) {
    reg->fast_path.reset();
    reg->fallback.reset();
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::fprintf(stderr,
                 "trt_trace: engine phases unavailable (dispatch key DeferredInit is taken: %s); "
                 "calls are timed as a whole\n",
                 what.c_str());
    return false;
  }
}

const bool g_available = register_kernels();

}  // namespace

bool op_observer_available() noexcept { return g_available; }

}  // namespace trt_trace
