// Per-layer GPU time of engine calls (TRT_TRACE_LAYERS=N): each engine's layer window.
//
// With the switch on (layer_switch.h), every traced call goes through a LayerCall (the hook's
// execute_engine_hook.cpp makes one around its call scope). Per engine
// and per arming of the switch (a "generation"), the first call runs as usual, the next N calls
// run with Torch-TensorRT's own per-layer profiling (runtime_profiling.h), then the window closes
// and the engine's calls are normal again. A profiled call is the runtime's synchronous, profiled
// call; after it trt_trace reads the layer times the runtime wrote (in a private folder,
// private_folder.h), interns the layer names (layer_names.h) and writes one record per layer into
// the calling thread's ring (Phase::kLayer), laid end to end from the start of the call's enqueue
// phase: the durations are TensorRT's, the placement is derived (docs/layers.md).
//
// Thread safety. The runtime's profiling methods take no lock, and a context or profiler replaced
// under a running call is freed while in use. So while an engine's window is not over, all its
// calls pass one per-engine gate (a mutex held for the whole call: they queue there instead of on
// the runtime's own lock, so a profiled call is the only one running), and a window opens only
// when no call of the engine that bypassed the gate is still running: calls after the window count
// themselves in and out (`inflight`, two atomic operations per call while the switch is on), and
// the call that opens a window waits for that count to reach 0. A call that began before the switch
// was set was never counted: each engine's first call after the switch runs as usual and lets such
// calls finish first (docs/layers.md says what remains).
//
// A call is run as usual, not profiled, and does not count towards the window when: it is nested
// in another traced call; torch.profiler records on its thread (the runtime's per-step
// RecordProfile would make the call fail: "Profiler is already enabled on this thread"); its
// stream is capturing a CUDA graph (a synchronous profile would break the capture). In the
// runtime's subgraph CUDA-graph mode an engine's calls replay a graph and report no layers, and
// turning profiling off would leave that graph on a freed context: the window ends unprofiled.
// Engines without the runtime's profiling methods, and engines that need native multi-device
// collectives (their communicator is bound to the context disable_profiling drops), are never
// profiled; the trace's metadata says why (report_json()).
//
// An engine run from Python (Torch-TensorRT's Python runtime, hook/python_calls.h) has the same window,
// gate and report, but no engine object here: its caller puts a TensorRT profiler of its own on the
// execution context for each profiled call, takes it off after the call and hands the layers it heard in
// (the "self-profiled" LayerCall). For it there is nothing to open or close, no folder and no file, and
// torch.profiler is no hazard (that runtime's profiling steps are not the C++ runtime's RecordProfile).
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "layers/runtime_profiling.h"

namespace trt_trace {
namespace layers {

struct LayerEngine;  // an engine's window (layer_window.cpp)

// What a profiled call hands back once it has run (the hook's CallScope facts; this folder lies below
// hook/ and knows no call scope).
struct ProfiledCall {
  uint64_t call_id = 0;
  uint16_t device = 0;
  int64_t enqueue_begin_ns = 0;  // the layers are laid end to end from here
  bool recorded = false;         // the call began in the current recording epoch: its records reach the trace
};

// One traced call while the switch is on, around the hook's call scope: made before the call (it may
// wait at the engine's gate and open its window), asked whether the call is profiled, told when a
// profiled call has run (finished), and gone after the call (the gate released, the call counted out).
class LayerCall {
 public:
  // engine: the call's engine object (the stack's last argument); nested: inside another traced call.
  LayerCall(uint32_t engine_id, const c10::IValue& engine, bool nested, uint16_t device);
  // A self-profiled call (an engine run from Python): the caller profiles it when profiled() says so. May
  // wait at the engine's gate: call it without holding a lock the engine's calls need (the GIL).
  LayerCall(uint32_t engine_id, bool nested, uint16_t device);
  ~LayerCall();
  LayerCall(const LayerCall&) = delete;
  LayerCall& operator=(const LayerCall&) = delete;

  bool profiled() const noexcept { return profiled_; }
  // After a profiled call (error: it threw): its layers from the runtime's file into the calling
  // thread's ring; the window closes after its last call. Never throws.
  void finished(const ProfiledCall& call, bool error) noexcept;
  // A self-profiled call's end: `layers` are what its profiler heard, in order (name, ns), written as
  // a runtime-profiled call's would be.
  void finished(const ProfiledCall& call, bool error, const std::vector<TracedLayer>& layers) noexcept;
  // A self-profiled call its caller could not profile after all: the window ends, `why` its note.
  void not_profiled(const std::string& why) noexcept;
  // Whether the engine's layer information (the inspector's JSON) is still wanted: a self-profiled
  // caller asks its engine for it once and hands it in (layer_information).
  bool wants_layer_information() const noexcept;
  void layer_information(std::string json) noexcept;

 private:
  LayerEngine* e_ = nullptr;
  uint32_t engine_id_ = 0;
  uint64_t generation_ = 0;
  bool counted_ = false;   // counted in the engine's `inflight` (past the gate) until the call ends
  bool profiled_ = false;
  std::unique_lock<std::timed_mutex> lock_;  // the engine's gate, held for the call while its window is not over
};

// N calls per engine from now on (a new generation: every engine's window starts afresh); 0: off,
// after closing every open window (waiting up to `wait_s` for a call in one to end) and removing
// the private folder. The session's `layers` setting (session/session_control.h).
void set_calls_per_engine(int64_t n, double wait_s = 5.0);
// A session starts: the report (report_json) starts afresh.
void new_session_report();
int64_t calls_per_engine();

// What the windows of this session did, per engine, as JSON: {"calls_per_engine": N, "engines": [
// {"engine_id", "engine", "profiled_calls", "failed_calls", "unreadable_calls", "not_recorded_calls",
// "skipped": {"nested", "torch_profiler", "capturing", "busy"}, "note", "layers": [...],
// "layer_information": "<the inspector's JSON text>"}]}; engines the switch never reached are not in it.
std::string report_json();

// In a forked child (from its Python fork handler, before any other call): the parent's gates and
// folder are not the child's; engines caught in an open window stop profiling, and never write into
// the parent's folder.
void after_fork_in_child() noexcept;

}  // namespace layers
}  // namespace trt_trace
