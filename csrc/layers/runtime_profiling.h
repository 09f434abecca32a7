// Torch-TensorRT's own per-layer profiling, reached through the engine object's public torchbind
// surface (docs/layers.md has the runtime's behaviour, read from its sources at v2.11.0 and v2.13.0):
//
//   enable_profiling()        a fresh TRTEngineProfiler (an IProfiler) on the execution context:
//                             every later call of the engine is synchronous (TensorRT reports each
//                             layer's time, once per layer, before enqueueV3 returns), and writes
//                             its files under profile_path_prefix, among them
//                             <prefix>/<engine name>_engine_execution_profile.trace: each layer's
//                             time summed over the calls since enable_profiling()
//   disable_profiling()       synchronises the device, drops the profiler and the context (2.11:
//                             re-created at once with the static strategy; 2.13: lazily)
//   profile_path_prefix       read-write; the system's temporary directory by default
//   get_engine_layer_info()   the engine inspector's JSON
//   use_dynamically_allocated_resources(bool)   re-makes the context for a new strategy
//
// None of these take the engine's lock: csrc/layers/layer_window.h keeps every other call of the
// engine out while trt_trace uses them. Everything here is called only inside a layer window
// (a few calls per engine), never on the hot path.
#pragma once

#include <ATen/core/ivalue.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trt_trace {
namespace layers {

// The engine's torchbind method `name` (nullptr: the runtime has none).
bool has_method(const c10::IValue& engine, const char* name);
bool has_property(const c10::IValue& engine, const char* name);
// Calls method `name` with `args` after the object; throws what the method throws.
c10::IValue call_method(const c10::IValue& engine, const char* name, std::vector<c10::IValue> args = {});
std::string get_string_property(const c10::IValue& engine, const char* name);
void set_property(const c10::IValue& engine, const char* name, c10::IValue value);

// What the engine's __str__ says that changes how trt_trace may toggle its profiling.
struct EngineFacts {
  bool dynamic = false;             // "Resource Allocation Strategy: Dynamic"
  bool native_multidevice = false;  // "Multi-Device Engine: 1" (2.12 and later)
};
EngineFacts engine_facts(const c10::IValue& engine);

// The runtime's file of an engine's layer times: <folder>/<engine name>_engine_execution_profile.trace.
std::string layer_trace_path(const std::string& folder, const std::string& engine_name);

// One layer of the runtime's layer trace: its name as TensorRT reported it, its time in ns.
struct TracedLayer {
  std::string_view name;  // a view into the parsed text
  int64_t ns;
};
// Parses the runtime's layer trace (TRTEngineProfiler's dump: "perfetto" format, `dur` in us, or
// "trex", `timeMs`). The runtime writes one field per line and does not escape names, so a name is
// the rest of its line between `"name": "` and the last `",`. False: not such a file.
bool parse_layer_trace(std::string_view text, std::vector<TracedLayer>* out);

// tensorrt::get_cudagraphs_mode() (0 standard, 1 subgraph CUDA graphs, 2 whole graph); -1 where
// the runtime has no such op.
int64_t cudagraphs_mode();

}  // namespace layers
}  // namespace trt_trace
