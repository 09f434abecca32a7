#include "session/trace_format.h"

#include <map>

namespace trt_trace {
namespace session {
namespace {
// Filled by the formats' static initialisers (before main or at the library's load), read afterwards.
std::map<std::string, FormatMaker>& registry() {
  static std::map<std::string, FormatMaker> formats;
  return formats;
}
}  // namespace

bool register_format(const char* name, FormatMaker make) {
  registry()[name] = make;
  return true;
}

std::unique_ptr<TraceFormat> make_format(const std::string& name, FormatStart start) {
  const auto it = registry().find(name);
  return it == registry().end() ? nullptr : it->second(std::move(start));
}

bool format_known(const std::string& name) { return registry().count(name) != 0; }

std::vector<std::string> format_names() {
  std::vector<std::string> out;
  for (const auto& entry : registry()) out.push_back(entry.first);
  return out;
}

void TraceFormat::write(const Record* recs, size_t n) {
  constexpr uint8_t kLayerPhase = static_cast<uint8_t>(Phase::kLayer);
  constexpr uint8_t kInferencePhase = static_cast<uint8_t>(Phase::kInference);
  bool any_other = false;
  for (size_t i = 0; i < n && !any_other; ++i) any_other = recs[i].phase == kLayerPhase || recs[i].phase == kInferencePhase;
  if (!any_other) {  // the usual batch: handed on as it is, no copy
    if (n) write_calls(recs, n);
    return;
  }
  calls_.clear();
  layers_.clear();
  inferences_.clear();
  for (size_t i = 0; i < n; ++i) {
    const uint8_t phase = recs[i].phase;
    if (phase == kLayerPhase) {
      layers_.push_back(as<LayerRecord>(recs[i]));
    } else if (phase == kInferencePhase) {
      inferences_.push_back(as<InferenceRecord>(recs[i]));
    } else {
      calls_.push_back(recs[i]);
    }
  }
  if (!calls_.empty()) write_calls(calls_.data(), calls_.size());
  if (!layers_.empty()) write_layers(layers_.data(), layers_.size());
  if (!inferences_.empty()) write_inferences(inferences_.data(), inferences_.size());
}

}  // namespace session
}  // namespace trt_trace
