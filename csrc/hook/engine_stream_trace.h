// Spans on the engine's own stream, seen through c10's GPU trace.
//
// Torch-TensorRT 2.11 runs every engine on a pool stream of the engine's and
// hands work over with CUDA events (caller stream -> engine stream -> caller
// stream). A span on the caller's stream then also holds both hand-offs
// (several us of GPU time: a 10 us engine measured 1.4x). The runtime makes
// those hand-offs with c10's CUDAEvent, which reports every record and wait to
// c10's GPU trace (c10::impl::GPUTrace, the hook torch.cuda._sanitizer uses).
// trt_trace installs a trace of its own there, chained to the one installed
// before it, that only inside a traced call with a start event records a start
// event on the stream the runtime makes wait for the caller's (right after that
// wait) and an end event on it at each later event record there (right after
// the engine's work). When both exist, the call's span is those two.
//
// c10's trace interface is a vtable of PyInterpreter methods. The trace is a
// copy of the installed vtable (or of c10's no-op one) with the record and
// wait entries replaced by functions that look, then call the entries they
// replaced: copying, not deriving, keeps this independent of the interface's
// other methods, which change between torch versions. If another tool replaces
// c10's trace later (torch.cuda._sanitizer), spans quietly go back to the
// caller's stream; engine_stream_trace_installed() tells.
#pragma once

#include <cstdint>

#include "common/switch.h"
#include "hook/gpu_call_events.h"

namespace trt_trace {
namespace gpu {

// Whether spans may move to the engine's stream (Settings.engine_stream_spans,
// TRT_TRACE_ENGINE_STREAM); read when a traced call begins.
extern Switch engine_stream_spans;

// The call's GPU start event is recorded: watch the runtime's event hand-offs on this thread until
// stop_watching (installs the trace on first use).
// False: engine-stream spans are switched off, nothing is watched.
bool watch_engine_stream(CallEvents* ev, uint16_t device) noexcept;
void stop_watching(CallEvents* ev) noexcept;

// Whether c10's GPU trace reports to trt_trace (installed at the first traced CUDA call).
bool engine_stream_trace_installed() noexcept;

}  // namespace gpu
}  // namespace trt_trace
