// Registers the stand-in exactly where the real runtime registers itself:
// torchbind class tensorrt.Engine, op tensorrt::execute_engine at
// CompositeExplicitAutograd, and the runtime's global switches; the layout ops
// (ABI_VERSION, SERIALIZATION_LEN) answer for the runtime version played now.
#include <torch/library.h>

#include "standin/standin_engine.h"

namespace trt_standin {
namespace {

bool g_multi_device_safe_mode = false;
int64_t g_cudagraphs_mode = 0;
int64_t g_logging_level = 3;

const auto kEngineClass =
    torch::class_<StandInEngine>("tensorrt", "Engine")
        .def(torch::init<std::vector<std::string>>())
        .def("__str__", &StandInEngine::to_str)
        .def("__repr__", &StandInEngine::to_str)
        .def("__obj_flatten__", &StandInEngine::obj_flatten)
        .def("enable_profiling",
             [](const c10::intrusive_ptr<StandInEngine>&) {
               TORCH_CHECK(false, "enable_profiling: the stand-in runtime has no TensorRT profiler");
             })
        .def("use_dynamically_allocated_resources",
             [](const c10::intrusive_ptr<StandInEngine>& self, bool dynamic) { self->dynamic_allocation = dynamic; })
        .def_readwrite("use_pre_allocated_outputs", &StandInEngine::use_pre_allocated_outputs)
        .def_pickle([](const c10::intrusive_ptr<StandInEngine>& self) -> std::vector<std::string> {
                      return self->serialize();
                    },
                    [](std::vector<std::string> info) -> c10::intrusive_ptr<StandInEngine> {
                      return StandInEngine::from_pickled(std::move(info));
                    });

RuntimeVersion version_named(const std::string& name) {
  const auto v = parse_runtime_version(name);
  TORCH_CHECK(v.has_value(), "trt_trace stand-in: runtime version must be 2.11 or 2.13, got '", name, "'");
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
