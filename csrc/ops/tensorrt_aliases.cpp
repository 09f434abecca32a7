// tensorrt::set_profile_execution and tensorrt::dump_engine_timing: the names
// the seed request asked for, in the runtime's own namespace, as aliases of the
// trt_trace ops. Defined only where that namespace does not already define
// them (a future Torch-TensorRT may), checked when this library is loaded.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>

namespace trt_trace {
namespace {

bool has_op(const char* name) {
  return c10::Dispatcher::singleton().findSchema(c10::OperatorName(name, "")).has_value();
}

void call_trt_trace_set(bool enable) {
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("trt_trace::set_profile_execution", "")
                       .typed<void(bool)>();
  op.call(enable);
}

std::string call_trt_trace_dump() {
  static auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("trt_trace::dump_engine_timing", "").typed<std::string()>();
  return op.call();
}

struct TensorrtAliases {
  std::unique_ptr<torch::Library> lib;
  TensorrtAliases() {
    const bool need_set = !has_op("tensorrt::set_profile_execution");
    const bool need_dump = !has_op("tensorrt::dump_engine_timing");
    if (!need_set && !need_dump) return;
    lib = std::make_unique<torch::Library>(torch::Library::FRAGMENT, "tensorrt", std::nullopt, __FILE__, __LINE__);
    if (need_set) lib->def("set_profile_execution(bool enable) -> ()", &call_trt_trace_set);
    if (need_dump) lib->def("dump_engine_timing() -> str", &call_trt_trace_dump);
  }
};

const TensorrtAliases g_aliases;

}  // namespace
}  // namespace trt_trace
