// torch.ops.trt_trace's per-layer timing ops of a session (trt_trace/native/ops.py wraps them). The switch itself
// is the session's `layers` setting, set whole with the others (_session_start, session_ops.cpp); the
// tests' own layer ops are in test_ops.cpp.
#include <torch/library.h>

#include <string>
#include <vector>

#include "layers/layer_names.h"
#include "layers/layer_window.h"

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace::layers;
  m.def("_layer_report() -> str", [] { return report_json(); });
  m.def("_layer_names() -> str[]", [] { return LayerNames::instance().names(); });
}
