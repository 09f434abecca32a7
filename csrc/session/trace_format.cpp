#include "session/trace_format.h"

namespace trt_trace {
namespace session {

void TraceFormat::write(const Record* recs, size_t n) {
  constexpr uint8_t kLayerPhase = static_cast<uint8_t>(Phase::kLayer);
  bool any_layer = false;
  for (size_t i = 0; i < n && !any_layer; ++i) any_layer = recs[i].phase == kLayerPhase;
  if (!any_layer) {  // the usual batch: handed on as it is, no copy
    if (n) write_calls(recs, n);
    return;
  }
  calls_.clear();
  layers_.clear();
  for (size_t i = 0; i < n; ++i) {
    if (recs[i].phase == kLayerPhase) {
      layers_.push_back(as<LayerRecord>(recs[i]));
    } else {
      calls_.push_back(recs[i]);
    }
  }
  if (!calls_.empty()) write_calls(calls_.data(), calls_.size());
  if (!layers_.empty()) write_layers(layers_.data(), layers_.size());
}

}  // namespace session
}  // namespace trt_trace
