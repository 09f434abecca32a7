// Record cost: ns per record pushed into a thread's ring (ThreadRings::push, the hook's path),
// with 1 and 2 producer threads and a consumer draining concurrently so rings never fill.
//   g++ -O2 -std=c++17 -pthread -Icsrc tools/bench/ring_push.cpp csrc/buffer/thread_rings.cpp csrc/buffer/call_layout.cpp -o ring_push
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "buffer/thread_rings.h"

using namespace trt_trace;

// Each producer pushes `per_thread` records in batches of `batch` (the hook pushes a call's records
// together: 5 on the CPU, 6 with a GPU span) into a ring large enough to hold them all, so every
// push takes the store path (a full ring's drop path is cheaper and would flatter the figure).
// The rings are drained between runs.
static double producer_ns_per_record(int threads, int64_t per_thread, int batch) {
  std::vector<double> ns(threads);
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      std::vector<Record> call(batch, Record{0, 0, 0, 1, 0, 0, 0, kNoDevice, 0});
      ThreadRings::instance().push(call.data(), 1);  // the thread's ring exists before timing
      const auto t0 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < per_thread; i += batch) {
        call[0].begin_ns = i;
        ThreadRings::instance().push(call.data(), batch);
      }
      ns[t] = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / per_thread;
    });
  }
  for (auto& p : producers) p.join();
  std::vector<Record> out(1 << 16);
  while (ThreadRings::instance().drain(out.data(), out.size()) > 0) {
  }
  double sum = 0;
  for (double v : ns) sum += v;
  return sum / threads;
}

int main() {
  ThreadRings::instance().set_capacity(1 << 21);
  for (int batch : {1, 5}) {
    for (int threads : {1, 2}) {
      std::vector<double> runs;
      for (int rep = 0; rep < 15; ++rep) runs.push_back(producer_ns_per_record(threads, 1000000, batch));
      std::sort(runs.begin(), runs.end());
      uint64_t dropped = 0;
      for (const auto& c : ThreadRings::instance().thread_counts()) dropped += c.dropped;
      std::printf("ring push, batches of %d, %d producer thread(s): median %.2f ns/record (min %.2f, max %.2f), "
                  "dropped %llu\n",
                  batch, threads, runs[runs.size() / 2], runs.front(), runs.back(), (unsigned long long)dropped);
    }
  }
  return 0;
}
