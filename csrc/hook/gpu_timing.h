// GPU execution spans of traced calls, from CUDA events, placed on the host clock.
//
// Hot path (the calling thread), per traced CUDA call: two pooled events
// recorded on the caller's current stream, one before and one after the call.
// The runtime orders the engine's work between them on that stream (directly,
// or, when the caller is on the default stream, through its pool stream and
// the caller<->engine event syncs). Nothing synchronises on this thread; while
// the stream is capturing a CUDA graph no event is recorded and the call is
// flagged kFlagCaptured instead.
//
// Drainer side (GpuResolver): the two event handles travel through the call's
// ring as a kGpuPending record; the drainer queries them (never blocking,
// except at the final drain) and turns each completed pair into a kGpu record
// on the host clock:
//   host(ev) = anchor.host_ns + elapsed(anchor.event, ev)
// where an anchor is an event recorded on an idle stream of the resolver's own
// and synchronised, its host time the midpoint of the tightest of three
// record->sync windows. A new anchor is made every 100 ms while spans resolve,
// and an event is placed linearly between the two anchors around it, so the
// GPU clock's rate difference (measured: ~100 ppm on one H200 VM) cancels out;
// each new anchor measures the residual (its distance from the clock line
// through the two before it). The span starts no earlier than the call's
// enqueue phase: the engine's GPU work cannot start before it is launched.
//
// Engines on a stream of their own: Torch-TensorRT 2.11 runs every engine on a
// pool stream of the engine's, handing work over with CUDA events (caller
// stream -> engine stream -> caller stream). A span on the caller's stream then
// also holds both hand-offs (several us of GPU time: a 10 us engine measured
// 1.5-2x). The runtime makes those hand-offs with c10's CUDAEvent, which
// reports every record and wait to c10's GPU trace (c10::impl::GPUTrace, the
// hook of torch.cuda._sanitizer). trt_trace installs a trace of its own there
// (chaining to one already installed) that, only inside a traced call with a
// start event, records a start event on the stream the runtime makes wait for
// the caller's (right after that wait) and an end event on it at each later
// event record there (right after the engine's work). When both exist the
// span is those two: the engine's own GPU work; otherwise (the engine ran on
// the caller's stream) the caller-stream pair as above.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/record.h"

namespace trt_trace {
namespace gpu {

extern std::atomic<bool> g_enabled;
inline bool enabled() noexcept { return g_enabled.load(std::memory_order_relaxed); }
// Returns whether GPU timing is compiled in (a CUDA build).
bool set_enabled(bool on);
bool available() noexcept;

struct CallEvents {
  void* start = nullptr;  // cudaEvent_t
  void* end = nullptr;
  uint32_t stream = 0;    // low bits of the c10 stream id
  bool captured = false;
  // The engine's own stream, where the runtime hands the work over to one (see above).
  bool active = false;             // this call is the thread's current one for the GPU trace
  void* caller_stream = nullptr;   // cudaStream_t the start event went on
  void* engine_stream = nullptr;   // cudaStream_t made to wait for the caller's, if any
  void* engine_start = nullptr;    // cudaEvent_t on engine_stream after that wait
  void* engine_end = nullptr;      // cudaEvent_t on engine_stream after the engine's work
  CallEvents* outer = nullptr;     // the enclosing traced call's (nested calls)
  bool on_engine_stream = false;   // end_call made start/end the engine-stream pair
};

// Before the call: checks capture, records the start event. False: no GPU span.
bool begin_call(uint16_t device, CallEvents* ev) noexcept;
// After the call: records the end event. False: no GPU span (events released).
bool end_call(uint16_t device, CallEvents* ev) noexcept;
// Gives the events back (the call's records were dropped, or it failed).
void release(uint16_t device, CallEvents* ev) noexcept;

// Whether c10's GPU trace reports to trt_trace (installed at the first traced CUDA call).
bool stream_trace_installed() noexcept;

// Benchmark support: host ns per call of the GPU-event work a traced call adds
// on its thread (begin_call + end_call on the current stream of `device`, with
// pooled events that completed before), averaged over `calls`; -1 if no events
// could be recorded. Synchronises the device: not for use while tracing.
double event_pair_host_ns(uint16_t device, int64_t calls) noexcept;

// Drainer side. Not thread-safe: used under ThreadRings' drain lock.
class Resolver {
 public:
  static Resolver& instance();
  // Takes the kGpuPending records out of records[0..n) (compacting the rest in
  // place; returns the new n) and remembers each call's enqueue begin.
  size_t take_pending(Record* records, size_t n);
  // Appends up to max resolved kGpu records to out. wait: block until every
  // pending span is complete (final drain only).
  size_t resolve(Record* out, size_t max, bool wait);
  size_t pending() const noexcept;
  // A forked child cannot use its parent's CUDA events: forget them (no CUDA call).
  void forget_pending() noexcept;
  // anchors made, max |residual| ns, last residual ns, last anchor window ns,
  // GPU clock rate - 1 in parts per billion
  std::vector<int64_t> clock_stats() const;
};

}  // namespace gpu
}  // namespace trt_trace
