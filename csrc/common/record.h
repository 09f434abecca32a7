// The fixed-size event record that travels from the hook, through the ring
// buffers, to the Python drainer.
//
// 40 bytes, no pointers, no strings: engine names are interned once in the
// EngineRegistry and referred to by id. The Python side reads batches of these
// as a numpy structured array (trt_trace/schema/records.py mirrors this layout; a test
// checks both agree).
#pragma once

#include <cstdint>

#include "common/phases.h"

namespace trt_trace {

// What a record measures (the public phases: common/phases.h). kCall spans the whole execute_engine
// call; the four host phases partition it (docs/phase-model.md). kGpu: the device execution span (CUDA
// events), resolved by the drainer: the engine's own work. kCallerWait: where the engine runs on a stream
// of its own (Torch-TensorRT 2.11 always), how long the caller's stream waited for the call, from reaching
// it to being released, hand-offs included; resolved with the call's kGpu span, which it contains
// (hook/gpu_events.h).
enum class Phase : uint8_t {
#define TRT_TRACE_PHASE_ENUM(Name, text) k##Name,
  TRT_TRACE_PUBLIC_PHASES(TRT_TRACE_PHASE_ENUM)
#undef TRT_TRACE_PHASE_ENUM
  // Internal, never leave C++: a call's two CUDA events (begin_ns/end_ns hold
  // the cudaEvent_t handles) waiting in the ring until the drainer resolves
  // them into a kGpu record (kGpuPending) or a kCallerWait one.
  kGpuPending,
  kCallerWaitPending,
  // Internal, never leaves C++: the slot after a call's kCall record in the
  // ring, holding its inner phase boundaries; the drainer expands the pair
  // into the call and its phase records (buffer/call_layout.h).
  kPhaseBounds,
  // One layer of a call profiled per layer (TRT_TRACE_LAYERS, csrc/layers): begin/end laid out from
  // the call's enqueue begin, the duration TensorRT measured; `stream` holds the layer's interned
  // name id (csrc/layers/layer_names.h). A record kind of its own past the public phases: it reaches
  // the trace, but through its own formatter (csrc/ops/layer_format.cpp; the phase formatters skip
  // it) and its own tracks (trt_trace/io/tracks.py), never as a phase of the table.
  kLayer,
  // One inference (docs/inference.md): a call of an AOTInductor package's runner or of a traced module's
  // `forward`, opened and closed from Python (hook/inference_calls.h); engine_id 0, `stream` its kind
  // (InferenceKind). Past the public phases like kLayer: its own tracks, never a phase of the table.
  kInference,
};
// The values are the trace's (and trt_trace/schema/phases.py's): they must not move.
static_assert(static_cast<int>(Phase::kCall) == 0 && static_cast<int>(Phase::kEnqueue) == 4 &&
                  static_cast<int>(Phase::kGpu) == 5 && static_cast<int>(Phase::kCallerWait) == 6 &&
                  static_cast<int>(Phase::kGpuPending) == 7 && static_cast<int>(Phase::kPhaseBounds) == 9 &&
                  static_cast<int>(Phase::kLayer) == 10 && static_cast<int>(Phase::kInference) == 11,
              "Record.phase values are part of the trace format");
constexpr uint8_t kLastPublicPhase = static_cast<uint8_t>(Phase::kCallerWait);  // later values stay in C++
static_assert(kLastPublicPhase + 1 == kNumPublicPhases, "every public phase has a name");

// GPU-side records (spans on a GPU track): a call's engine work and its caller-stream wait.
inline bool is_gpu_span(uint8_t phase) noexcept {
  return phase == static_cast<uint8_t>(Phase::kGpu) || phase == static_cast<uint8_t>(Phase::kCallerWait);
}

// Bits of Record::flags.
enum RecordFlags : uint8_t {
  kFlagError = 1 << 0,     // the engine call threw; its slices were closed at the throw
  kFlagNested = 1 << 1,    // an execute_engine call made from inside another traced call
  kFlagCaptured = 1 << 2,  // issued while its stream was capturing a CUDA graph
  kFlagEngineStream = 1 << 3,  // GPU records only: the span is on the engine's own stream (hook/engine_stream_trace.h)
};

struct Record {
  int64_t begin_ns;    // CLOCK_MONOTONIC
  int64_t end_ns;      // CLOCK_MONOTONIC, >= begin_ns
  uint64_t call_id;    // process-wide, unique per traced call (also the NVTX payload)
  uint32_t engine_id;  // EngineRegistry id, >= 1
  uint32_t thread_id;  // OS thread id (gettid) of the calling thread
  uint8_t phase;       // Phase
  uint8_t flags;       // RecordFlags
  uint16_t device;     // CUDA device index, 0xffff when on the CPU
  uint32_t stream;     // small stream id for GPU records, 0 otherwise
};
static_assert(sizeof(Record) == 40, "Record layout is shared with trt_trace/schema/records.py");

constexpr uint16_t kNoDevice = 0xffff;

// The one rule both trace formats draw their launch flows by: an enqueue slice of a CUDA call
// launched GPU work (drawn to the call's GPU slice), unless the call failed or was captured into a
// CUDA graph (nothing ran then).
inline bool launches_gpu(const Record& r) noexcept {
  return r.phase == static_cast<uint8_t>(Phase::kEnqueue) && r.device != kNoDevice &&
         !(r.flags & (kFlagCaptured | kFlagError));
}

}  // namespace trt_trace
