// The one clock every trt_trace timestamp is read from.
//
// CLOCK_MONOTONIC in nanoseconds: the same clock as Python's time.monotonic_ns()
// and Perfetto's BUILTIN_CLOCK_MONOTONIC, shared by every process on a host, so
// traces of several processes line up without conversion. clock_gettime through
// the vDSO costs ~20 ns and takes no lock.
#pragma once

#include <cstdint>
#include <ctime>

namespace trt_trace {

// Always inline: a traced call reads it six times.
__attribute__((always_inline)) inline int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace trt_trace
