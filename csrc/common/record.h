// The fixed-size records that travel from the hook, through the ring buffers, to
// the writers: one 40-byte slot per record, of one of four named kinds (below).
//
// No pointers into user memory, no strings: engine and layer names are interned
// once and referred to by id. Python reads drained batches as numpy structured
// arrays (trt_trace/schema/records.py mirrors every kind; a test checks both agree).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

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
  // Internal, never leave C++: a call's two CUDA events (a GpuPendingRecord) waiting in the ring until the
  // drainer resolves them into a kGpu record (kGpuPending) or a kCallerWait one.
  kGpuPending,
  kCallerWaitPending,
  // Internal, never leaves C++: the slots after a call's kCall record in the ring (PhaseBoundsRecords),
  // holding its inner phase boundaries; the drainer expands the call's slots into the call and its phase
  // records (buffer/call_layout.h).
  kPhaseBounds,
  // One layer of a call profiled per layer (TRT_TRACE_LAYERS, csrc/layers; a LayerRecord). A record kind of
  // its own past the public phases: it reaches the trace, but through its own formatter
  // (csrc/ops/layer_format.cpp; the phase formatters skip it) and its own tracks (trt_trace/io/tracks.py),
  // never as a phase of the table.
  kLayer,
  // One inference (docs/inference.md): a call of an AOTInductor package's runner or of a traced module's
  // `forward`, opened and closed from Python (hook/inference_calls.h); engine_id 0, `stream` its kind
  // (InferenceKind). Past the public phases like kLayer: its own tracks, never a phase of the table.
  kInference,
};
// The values follow from the phase list (common/phases.h): the call, its host phases, its GPU spans, then the
// kinds that stay in C++ or have tracks of their own. Files hold the phases' names, never these values;
// trt_trace/schema/phases.py derives the same values from its twin of the list (LAYER_RECORD,
// INFERENCE_RECORD; tests/test_phase_model.py compares the two).
static_assert(static_cast<int>(Phase::kCall) == 0 && static_cast<int>(Phase::kGpu) == kNumHostPhases + 1 &&
                  static_cast<int>(Phase::kCallerWait) == kNumPublicPhases - 1 &&
                  static_cast<int>(Phase::kGpuPending) == kNumPublicPhases &&
                  static_cast<int>(Phase::kPhaseBounds) == kNumPublicPhases + 2 &&
                  static_cast<int>(Phase::kLayer) == kNumPublicPhases + 3 &&
                  static_cast<int>(Phase::kInference) == kNumPublicPhases + 4,
              "Record.phase: the public phases in list order, then the other kinds");
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

// Record kinds. Every slot of a ring, and every record a drain hands out, is 40 bytes, no pointers into
// C++ memory, no strings (engine and layer names are interned and referred to by id), with its kind
// (the Phase value above) at byte 32. What the other bytes mean depends on the kind, and each kind has
// its own struct that names them; no field carries another meaning under another kind's name:
//
//   Record             kCall .. kCallerWait: a span of the trace (a call, its host phases, its GPU spans)
//   PhaseBoundsRecord  kPhaseBounds: up to three of a call's inner phase boundaries (the slots after its kCall)
//   GpuPendingRecord   kGpuPending, kCallerWaitPending: a call's two CUDA events, waiting for the drainer
//   LayerRecord        kLayer: one layer of a call profiled per layer
//
// Bytes 24..36 (engine, thread, kind, flags, device) mean the same in every kind. The fields of each
// kind are listed once below, F(type, name): the structs are made from these lists, the layout op
// (`_record_layout`, ops/test_ops.cpp) exports each kind's names and offsets from them, and
// trt_trace/schema/records.py, which defines the same kinds as numpy dtypes, is checked against that
// export (tests/test_ring_buffer.py). Only Record and LayerRecord leave C++ (the drain expands the
// bounds and resolves the pending events).
#define TRT_TRACE_RECORD_SHARED_FIELDS(F) \
  F(uint32_t, engine_id) /* EngineRegistry id, >= 1 */                  \
  F(uint32_t, thread_id) /* OS thread id (gettid) of the calling thread */ \
  F(uint8_t, phase)      /* the kind: Phase */                            \
  F(uint8_t, flags)      /* RecordFlags */                                \
  F(uint16_t, device)    /* CUDA device index, kNoDevice on the CPU */

#define TRT_TRACE_SPAN_RECORD_FIELDS(F)                                                  \
  F(int64_t, begin_ns) /* CLOCK_MONOTONIC */                                            \
  F(int64_t, end_ns)   /* CLOCK_MONOTONIC, >= begin_ns */                               \
  F(uint64_t, call_id) /* process-wide, unique per traced call (also the NVTX payload) */ \
  TRT_TRACE_RECORD_SHARED_FIELDS(F)                                                     \
  F(uint32_t, stream) /* small stream id for GPU records, 0 otherwise */

// A call's inner bounds (phases.h kNumInnerBounds: where host phase 1, 2, ... begins; phase 0 begins with
// the call, the last ends with it), three to a slot, in as many slots as they need (buffer/call_layout.h);
// bound k of the call is bound k % 3 of its slot k / 3 (0 past the last).
#define TRT_TRACE_PHASE_BOUNDS_RECORD_FIELDS(F)                                   \
  F(int64_t, bound0_ns) /* where host phase 3s + 1 begins (s: the slot's index) */ \
  F(int64_t, bound1_ns) /* where host phase 3s + 2 begins */                      \
  F(int64_t, bound2_ns) /* where host phase 3s + 3 begins */                      \
  TRT_TRACE_RECORD_SHARED_FIELDS(F)                                             \
  F(uint32_t, unused)

#define TRT_TRACE_GPU_PENDING_RECORD_FIELDS(F)                                     \
  F(uint64_t, start_event) /* the cudaEvent_t recorded where the span starts */    \
  F(uint64_t, stop_event)  /* the cudaEvent_t recorded where it ends */            \
  F(uint64_t, call_id)                                                             \
  TRT_TRACE_RECORD_SHARED_FIELDS(F)                                                \
  F(uint32_t, stream) /* small id of the stream the events were recorded on */

#define TRT_TRACE_LAYER_RECORD_FIELDS(F)                                                         \
  F(int64_t, begin_ns) /* laid end to end from the call's enqueue begin */                       \
  F(int64_t, end_ns)   /* begin_ns + the layer's time as TensorRT measured it */                 \
  F(uint64_t, call_id) /* the profiled call's */                                                 \
  TRT_TRACE_RECORD_SHARED_FIELDS(F)                                                            \
  F(uint32_t, name_id) /* the layer's interned name (csrc/layers/layer_names.h) */

#define TRT_TRACE_INFERENCE_RECORD_FIELDS(F)                                                     \
  F(int64_t, begin_ns) /* the model call's (a package runner's, a wrapped forward's) */          \
  F(int64_t, end_ns)                                                                             \
  F(uint64_t, call_id) /* the thread's inference count */                                        \
  TRT_TRACE_RECORD_SHARED_FIELDS(F)                                                            \
  F(uint32_t, kind) /* what was called (format/inference_events.h: inference_kind_name) */

// X(Struct, FIELDS, "numpy mirror's name") of each kind: the layout export walks this list.
#define TRT_TRACE_RECORD_KINDS(X)                                 \
  X(Record, TRT_TRACE_SPAN_RECORD_FIELDS, "span")                 \
  X(PhaseBoundsRecord, TRT_TRACE_PHASE_BOUNDS_RECORD_FIELDS, "phase_bounds") \
  X(GpuPendingRecord, TRT_TRACE_GPU_PENDING_RECORD_FIELDS, "gpu_pending")    \
  X(LayerRecord, TRT_TRACE_LAYER_RECORD_FIELDS, "layer")                     \
  X(InferenceRecord, TRT_TRACE_INFERENCE_RECORD_FIELDS, "inference")

#define TRT_TRACE_DECLARE_FIELD(type, name) type name;
#define TRT_TRACE_DECLARE_RECORD_KIND(Struct, FIELDS, py) \
  struct Struct {                                        \
    FIELDS(TRT_TRACE_DECLARE_FIELD)                      \
  };
TRT_TRACE_RECORD_KINDS(TRT_TRACE_DECLARE_RECORD_KIND)
#undef TRT_TRACE_DECLARE_RECORD_KIND
#undef TRT_TRACE_DECLARE_FIELD

// Every kind fills the same 40 bytes, its tag and shared fields where every other kind has them.
#define TRT_TRACE_CHECK_RECORD_KIND(Struct, FIELDS, py)                                                    \
  static_assert(sizeof(Struct) == 40 && alignof(Struct) == 8, #Struct ": 40 bytes, shared with records.py"); \
  static_assert(offsetof(Struct, engine_id) == 24 && offsetof(Struct, thread_id) == 28 &&                  \
                    offsetof(Struct, phase) == 32 && offsetof(Struct, flags) == 33 &&                     \
                    offsetof(Struct, device) == 34,                                                       \
                #Struct ": the shared fields at the same offsets in every kind");
TRT_TRACE_RECORD_KINDS(TRT_TRACE_CHECK_RECORD_KIND)
#undef TRT_TRACE_CHECK_RECORD_KIND

// One ring slot seen as its kind: the tag and a union of the named kinds (RecordRing stores these).
// Written through the helpers below, one per kind; read as the kind its tag says (as<>()).
union RecordSlot {
  Record span;
  PhaseBoundsRecord bounds;
  GpuPendingRecord gpu_pending;
  LayerRecord layer;
  InferenceRecord inference;
  uint8_t kind() const noexcept { return span.phase; }
};
static_assert(sizeof(RecordSlot) == 40, "a slot is one record");

// A record of one kind seen as another of the 40-byte kinds (a drained batch is an array of Record
// holding spans and layers; a ring slot's kind is read from its tag first). The copy costs nothing: the
// compiler reads the fields in place.
template <typename Kind, typename From>
inline Kind as(const From& r) noexcept {
  static_assert(sizeof(Kind) == sizeof(From), "record kinds are all 40 bytes");
  Kind k;
  std::memcpy(&k, &r, sizeof k);
  return k;
}
template <typename Kind, typename From>
inline void store(From* slot, const Kind& k) noexcept {
  static_assert(sizeof(Kind) == sizeof(From), "record kinds are all 40 bytes");
  std::memcpy(static_cast<void*>(slot), &k, sizeof k);
}

constexpr uint16_t kNoDevice = 0xffff;

// The one writing helper per kind: every slot a producer writes is made by one of these.
inline Record span_record(Phase phase, int64_t begin_ns, int64_t end_ns, uint64_t call_id, uint32_t engine_id,
                          uint32_t thread_id, uint8_t flags, uint16_t device, uint32_t stream) noexcept {
  return Record{begin_ns, end_ns, call_id, engine_id, thread_id, static_cast<uint8_t>(phase), flags, device, stream};
}
// The call's bounds slot s of kPhaseBoundsSlots (buffer/call_layout.h), from all its inner bounds.
constexpr int kBoundsPerSlot = 3;
constexpr int kPhaseBoundsSlots = (kNumInnerBounds + kBoundsPerSlot - 1) / kBoundsPerSlot;
inline PhaseBoundsRecord phase_bounds_record(const std::array<int64_t, kNumInnerBounds>& bounds, int s, uint32_t engine_id,
                                             uint32_t thread_id, uint8_t flags, uint16_t device) noexcept {
  const auto at = [&](int k) { return kBoundsPerSlot * s + k < kNumInnerBounds ? bounds[kBoundsPerSlot * s + k] : 0; };
  return PhaseBoundsRecord{at(0), at(1), at(2), engine_id, thread_id,
                           static_cast<uint8_t>(Phase::kPhaseBounds), flags, device, 0};
}
// kind: kGpuPending or kCallerWaitPending.
inline GpuPendingRecord gpu_pending_record(Phase kind, void* start_event, void* stop_event, uint64_t call_id,
                                           uint32_t engine_id, uint32_t thread_id, uint8_t flags, uint16_t device,
                                           uint32_t stream) noexcept {
  return GpuPendingRecord{reinterpret_cast<uintptr_t>(start_event), reinterpret_cast<uintptr_t>(stop_event), call_id,
                          engine_id, thread_id, static_cast<uint8_t>(kind), flags, device, stream};
}
inline LayerRecord layer_record(int64_t begin_ns, int64_t end_ns, uint64_t call_id, uint32_t engine_id,
                                uint32_t thread_id, uint16_t device, uint32_t name_id) noexcept {
  return LayerRecord{begin_ns, end_ns, call_id, engine_id, thread_id, static_cast<uint8_t>(Phase::kLayer), 0, device,
                     name_id};
}
inline InferenceRecord inference_record(int64_t begin_ns, int64_t end_ns, uint64_t call_id, uint32_t thread_id,
                                        uint8_t flags, uint32_t kind) noexcept {
  return InferenceRecord{begin_ns, end_ns, call_id, 0, thread_id, static_cast<uint8_t>(Phase::kInference), flags,
                         kNoDevice, kind};
}
inline void* event_handle(uint64_t field) noexcept { return reinterpret_cast<void*>(static_cast<uintptr_t>(field)); }


// The one rule both trace formats draw their launch flows by: an enqueue slice of a CUDA call
// launched GPU work (drawn to the call's GPU slice), unless the call failed or was captured into a
// CUDA graph (nothing ran then).
inline bool launches_gpu(const Record& r) noexcept {
  return r.phase == static_cast<uint8_t>(Phase::kEnqueue) && r.device != kNoDevice &&
         !(r.flags & (kFlagCaptured | kFlagError));
}

}  // namespace trt_trace
