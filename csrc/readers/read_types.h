// What the torch-free reader library (libtrt_trace_read: trt_trace/io/readers/native.py loads it with
// ctypes) hands to Python: slices parsed from a trace, and whole calls joined from them. Both are
// plain structs that numpy views as structured arrays (trt_trace/io/readers/columns.py mirrors them;
// tt_layout() lets a test compare the two).
#pragma once

#include <cstdint>

#include "common/record.h"

#define TT_API extern "C" __attribute__((visibility("default")))

namespace trt_trace {

// Reader-only bits of Slice::rec.flags, above RecordFlags: a Perfetto slice that starts or ends a
// launch flow (its flow_ids / terminating_flow_ids name its call).
constexpr uint8_t kFlagFlowOut = 1 << 6;
constexpr uint8_t kFlagFlowIn = 1 << 7;

enum SliceKind : uint8_t {
  kSliceX = 0,      // a slice (JSON X event, Perfetto begin/end pair): rec holds it
  kFlowStart = 1,   // JSON "s": rec.call_id = flow id, rec.begin_ns = ts
  kFlowEnd = 2,     // JSON "f"
};

// One parsed event. The first 40 bytes are a Record, so the writers' encoders take it as it is.
struct Slice {
  Record rec;
  uint32_t pid;       // JSON pid; Perfetto: the process descriptor's pid
  uint32_t tid;       // JSON tid; Perfetto: the tid the JSON writer gives the slice's lane
  uint32_t name_off;  // JSON: the engine name's string literal in the parsed buffer (0, 0: none)
  uint32_t name_len;
  uint8_t kind;       // SliceKind
  uint8_t has_device; // the event names a device (JSON: a "device" arg; the call is a CUDA call)
  uint8_t pad[6];
};
static_assert(sizeof(Slice) == 64, "Slice layout is shared with trt_trace/io/readers/columns.py");

// Columns of Call::ns, as trace_format.DURATIONS: the call, its host phases (common/phases.h), its GPU span.
enum CallColumn : int {
  kNsTotal = 0,
#define TRT_TRACE_NS_PHASE(Name, text) kNs##Name,
  TRT_TRACE_HOST_PHASES(TRT_TRACE_NS_PHASE)  // kNsWorkspace ...
#undef TRT_TRACE_NS_PHASE
  kNsGpu,
  kNumNs,
};
constexpr int kNsFirstHostPhase = kNsTotal + 1;

// Bits of Call::flags.
enum CallFlags : uint8_t {
  kCallError = 1 << 0,
  kCallNested = 1 << 1,
  kCallCaptured = 1 << 2,
  kCallOnCuda = 1 << 3,        // the call names a CUDA device
  kCallGpuEngineStream = 1 << 4,  // its GPU span is on the engine's own stream
};

// A whole call: its call slice and host phases add up, GPU span and caller-stream wait attached.
struct Call {
  int64_t begin_ns;
  int64_t ns[kNumNs];  // kNsGpu: -1 where the call has no GPU span
  int64_t wait_ns;     // caller stream wait, -1 where none
  uint64_t call_id;
  uint32_t pid;
  uint32_t engine_id;
  uint32_t thread_id;
  uint16_t device;
  uint8_t flags;  // CallFlags
  uint8_t pad;
};
static_assert(sizeof(Call) == 40 + 8 * kNumNs, "Call layout is shared with trt_trace/io/readers/columns.py");

}  // namespace trt_trace
