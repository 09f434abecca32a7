// Registers the stand-in exactly where the real runtime registers itself:
// torchbind class tensorrt.Engine, op tensorrt::execute_engine at
// CompositeExplicitAutograd, and the runtime's global switches; the layout ops
// (ABI_VERSION, SERIALIZATION_LEN) answer for the runtime version played now.
#include <torch/library.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "standin/standin_engine.h"
#include "standin/standin_profiling.h"

namespace trt_standin {
namespace {

bool g_multi_device_safe_mode = false;
int64_t g_cudagraphs_mode = 0;
int64_t g_logging_level = 3;

using EnginePtr = c10::intrusive_ptr<StandInEngine>;

// TRT_TRACE_STANDIN_PROFILING=0 (read when the library loads) registers the class without Torch-TensorRT's
// profiling methods, as a runtime that has none: for tests of what trt_trace does without them.
bool with_profiling_methods() {
  const char* raw = std::getenv("TRT_TRACE_STANDIN_PROFILING");
  return raw == nullptr || std::string(raw) != "0";
}

// 2.13+: tensorrt.RuntimeCacheHandle, registered before the engine class whose update_runtime_settings takes one.
const auto kRuntimeCacheClass = torch::class_<RuntimeCacheHandle>("tensorrt", "RuntimeCacheHandle")
                                    .def(torch::init<std::string>())
                                    .def_readwrite("path", &RuntimeCacheHandle::path)
                                    .def("has_cache", [](const c10::intrusive_ptr<RuntimeCacheHandle>&) { return false; });

torch::class_<StandInEngine> register_engine_class() {
  auto cls = torch::class_<StandInEngine>("tensorrt", "Engine")
                 .def(torch::init<std::vector<std::string>>())
                 .def("__str__", &StandInEngine::to_str)
                 .def("__repr__", &StandInEngine::to_str)
                 .def("__obj_flatten__", &StandInEngine::obj_flatten)
                 .def("use_dynamically_allocated_resources",
                      [](const EnginePtr& self, bool dynamic) { use_dynamically_allocated_resources(*self, dynamic); })
                 .def_readwrite("use_pre_allocated_outputs", &StandInEngine::use_pre_allocated_outputs)
                 // 2.13+ (refused on engines of an older version): the contexts made, the runtime settings.
                 .def("num_execution_contexts_created",
                      [](const EnginePtr& self) -> int64_t { return self->contexts_created; })
                 .def("update_runtime_settings",
                      [](const EnginePtr& self, int64_t kernel_strategy, int64_t cuda_graph_strategy,
                         c10::optional<c10::intrusive_ptr<RuntimeCacheHandle>> cache) {
                        update_runtime_settings(*self, kernel_strategy, cuda_graph_strategy,
                                                cache.has_value() ? *cache : nullptr);
                      })
                 // 2.14: optimization profiles (set_active_profile refused on older engines).
                 .def("set_active_profile",
                      [](const EnginePtr& self, int64_t profile) { set_active_profile(*self, profile); })
                 .def_property("num_optimization_profiles",
                               [](const EnginePtr& self) -> int64_t { return self->num_optimization_profiles(); })
                 .def_readonly("_active_profile_index", &StandInEngine::active_profile)
                 .def_readwrite("_auto_select_profiles", &StandInEngine::auto_select_profiles)
                 // Not the real runtime's: what its profiling did, for the tests (standin_profiling.h).
                 .def("_trt_trace_standin_state",
                      [](const EnginePtr& self) -> c10::Dict<std::string, int64_t> {
                        c10::Dict<std::string, int64_t> out;
                        out.insert("contexts_created", self->contexts_created);
                        out.insert("context_user_managed", self->context_user_managed ? 1 : 0);
                        out.insert("static_context_workspaces", self->static_context_workspaces);
                        out.insert("unsafe_toggles", self->unsafe_toggles.load());
                        out.insert("profiled_calls", self->profiled_calls);
                        out.insert("profile_execution", self->profile_execution ? 1 : 0);
                        out.insert("calls", self->calls.load());
                        out.insert("context_live", self->context_live ? 1 : 0);
                        out.insert("profile_switches", self->profile_switches);
                        return out;
                      })
                 // Not the real runtime's: each layer time (float ms) its profiler was told since the last read.
                 .def("_trt_trace_standin_reported",
                      [](const EnginePtr& self) -> std::vector<double> {
                        std::lock_guard<std::mutex> lock(self->mu);
                        std::vector<double> out;
                        out.swap(self->reported_ms);
                        return out;
                      })
                 .def_pickle([](const EnginePtr& self) -> std::vector<std::string> { return self->serialize(); },
                             [](std::vector<std::string> info) -> EnginePtr {
                               return StandInEngine::from_pickled(std::move(info));
                             });
  if (with_profiling_methods()) {
    cls.def("enable_profiling", [](const EnginePtr& self) { enable_profiling(*self); })
        .def("disable_profiling", [](const EnginePtr& self) { disable_profiling(*self); })
        .def("set_profile_format", [](const EnginePtr& self, std::string format) { set_profile_format(*self, format); })
        .def_readwrite("profile_path_prefix", &StandInEngine::profile_path_prefix)
        .def("get_engine_layer_info", [](const EnginePtr& self) -> std::string { return layer_information(*self); })
        .def("dump_engine_layer_info_to_file",
             [](const EnginePtr& self, std::string path) { std::ofstream(path) << layer_information(*self); })
        .def("dump_engine_layer_info", [](const EnginePtr& self) {
          std::ofstream(profile_file(*self, "_layer_information.json")) << layer_information(*self);
        });
  }
  return cls;
}

const auto kEngineClass = register_engine_class();

RuntimeVersion version_named(const std::string& name) {
  const auto v = parse_runtime_version(name);
  TORCH_CHECK(v.has_value(), "trt_trace stand-in: runtime version must be ", runtime_version_choices(), ", got '",
              name, "'");
  return *v;
}

}  // namespace
}  // namespace trt_standin

TORCH_LIBRARY(tensorrt, m) {
  using namespace trt_standin;
  m.def("execute_engine(Tensor[] input_tensors, __torch__.torch.classes.tensorrt.Engine engine) -> Tensor[]");
  m.def("ABI_VERSION", []() -> std::string { return traits(current_runtime_version()).abi_version; });
  m.def("SERIALIZED_ENGINE_BINDING_DELIM", []() -> std::string { return std::string(1, kBindingDelim); });
  m.def("SERIALIZATION_LEN", []() -> int64_t { return traits(current_runtime_version()).serialization_len; });
  m.def("NAME_IDX", []() -> int64_t { return NAME_IDX; });
  m.def("ENGINE_IDX", []() -> int64_t { return ENGINE_IDX; });
  m.def("ALIASED_IO_IDX", []() -> int64_t { return ALIASED_IO_IDX; });
  m.def("get_multi_device_safe_mode", []() -> bool { return g_multi_device_safe_mode; });
  m.def("set_multi_device_safe_mode", [](bool on) -> void { g_multi_device_safe_mode = on; });
  m.def("get_cudagraphs_mode", []() -> int64_t { return g_cudagraphs_mode; });
  m.def("set_cudagraphs_mode", [](int64_t mode) -> void { g_cudagraphs_mode = mode; });
  m.def("get_logging_level", []() -> int64_t { return g_logging_level; });
  m.def("set_logging_level", [](int64_t level) -> void { g_logging_level = level; });
  // Marks this library as the stand-in, so tools can tell it from the real runtime.
  m.def("_trt_trace_standin", []() -> bool { return true; });
  // The Torch-TensorRT version played (standin_runtime_version.h), and a switch for tests that
  // returns the previous one. Engines made before a switch keep their version.
  m.def("_trt_trace_standin_runtime", []() -> std::string { return traits(current_runtime_version()).name; });
  // The enqueue gate for tests (standin_engine.h): closed, calls wait in their enqueue; how many wait.
  m.def("_trt_trace_standin_close_gate", [](bool closed) -> void { set_enqueue_gate_closed(closed); });
  m.def("_trt_trace_standin_at_gate", []() -> int64_t { return calls_at_enqueue_gate(); });
  m.def("_trt_trace_standin_set_runtime", [](std::string name) -> std::string {
    const RuntimeVersion next = version_named(name);
    const std::string previous = traits(current_runtime_version()).name;
    set_current_runtime_version(next);
    return previous;
  });
}

TORCH_LIBRARY_IMPL(tensorrt, CompositeExplicitAutograd, m) {
  m.impl("execute_engine", &trt_standin::execute_engine);
}
