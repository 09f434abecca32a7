#include "standin/standin_profiling.h"

#include <fstream>
#include <sstream>

#include "common/json_text.h"
#include "common/posix_files.h"
#include "standin/standin_engine.h"

namespace trt_standin {

void LayerProfiler::report(const std::string& name, float ms) {
  auto [it, fresh] = profile.try_emplace(name, 0.f, 0);
  it->second.first += ms;
  it->second.second += 1;
  if (fresh) names.push_back(name);
}

std::string profile_file(const StandInEngine& engine, const char* suffix) {
  return trt_trace::files::join(engine.profile_path_prefix, engine.name + suffix);
}

// The runtime's layout: an array of one object per layer, a field per line; names are written as
// they are (no escaping); numbers with the stream's default six significant digits. perfetto: the
// layers laid end to end from 0 (`ts` is the running sum, not a time), durations in microseconds;
// trex: total and average in ms and the share of all layers' time.
void write_layer_trace(const std::string& path, const std::string& engine_name, const LayerProfiler& p) {
  std::stringstream out;
  out << "[" << std::endl;
  double total = 0.0, running = 0.0;
  for (const auto& name : p.names) total += p.profile.at(name).first;
  for (const auto& name : p.names) {
    const auto& [time, count] = p.profile.at(name);
    out << "  {" << std::endl;
    out << "    \"name\": \"" << name << "\"," << std::endl;
    if (!p.trex) {
      out << "    \"ph\": \"X\"," << std::endl;
      out << "    \"ts\": " << running * 1000 << "," << std::endl;
      out << "    \"dur\": " << time * 1000 << "," << std::endl;
      out << "    \"tid\": 1," << std::endl;
      out << "    \"pid\": \"" << engine_name << " Engine Execution\"," << std::endl;
      out << "    \"args\": {}" << std::endl;
    } else {
      out << "    \"timeMs\": " << time << "," << std::endl;
      out << "    \"averageMs\": " << time / count << "," << std::endl;
      out << "    \"percentage\": " << (time * 100.0 / total) << std::endl;
    }
    out << "  }," << std::endl;
    running += time;
  }
  out.seekp(-2, std::stringstream::cur);  // over the last ",\n" (with no layer: over "[\n")
  out << "\n]" << std::endl;
  std::ofstream(path) << out.str();
}

namespace {

using trt_trace::json_string;

// A call of enable/disable_profiling while a call of the engine holds its lock: in the real runtime
// this replaces a profiler or a context the call is using.
void note_unsafe_toggle(StandInEngine& engine) {
  if (engine.mu.try_lock()) {
    engine.mu.unlock();
  } else {
    engine.unsafe_toggles.fetch_add(1, std::memory_order_relaxed);
  }
}

void create_context(StandInEngine& engine, bool user_managed) {
  engine.context_live = true;
  engine.context_user_managed = user_managed;
  engine.profiler_on_context = false;  // a fresh context has no profiler
  ++engine.contexts_created;
}

}  // namespace

std::string layer_information(const StandInEngine& engine) {
  std::string out = "{\"Layers\": [";
  for (size_t i = 0; i < engine.params.layers.size(); ++i) {
    out += (i ? ", " : "") + json_string(engine.params.layers[i].name);
  }
  out += "], \"Bindings\": [";
  bool first = true;
  for (const auto* names : {&engine.in_binding_names, &engine.out_binding_names}) {
    for (const auto& n : *names) {
      out += (first ? "" : ", ") + json_string(n);
      first = false;
    }
  }
  return out + "]}";
}

void ensure_context(StandInEngine& engine) {
  if (!engine.context_live) create_context(engine, engine.dynamic_allocation);
}

void enable_profiling(StandInEngine& engine) {
  note_unsafe_toggle(engine);
  ensure_context(engine);  // 2.13+: exec_ctx() makes one if none is live (2.11 always has one)
  engine.profile_execution = true;
  engine.profiler = std::make_unique<LayerProfiler>();
  engine.profiler_on_context = true;
}

void disable_profiling(StandInEngine& engine) {
  note_unsafe_toggle(engine);  // (the real one first synchronises the device)
  engine.profile_execution = false;
  engine.profiler.reset();
  if (traits(engine.version).lazy_context) {  // 2.13+: the next call makes a context lazily
    engine.context_live = false;
    engine.profiler_on_context = false;
  } else {  // 2.11: a new context now, with the default (static) strategy whatever the engine's
    create_context(engine, /*user_managed=*/false);
  }
}

void set_profile_format(StandInEngine& engine, const std::string& format) {
  TORCH_CHECK(format == "trex" || format == "perfetto", "Invalid profile format: ", format);
  TORCH_CHECK(engine.profiler != nullptr, "set_profile_format before enable_profiling: Torch-TensorRT "
              "dereferences its profiler, which is null then (the real runtime crashes here)");
  engine.profiler->trex = format == "trex";
}

void use_dynamically_allocated_resources(StandInEngine& engine, bool dynamic) {
  if (dynamic == engine.dynamic_allocation) return;
  engine.dynamic_allocation = dynamic;
  if (traits(engine.version).lazy_context) {
    engine.context_live = false;  // 2.13+: dropped; the next call makes one with the new strategy
    engine.profiler_on_context = false;
  } else {
    create_context(engine, dynamic);  // 2.11: re-created now with the new strategy
  }
}

void update_runtime_settings(StandInEngine& engine, int64_t kernel_strategy, int64_t cuda_graph_strategy,
                             c10::intrusive_ptr<RuntimeCacheHandle> runtime_cache) {
  TORCH_CHECK(traits(engine.version).runtime_settings, "Torch-TensorRT ", traits(engine.version).name,
              " engines have no update_runtime_settings");
  TORCH_CHECK(kernel_strategy >= 0 && kernel_strategy < 3, "Invalid dynamic_shapes_kernel_specialization_strategy int: ",
              kernel_strategy, " (expected 0..2 mapping to lazy|eager|none)");
  TORCH_CHECK(cuda_graph_strategy >= 0 && cuda_graph_strategy < 2, "Invalid cuda_graph_strategy int: ",
              cuda_graph_strategy, " (expected 0..1 mapping to disabled|whole_graph_capture)");
  if (kernel_strategy == engine.kernel_strategy && cuda_graph_strategy == engine.cuda_graph_strategy &&
      runtime_cache.get() == engine.runtime_cache.get()) {
    return;  // the same settings (the handle by identity): the context stays
  }
  engine.kernel_strategy = kernel_strategy;
  engine.cuda_graph_strategy = cuda_graph_strategy;
  engine.runtime_cache = std::move(runtime_cache);
  engine.context_live = false;  // the next call makes one with the new settings, without a profiler
  engine.profiler_on_context = false;
}

void set_active_profile(StandInEngine& engine, int64_t profile) {
  TORCH_CHECK(traits(engine.version).optimization_profiles, "Torch-TensorRT ", traits(engine.version).name,
              " engines have no set_active_profile");
  if (engine.num_optimization_profiles() <= 1 || profile == engine.active_profile) return;
  ensure_context(engine);  // the profile is loaded into the context: exec_ctx() makes one if needed
  TORCH_CHECK(profile >= 0 && profile < engine.num_optimization_profiles(),
              "Failed to switch to optimization profile index ", profile);
  engine.active_profile = profile;
  ++engine.profile_switches;
  engine.last_shape_key = "None";  // the next call's shapes count as changed
}

}  // namespace trt_standin
