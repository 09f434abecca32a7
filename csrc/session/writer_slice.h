// The writer thread's scheduling hint: a long time slice, so that the threads it serves are picked first.
#pragma once

#include <cstdint>

namespace trt_trace::session {

// The slice the writer asks for. Linux's EEVDF scheduler (6.6+; a custom slice since 6.12) gives a thread with a
// longer slice a later virtual deadline: of two runnable threads owed CPU, the one with the shorter slice runs first,
// and a woken thread with a shorter slice may preempt. The slice changes no thread's share of the CPU.
constexpr int64_t kWriterSliceNs = 20'000'000;  // 20 ms: longer than one drain's work (BENCHMARKS.md)

// Asks the kernel for kWriterSliceNs on the calling thread, keeping its policy and nice value. Whether it took:
// false where the kernel has no sched_setattr, the policy is not SCHED_OTHER or SCHED_BATCH, or it refused.
// Kernels before 6.12 take the call and ignore the slice. Needs no privilege: neither priority nor share changes.
bool ask_for_writer_slice();

}  // namespace trt_trace::session
