// The Python runtime's entry into the hot path: a call of an engine run from Python (Torch-TensorRT's
// PythonTorchTensorRTModule, or the Python engine behind the Python-registered tensorrt::execute_engine of
// 2.13 and later), which never passes the BackendSelect hook as a traced call, is opened, marked and closed
// from Python (trt_trace/runtime/python_runtime.py, through ctypes: trt_trace/native/python_calls.py).
//
// Each call is a CallScope like the hook's (same records, ring, counters, GPU events, NVTX, profiler
// scopes), made with the op observer off: its phase boundaries are the marks the Python side sets at
// the runtime's input set-up, output set-up and launch section (CallScope::mark, docs/phase-model.md).
// The scopes live in a fixed per-thread stack: no allocation per call.
//
// Plain C functions, exported from the tracer library: a ctypes call costs far less than a torch op's.
#pragma once

#include <cstdint>

#define TRT_TRACE_C_API extern "C" __attribute__((visibility("default")))

// A new engine id (>= 1) for an engine known by name only (a Python engine object: the Python side keeps
// the id on the object); 0 for a null name. Not on the hot path: once per engine object.
TRT_TRACE_C_API uint32_t trt_trace_py_engine(const char* name);
// Opens a call of `engine_id` on this thread (device: the inputs' CUDA device, -1: none). Returns the
// handle to close it with (>= 1), or 0 when nothing was opened (tracing off and no profiler recording,
// or calls nested deeper than the stack holds): then no mark or end is needed. layered = 0 and per-layer
// timing switched on (TRT_TRACE_LAYERS): -1, nothing opened; the caller takes the layered way
// (trt_trace_py_layers_open first, then this with layered = 1).
TRT_TRACE_C_API int32_t trt_trace_py_call_begin(uint32_t engine_id, int32_t device, int32_t layered);
// A phase boundary (CallScope::Mark's value) of this thread's innermost open Python call; nothing when
// none is open or a hook-traced call is open inside it.
TRT_TRACE_C_API void trt_trace_py_call_mark(int32_t mark);
// Closes the call `handle` (and any call opened inside it and left open, as errors). error != 0: the
// runtime raised.
TRT_TRACE_C_API void trt_trace_py_call_end(int32_t handle, int32_t error);
// Per-layer timing of a Python-runtime call (docs/layers.md, "The Python runtime"): the engine's layer
// window (layers/layer_window.h) decides before the call is opened whether its caller profiles it.
// May wait at the engine's gate: call it with the GIL released. Returns -1: nothing made (nested too
// deep), no close needed; 0: not profiled; 1: profiled (the caller sets its profiler on the execution
// context); 2: profiled, and the engine's layer information is wanted (handed in at the close).
TRT_TRACE_C_API int32_t trt_trace_py_layers_open(uint32_t engine_id, int32_t device);
// Closes this thread's innermost layer decision, after trt_trace_py_call_end of its call. outcome 0: the
// call returned, its profiler heard `n` layers: `names` holds them NUL-terminated one after another, `ns`
// their times; 1: the call raised; 2: the caller could not profile it (`note` says why: the window ends).
// info: the inspector's JSON, or null.
TRT_TRACE_C_API void trt_trace_py_layers_close(int32_t outcome, const char* note, const char* names,
                                               const int64_t* ns, int32_t n, const char* info);
// How many Python calls this thread has open (for tests: 0 after every call).
TRT_TRACE_C_API int32_t trt_trace_py_calls_open();
