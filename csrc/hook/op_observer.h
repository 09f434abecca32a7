// Sees the aten ops that a traced call dispatches, and nothing else.
//
// The phase model (hook/call_scope.h) needs the call's top-level aten ops: the
// first input view, the output allocations. Observing them with a RecordFunction
// callback made every op of the call pay for a RecordFunction and every call pay
// for rebuilding the thread's callback lists (~2.8k instructions per call in
// all, tools/bench_callgrind.py). Instead, a dispatch key is put into this
// thread's included set for the duration of a traced call (two thread-local
// bit flips). Kernels at that key run first for every op of the call, note it,
// and hand on with the key excluded, so ops nested inside an op are not seen
// (top-level ops only, with no depth counting) and every other op of the
// process never meets the key.
//
//   aten::view, aten::empty.memory_format   unboxed kernels (the fast path:
//                                           one view per input, one empty per output)
//   any other op                            a boxed fallback (staging copies,
//                                           .cuda(), contiguous: slower, rarer)
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

enum class OpKind : uint8_t { kInputView, kAllocation, kOther };

// True once the kernels are registered (at library load).
bool op_observer_available() noexcept;

// While alive, this thread's ops pass through the observer kernels (also inside
// an outer observed op: a nested traced call sees its own ops).
class ObserveOps {
 public:
  ObserveOps() noexcept : saved_(c10::impl::tls_local_dispatch_key_set()) {
    c10::impl::LocalDispatchKeySet now = saved_;
    now.included_ = now.included_.add(kObserveOpsKey);
    now.excluded_ = now.excluded_.remove(kObserveOpsKey);
    c10::impl::_force_tls_local_dispatch_key_set(now);
  }
  ~ObserveOps() { c10::impl::_force_tls_local_dispatch_key_set(saved_); }
  ObserveOps(const ObserveOps&) = delete;
  ObserveOps& operator=(const ObserveOps&) = delete;

 private:
  c10::impl::LocalDispatchKeySet saved_;
};

}  // namespace trt_trace
