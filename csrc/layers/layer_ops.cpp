// torch.ops.trt_trace's per-layer timing ops (trt_trace/ops.py wraps them).
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "layers/layer_names.h"
#include "layers/layer_window.h"
#include "layers/private_folder.h"
#include "layers/runtime_profiling.h"

namespace trt_trace {
namespace layers {
namespace {

void set_layers(int64_t n, bool new_session, double wait_s) {
  TORCH_CHECK(n >= 0, "trt_trace::_set_layers: n must be a number of calls >= 0 (0: off), not ", n);
  set_calls_per_engine(n, new_session, wait_s);
}

// The parser, for tests: (names, ns) of a layer trace as the runtime writes it; raises if it is not one.
std::tuple<std::vector<std::string>, std::vector<int64_t>> parse_layer_trace_op(const std::string& text) {
  std::vector<TracedLayer> layers;
  TORCH_CHECK(parse_layer_trace(text, &layers), "not a layer trace of Torch-TensorRT's profiler");
  std::vector<std::string> names;
  std::vector<int64_t> ns;
  for (const auto& l : layers) {
    names.emplace_back(l.name);
    ns.push_back(l.ns);
  }
  return {names, ns};
}

}  // namespace
}  // namespace layers
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace::layers;
  m.def("_set_layers(int n, bool new_session=False, float wait_s=5.0) -> ()", &set_layers);
  m.def("_get_layers() -> int", [] { return calls_per_engine(); });
  m.def("_layer_report() -> str", [] { return report_json(); });
  m.def("_layer_names() -> str[]", [] { return LayerNames::instance().names(); });
  m.def("_layer_private_folder() -> str", [] { return private_folder(); });
  m.def("_layers_after_fork_in_child() -> ()", [] { after_fork_in_child(); });
  m.def("_parse_layer_trace(str text) -> (str[], int[])", &parse_layer_trace_op);
}
