// GPU execution spans of traced calls: the hot-path half (the calling thread).
// The drainer's half, which turns the events into spans on the host clock, is
// gpu_resolver.h; docs/gpu-clock.md has the whole model.
//
// Per traced CUDA call: a pooled event recorded on the caller's current stream
// before the call and one after it. The runtime orders the engine's work
// between them on that stream (directly, or through a stream of its own and
// event hand-offs). Where the engine runs on a stream of its own
// (engine_stream_trace.h) a second pair is taken on that stream, around the
// engine's own work: the call then has two spans, its engine work (kGpu) and
// what the caller's stream waited for it (kCallerWait, the hand-offs included),
// the first inside the second; to save the caller's pair's CUDA calls, only the first measured call
// of an engine and every kCallerWaitEvery-th after it take both pairs, the others the engine stream's
// alone (gpu_sampling.h). Nothing synchronises on this thread; while the
// stream is capturing a CUDA graph no event is recorded and the call is flagged
// kFlagCaptured instead. Each pair of event handles travels through the call's
// ring as one pending record.
#pragma once

#include <cstdint>

#include "common/switch.h"
#include "hook/gpu_call_events.h"

namespace trt_trace {
namespace gpu {

// The GPU timing switch (read as enabled()); set it through set_enabled, which
// returns whether GPU timing is compiled in (a CUDA build).
extern Switch enabled;
bool set_enabled(bool on);
bool available() noexcept;


// Before the call: checks capture, records the start event on the caller's stream, always (a call
// gets its span whatever stream the runtime picks). engine_stream_only (gpu_sampling.h): if the
// runtime hands the work to a stream of its own, the call ends with the engine stream's pair alone
// and records no caller-stream end. False: no GPU span.
bool begin_call(uint16_t device, CallEvents* ev, bool engine_stream_only = false) noexcept;
// After the call: records the end event(s). False: no GPU span (events released).
bool end_call(uint16_t device, CallEvents* ev) noexcept;
// Gives the events back (the call's records were dropped, or it failed).
void release(uint16_t device, CallEvents* ev) noexcept;

// Benchmark support: host ns per call of the GPU-event work a traced call adds
// on its thread (begin_call + end_call on the current stream of `device`, with
// pooled events that completed before), averaged over `calls`, of which 1 in
// `every` is measured by the hook's own sampling decision (gpu_sampling.h), the
// others only decided; -1 if no events could be recorded. hand_off: each call
// also hands its work to a stream of its own and back through c10 events, as
// the 2.11 runtime does, so that a measured call takes the engine-stream pair
// too (four events): with two c10 events kept for all calls (kHandOffKept), or
// made and destroyed by each call as the runtime's are (kHandOffPerCall).
// kernels: each call also launches that many small kernels (the engine's work)
// on the stream the work runs on. scrub_kib: that many KiB written between
// calls, as a real call's other host work evicts the caches. With any of these,
// the same calls without the hook's work are timed and taken off. Synchronises
// the device: not for use while tracing.
enum HandOff : int64_t { kNoHandOff = 0, kHandOffKept = 1, kHandOffPerCall = 2 };
double event_pair_host_ns(uint16_t device, int64_t calls, int64_t every = 1, int64_t hand_off = kNoHandOff,
                          int64_t kernels = 0, int64_t scrub_kib = 0) noexcept;

}  // namespace gpu
}  // namespace trt_trace
