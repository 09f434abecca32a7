#include "hook/observe_ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/_to_copy_ops.h>
#include <ATen/ops/clone_ops.h>
#include <ATen/ops/copy_ops.h>
#include <ATen/ops/empty_ops.h>
#include <ATen/ops/empty_strided_ops.h>
#include <ATen/ops/view_ops.h>
#include <torch/library.h>

#include <cstdio>
#include <memory>
#include <string>

#include "hook/call_scope.h"

namespace trt_trace {
namespace {

// The op's typed handle, found once. Handing on through it inlines the dispatcher's redispatch
// (table look-up, kernel call) into the observer's kernel, where at::_ops::<op>::redispatch, an
// exported function, would marshal every argument once more on each observed op.
template <class Op>
const c10::TypedOperatorHandle<typename Op::schema>& handle() {
  static const c10::TypedOperatorHandle<typename Op::schema> h =
      c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name).template typed<typename Op::schema>();
  return h;
}

// Keys below the observer's: where every observed op goes on.
inline c10::DispatchKeySet below(c10::DispatchKeySet ks) {
  return ks & c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, kObserveOpsKey);
}

// Each observer kernel is compiled flat (everything it calls inlined into it, as far as it can be): the
// dispatcher's kernel look-up for the key below, a header function the compiler otherwise calls out of
// line through the PLT, then costs no call of its own on each observed op (tools/bench/bench_callgrind.py).
#define TRT_TRACE_OBSERVER __attribute__((flatten))

// Reports one op to the thread's traced call: its start now, its end when this
// goes out of scope (also when the op throws). Not reported: ops outside traced
// calls and ops dispatched from inside an observed op.
class ObservedOp {
 public:
  C10_ALWAYS_INLINE explicit ObservedOp(OpKind kind) noexcept : call_(CallScope::current()) {
    if (call_ != nullptr && !call_->on_op_start(kind)) call_ = nullptr;
  }
  C10_ALWAYS_INLINE ~ObservedOp() {
    if (call_ != nullptr) call_->on_op_end();
  }
  ObservedOp(const ObservedOp&) = delete;
  ObservedOp& operator=(const ObservedOp&) = delete;

 private:
  CallScope* call_;
};

TRT_TRACE_OBSERVER
at::Tensor observe_view(c10::DispatchKeySet ks, const at::Tensor& self, c10::SymIntArrayRef size) {
  ObservedOp observed(OpKind::kInputView);
  return handle<at::_ops::view>().redispatch(below(ks), self, size);
}

TRT_TRACE_OBSERVER
at::Tensor observe_empty(c10::DispatchKeySet ks, c10::SymIntArrayRef size, std::optional<at::ScalarType> dtype,
                         std::optional<at::Layout> layout, std::optional<at::Device> device,
                         std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  ObservedOp observed(OpKind::kAllocation);
  return handle<at::_ops::empty_memory_format>().redispatch(below(ks), size, dtype, layout, device, pin_memory,
                                                   memory_format);
}

TRT_TRACE_OBSERVER
at::Tensor observe_empty_strided(c10::DispatchKeySet ks, c10::SymIntArrayRef size, c10::SymIntArrayRef stride,
                                 std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                                 std::optional<at::Device> device, std::optional<bool> pin_memory) {
  ObservedOp observed(OpKind::kAllocation);
  return handle<at::_ops::empty_strided>().redispatch(below(ks), size, stride, dtype, layout, device, pin_memory);
}

TRT_TRACE_OBSERVER
at::Tensor observe_clone(c10::DispatchKeySet ks, const at::Tensor& self,
                         std::optional<at::MemoryFormat> memory_format) {
  ObservedOp observed(OpKind::kOther);
  return handle<at::_ops::clone>().redispatch(below(ks), self, memory_format);
}

TRT_TRACE_OBSERVER
at::Tensor observe_to_copy(c10::DispatchKeySet ks, const at::Tensor& self, std::optional<at::ScalarType> dtype,
                           std::optional<at::Layout> layout, std::optional<at::Device> device,
                           std::optional<bool> pin_memory, bool non_blocking,
                           std::optional<at::MemoryFormat> memory_format) {
  ObservedOp observed(OpKind::kConversion);
  return handle<at::_ops::_to_copy>().redispatch(below(ks), self, dtype, layout, device, pin_memory, non_blocking,
                                        memory_format);
}

TRT_TRACE_OBSERVER
at::Tensor& observe_copy_(c10::DispatchKeySet ks, at::Tensor& self, const at::Tensor& src, bool non_blocking) {
  ObservedOp observed(OpKind::kOther);
  return handle<at::_ops::copy_>().redispatch(below(ks), self, src, non_blocking);
}

struct Registration {
  std::unique_ptr<torch::Library> fallthrough;
  std::unique_ptr<torch::Library> observed;
};

bool register_kernels() {
  static Registration* reg = new Registration();  // kept for the life of the process
  try {
    // Every op without a kernel below skips the key (the dispatcher drops fallthrough keys).
    reg->fallthrough = std::make_unique<torch::Library>(torch::Library::IMPL, "_", std::make_optional(kObserveOpsKey),
                                                        __FILE__, __LINE__);
    reg->fallthrough->fallback(torch::CppFunction::makeFallthrough());
    reg->observed = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", std::make_optional(kObserveOpsKey),
                                                     __FILE__, __LINE__);
    reg->observed->impl("view", TORCH_FN(observe_view));
    reg->observed->impl("empty.memory_format", TORCH_FN(observe_empty));
    reg->observed->impl("empty_strided", TORCH_FN(observe_empty_strided));
    reg->observed->impl("clone", TORCH_FN(observe_clone));
    reg->observed->impl("_to_copy", TORCH_FN(observe_to_copy));
    reg->observed->impl("copy_", TORCH_FN(observe_copy_));
    return true;
  } catch (const std::exception& e) {
    reg->observed.reset();
    reg->fallthrough.reset();
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    std::fprintf(stderr,
                 "trt_trace: engine phases unavailable (dispatch key DeferredInit is taken: %s); "
                 "calls are timed as a whole\n",
                 what.c_str());
    return false;
  }
}

}  // namespace

const bool detail::g_op_observer_available = register_kernels();

}  // namespace trt_trace
