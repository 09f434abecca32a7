// The per-layer timing switch, as the hot path sees it: one relaxed load on traced calls.
//
// TRT_TRACE_LAYERS=N (a session's Settings.layers, trt_trace.layers(N)): the first call of each
// engine after the switch is set runs as usual, its next N calls run with Torch-TensorRT's own
// per-layer profiling on (csrc/layers/layer_window.h), then it is back to normal calls. 0: off,
// and then traced calls never reach the layer code.
#pragma once

#include <atomic>
#include <cstdint>

namespace trt_trace {
namespace layers {

extern std::atomic<int64_t> g_calls_per_engine;  // N; 0: off

inline bool armed() noexcept { return g_calls_per_engine.load(std::memory_order_relaxed) != 0; }

}  // namespace layers
}  // namespace trt_trace
