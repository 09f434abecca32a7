// Cost of counting one finished call into the calling thread's stats table
// (EngineStats::Table::add_call: the counters and, where the tree has them, the
// duration histogram), in instructions (callgrind) and ns per call.
//
//   T=$(.venv/bin/python -c 'import torch.utils.cpp_extension as c; print(c.include_paths()[0])')
//   g++ -O2 -std=c++17 -pthread -Icsrc -I$T tools/bench/stats_add.cpp csrc/stats/engine_stats.cpp -o /tmp/stats_add
//   /tmp/stats_add                                   # ns per call
//   /tmp/stats_add 0 1000 [spread]                   # RSS of counting one call of each of 1000 engines
//   valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.out /tmp/stats_add 1000000 && \
//     callgrind_annotate --inclusive=yes /tmp/cg.out | grep -E 'count_(call|duration)'
//
// Built against another revision's csrc (-I<that>/csrc, its engine_stats.cpp) it measures that
// revision's add_call, so the two can be compared; count_duration exists only where the
// histograms do.
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "stats/engine_stats.h"

#if __has_include("stats/duration_histogram.h")
#define HAS_HISTOGRAM 1
#endif

using trt_trace::EngineStats;

__attribute__((noinline)) void count_call(EngineStats::Table* t, uint32_t id, const std::array<int64_t, 4>& ph) {
  t->add_call(id, ph, false);
}

#ifdef HAS_HISTOGRAM
__attribute__((noinline)) void count_duration(EngineStats::Table* t, uint32_t id, int64_t ns) {
  t->add_duration(id, trt_trace::kHistTotal, ns);
}
#endif

long rss_kib() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4;
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 20'000'000;
  EngineStats::Table* t = EngineStats::instance().this_thread();
  if (argc > 2) {  // memory: one call each of `engines` engines, durations in one bucket per engine
    const long engines = std::atol(argv[2]);
    const long before = rss_kib();
    // argv[3] "spread": engine i's call takes 2^(i % 20) µs, so the engines use 20 octaves of buckets.
    const bool spread = argc > 3;
    for (long id = 1; id <= engines; ++id) {
      const int64_t enqueue = spread ? (int64_t{1000} << (id % 20)) : 40000;
      count_call(t, static_cast<uint32_t>(id), {1000, 2000, 3000, enqueue});
    }
    std::printf("%ld engines%s: RSS +%ld KiB (%.2f KiB per engine)\n", engines, spread ? " (spread)" : "",
                rss_kib() - before,
                static_cast<double>(rss_kib() - before) / static_cast<double>(engines));
    return 0;
  }
  const uint32_t engines = 8;
  for (uint32_t id = 1; id <= engines; ++id) count_call(t, id, {1, 1, 1, 1});  // rows exist: no growth below
  // Durations spread over many buckets (a few µs to ~1 ms), as a busy engine's calls are.
  auto phases = [](long i) -> std::array<int64_t, 4> {
    const int64_t x = 1000 + (i * 7919) % 900'000;
    return {x / 10, x / 20, x / 40, x - x / 10 - x / 20 - x / 40};
  };
  auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) count_call(t, 1 + static_cast<uint32_t>(i % engines), phases(i));
  auto t1 = std::chrono::steady_clock::now();
  std::printf("add_call: %.2f ns per call\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
#ifdef HAS_HISTOGRAM
  t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) count_duration(t, 1 + static_cast<uint32_t>(i % engines), 1000 + (i * 7919) % 900'000);
  t1 = std::chrono::steady_clock::now();
  std::printf("add_duration alone: %.2f ns per call\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
#endif
  return 0;
}
