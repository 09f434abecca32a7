// A process-wide on/off setting that the hot path reads on every traced call.
//
// Declared in a header as `extern Switch name;` and read as `name()`, as a
// function of that name would be: the read is one relaxed load, inlined, the
// whole cost of asking. Relaxed is enough: nothing is published through a
// switch; a call that reads it just as it changes takes the old value, as one
// begun a moment earlier would.
#pragma once

#include <atomic>

namespace trt_trace {

class Switch {
 public:
  constexpr explicit Switch(bool on) noexcept : on_(on) {}
  Switch(const Switch&) = delete;
  Switch& operator=(const Switch&) = delete;

  bool operator()() const noexcept { return on_.load(std::memory_order_relaxed); }
  void set(bool on) noexcept { on_.store(on, std::memory_order_relaxed); }

 private:
  std::atomic<bool> on_;
};

}  // namespace trt_trace
