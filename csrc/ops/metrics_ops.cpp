// torch.ops.trt_trace's metrics endpoint ops (trt_trace/runtime/metrics.py wraps them): start it now or from
// the first engine call, ask where it serves, stop it, and the text it answers with. The endpoint
// itself runs on its own native thread (metrics/metrics_server.h); these only control it.
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "metrics/exposition_text.h"
#include "metrics/metrics_server.h"

namespace trt_trace {
namespace {

// (state, host, port, error, message): state 0 off, 1 waiting for the first engine call, 2 serving.
using StatusTuple = std::tuple<int64_t, std::string, int64_t, int64_t, std::string>;

StatusTuple to_tuple(const metrics::Status& s, int error = 0, const std::string& message = {}) {
  return {static_cast<int64_t>(s.state), s.host, s.port, error, message};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace;
  m.def("_serve_metrics(str addr, int port) -> (int, str, int, int, str)", [](const std::string& addr, int64_t port) {
    const metrics::ServeOutcome out = metrics::serve_now(addr, static_cast<int>(port));
    return to_tuple(out.status, out.error, out.message);
  });
  m.def("_serve_metrics_from_first_engine(str addr, int port, bool quiet) -> ()",
        [](const std::string& addr, int64_t port, bool quiet) {
          metrics::serve_from_first_engine(addr, static_cast<int>(port), quiet);
        });
  m.def("_metrics_status() -> (int, str, int, int, str)", [] { return to_tuple(metrics::status()); });
  m.def("_stop_metrics() -> ()", [] { metrics::stop(); });
  m.def("_metrics_text() -> str", [] {
    std::string text;
    metrics::append_exposition_text(text, metrics::live_counters());
    return text;
  });
}
