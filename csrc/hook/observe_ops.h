// Sees the aten ops that a traced call dispatches, and nothing else.
//
// The phase model (hook/call_scope.h) needs a few of the call's top-level aten
// ops: the first input view, the output allocations, and the end of the input
// phase's copies. Observing them with a RecordFunction callback made every op
// of the call pay for a RecordFunction and every call pay for rebuilding the
// thread's callback lists (~2.8k instructions per call in all,
// tools/bench/bench_callgrind.py). Instead, a dispatch key is put into this thread's
// included set for the duration of a traced call (two thread-local bit flips),
// and only the ops the phase model needs have kernels at that key; every other
// op falls through it (the dispatcher masks the key out of that op's key set:
// no kernel call, no extra hop), and every op outside a traced call never meets
// the key at all. The kernels, unboxed, note the op and hand on:
//
//   aten::view                           the input view (the runtime's
//                                        `.view(shape)` per input)
//   aten::empty.memory_format,           output allocations (`at::empty` per
//   aten::empty_strided                  output)
//   aten::clone, aten::_to_copy,         copies of the input and output phases
//   aten::copy_                          (`.contiguous()` of a non-contiguous
//                                        input, `.cuda()`, CUDA-graph staging):
//                                        their ends count as input-phase op
//                                        ends, and the allocations inside them
//                                        are not the call's
//
// Only a call's top-level ops are reported: an op dispatched from inside an
// observed op finds the call inside an op (a flag) and passes. An op nested in
// an op that falls through (e.g. the clone inside a dispatched `.contiguous()`)
// is seen as the call's own, which is why every op above that allocates or
// copies is observed. `.contiguous()` itself falls through: of a contiguous
// tensor it does nothing, of another its work is the clone observed inside it.
//
// The key: DispatchKey::DeferredInit, a functionality key above autograd that
// only torchdistx (an archived out-of-tree project) registers. If another library
// already holds a fallback for it, registration fails, calls are still timed,
// and their phases all land in `workspace` (reported once on stderr).
#pragma once

#include <c10/core/DispatchKey.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

namespace trt_trace {

constexpr c10::DispatchKey kObserveOpsKey = c10::DispatchKey::DeferredInit;

// kConversion: aten::_to_copy, a dtype/device conversion. Right after an output allocation it is
// part of output setup (Torch-TensorRT 2.11 allocates each output as float32 and converts it with
// .to(dtype)); anywhere else it counts as any other copy.
enum class OpKind : uint8_t { kInputView, kAllocation, kConversion, kOther };

// True once the kernels are registered (at library load).
namespace detail {
extern const bool g_op_observer_available;
}  // namespace detail
inline bool op_observer_available() noexcept { return detail::g_op_observer_available; }

// While alive, this thread's ops pass through the observer kernels (also inside
// an outer observed op: a nested traced call sees its own ops).
class ObserveOps {
 public:
  // Reads and writes c10's thread-local key sets through one reference: the
  // calling thread's c10::impl::raw_local_dispatch_key_set (Linux/macOS builds of
  // c10 export it), whose address the hook looks up once per thread. Only the
  // included set changes: trt_trace never excludes the key (ops without a kernel
  // at it fall through it instead).
  explicit ObserveOps(c10::impl::PODLocalDispatchKeySet& tls) noexcept : tls_(tls), saved_(tls_) {
    tls_.set_included(tls_.included().add(kObserveOpsKey));
  }
  ~ObserveOps() { tls_ = saved_; }
  ObserveOps(const ObserveOps&) = delete;
  ObserveOps& operator=(const ObserveOps&) = delete;

 private:
  c10::impl::PODLocalDispatchKeySet& tls_;
  c10::impl::PODLocalDispatchKeySet saved_;
};

}  // namespace trt_trace
