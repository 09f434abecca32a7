// A traced call's CUDA events, as the calling thread's GPU-timing parts share them (hook/gpu_events.h
// records them, hook/engine_stream_trace.h adds the engine stream's pair, hook/gpu_event_pool.h recycles
// them): a header of its own, so that none of those includes another both ways.
#pragma once

#include <cstdint>

namespace trt_trace {
namespace gpu {

constexpr int kMaxDevices = 64;  // CUDA devices a process may trace on (device index < 64)

struct CallEvents {
  void* start = nullptr;  // cudaEvent_t
  void* end = nullptr;
  uint32_t stream = 0;    // low bits of the c10 stream id
  bool captured = false;
  // The engine's own stream, where the runtime hands the work over to one (engine_stream_trace.h).
  bool active = false;             // this call is the thread's current one for the GPU trace
  void* caller_stream = nullptr;   // cudaStream_t the start event went on
  void* engine_stream = nullptr;   // cudaStream_t made to wait for the caller's, if any
  void* engine_start = nullptr;    // cudaEvent_t on engine_stream after that wait
  void* engine_end = nullptr;      // cudaEvent_t on engine_stream after the engine's work
  CallEvents* outer = nullptr;     // the enclosing traced call's (nested calls)
  uint32_t engine_stream_id = 0;   // low bits of engine_stream's c10 id
  // After end_call: both pairs complete (start/end on the caller's stream, engine_start/engine_end
  // on the engine's); otherwise only start/end, on whichever stream the engine ran.
  bool on_engine_stream = false;
  bool engine_only = false;        // start/end are the engine-stream pair (no caller-stream end)
  // Set by begin_call: where the engine's work goes to a stream of its own, the call records the
  // engine stream's pair only (gpu_sampling.h) and no caller-stream end.
  bool caller_end_optional = false;
  // Set by end_call: the caller's pair was dropped for the engine stream's (its start given back).
  bool caller_pair_skipped = false;
};

}  // namespace gpu
}  // namespace trt_trace
