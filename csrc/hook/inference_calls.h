// The whole inference (docs/inference.md): one call of the model, an AOTInductor package runner's
// call or a traced module's `forward`, opened and closed from Python (trt_trace/runtime/inference.py,
// through ctypes: trt_trace/native/inference_calls.py) around the call. One Phase::kInference record
// on the calling thread's ring: the span, a call id from the thread's block (never an engine call's),
// the kind in `stream`, the error flag. The engine calls inside it are recorded as always; readers
// put them inside by thread and time.
//
// Only the outermost inference of a thread is recorded (a package called from a traced `forward`):
// one open inference per thread, the inner ones get no handle.
#pragma once

#include <cstdint>

#define TRT_TRACE_C_API extern "C" __attribute__((visibility("default")))

namespace trt_trace {
// Record::stream of an inference record: what was called. The values are the trace's.
enum class InferenceKind : uint32_t { kAoti = 1, kModule = 2 };
}  // namespace trt_trace

// Opens an inference on this thread: its handle (1), or 0 when nothing was opened (not recording, or an
// inference is open on this thread already); then no end is needed.
TRT_TRACE_C_API int32_t trt_trace_inference_begin();
// Closes the inference `handle` (nothing where it is 0), kind: InferenceKind, error != 0: the call raised.
// Written only where the session that was recording at its begin still is.
TRT_TRACE_C_API void trt_trace_inference_end(int32_t handle, int32_t kind, int32_t error);
