// Sees the aten ops that a traced call dispatches, and nothing else.
//
// The phase model (hook/call_scope.h) needs the call's top-level aten ops: the
// first input view, the output allocations. Observing them with a RecordFunction
// callback made every op of the call pay for a RecordFunction and every call pay
// for rebuilding the thread's callback lists (~2.8k instructions per call in
// all, tools/bench/bench_callgrind.py). Instead, a dispatch key is put into this
// thread's included set for the duration of a traced call (two thread-local
// bit flips). Kernels at that key run first for every op of the call, note it
// and hand on; every other op of the process never meets the key. Only a call's
// top-level ops are reported (an op dispatched from inside an observed op is not):
//
//   aten::view, aten::empty.memory_format   unboxed kernels, the fast path (one
//                                           view per input, one empty per output).
//                                           They dispatch no ops of their own in
//                                           practice; one that did would find the
//                                           call inside an op (a flag) and pass.
//   any other op                            a boxed fallback (staging copies,
//                                           .cuda(), contiguous: slower, rarer). It
//                                           also excludes the key while the op runs,
//                                           so the copies inside never reach it.
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
  // Reads and writes c10's thread-local key sets through one reference (one
  // thread-local lookup for both ends; Linux/macOS builds of c10 export it).
  ObserveOps() noexcept : tls_(c10::impl::raw_local_dispatch_key_set), saved_(tls_) {
    tls_.set_included(tls_.included().add(kObserveOpsKey));
    tls_.set_excluded(tls_.excluded().remove(kObserveOpsKey));
  }
  ~ObserveOps() { tls_ = saved_; }
  ObserveOps(const ObserveOps&) = delete;
  ObserveOps& operator=(const ObserveOps&) = delete;

 private:
  c10::impl::PODLocalDispatchKeySet& tls_;
  c10::impl::PODLocalDispatchKeySet saved_;
};

}  // namespace trt_trace
