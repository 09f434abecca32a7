// The stand-in's mirror of Torch-TensorRT's own profiling path (the engine's enable_profiling /
// disable_profiling / set_profile_format / profile_path_prefix / get_engine_layer_info methods),
// as the real runtime's sources have it at v2.11.0 and v2.13.0 (docs/layers.md):
//
//   * enable_profiling(): a fresh per-layer profiler (sums and counts per layer name, in first-report
//     order), attached to the execution context; every later call runs its layers timed (TensorRT
//     then reports each layer once per call, synchronously) and, under the engine's lock, writes a
//     Chrome trace of its input setup, output setup and enqueue (torch's legacy RecordProfile, as the
//     runtime does), then the profiler's layer trace and the inspector's layer information, each a
//     file under profile_path_prefix named after the engine. Like the real methods, neither takes
//     the engine's lock: the stand-in counts a toggle made while a call of the engine runs
//     (`unsafe_toggles`), which in the real runtime frees a profiler or a context in use.
//   * disable_profiling(): 2.11 drops the profiler and re-creates the execution context at once
//     with the default (static) allocation strategy, also for an engine of the Dynamic strategy;
//     2.13 and 2.14 drop it and create the next one lazily, with the engine's strategy, at the next
//     call. They also make none in the constructor: the first call, or enable_profiling(), does.
//   * update_runtime_settings() (2.13+): new strategies or another runtime cache handle drop the
//     context (lazily made again); the same settings change nothing. set_active_profile() (2.14)
//     makes the context if none is live and loads the profile in it; neither touches the profiler,
//     so a profiler attached before a drop is not on the next context.
//     A context created afresh has no profiler (2.13 also drops the context when the allocation
//     strategy changes: profiling stays "on" but reports nothing until enable_profiling() again).
//
// The stand-in's "context" is a record of what the real one would be: how many were created, and
// whether the live one is user-managed (Dynamic strategy: the per-call workspace is bound to it; a
// workspace bound to a static context is what TensorRT reports as an error: counted).
#pragma once

#include <string>

#include "standin/layer_profiler.h"
#include "standin/standin_engine.h"

namespace trt_standin {

// The runtime's profile files of one engine: <prefix>/<engine name><suffix>.
std::string profile_file(const StandInEngine& engine, const char* suffix);

// Writes the profiler's layer trace as the runtime does (its text layout, six significant digits).
void write_layer_trace(const std::string& path, const std::string& engine_name, const LayerProfiler& profiler);

// The engine inspector's layer information at kLAYER_NAMES_ONLY: {"Layers": [...], "Bindings": [...]}.
std::string layer_information(const StandInEngine& engine);

// The torchbind methods (registered in standin_registration.cpp).
void enable_profiling(StandInEngine& engine);
void disable_profiling(StandInEngine& engine);
void set_profile_format(StandInEngine& engine, const std::string& format);
void use_dynamically_allocated_resources(StandInEngine& engine, bool dynamic);
void update_runtime_settings(StandInEngine& engine, int64_t kernel_strategy, int64_t cuda_graph_strategy,
                             c10::intrusive_ptr<RuntimeCacheHandle> runtime_cache);
void set_active_profile(StandInEngine& engine, int64_t profile);

// The execution context a call uses: created here where none is live (2.13's lazy creation).
void ensure_context(StandInEngine& engine);

}  // namespace trt_standin
