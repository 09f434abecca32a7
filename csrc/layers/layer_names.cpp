#include "layers/layer_names.h"

namespace trt_trace {
namespace layers {

void LayerNames::intern(uint32_t engine_id, const std::vector<TracedLayer>& layers, std::vector<uint32_t>* ids) {
  ids->resize(layers.size());
  std::lock_guard<std::mutex> lock(mutex_);
  Engine& e = engines_[engine_id];
  if (e.last.size() < layers.size()) e.last.resize(layers.size(), UINT32_MAX);
  for (size_t i = 0; i < layers.size(); ++i) {
    const uint32_t seen = e.last[i];
    if (seen != UINT32_MAX && names_[seen] == layers[i].name) {
      (*ids)[i] = seen;
      continue;
    }
    std::string name(layers[i].name);
    auto it = e.ids.find(name);
    uint32_t id;
    if (it != e.ids.end()) {
      id = it->second;
    } else {
      id = static_cast<uint32_t>(names_.size());
      names_.push_back(name);
      e.ids.emplace(std::move(name), id);
      e.order.push_back(id);
    }
    e.last[i] = id;
    (*ids)[i] = id;
  }
}

std::vector<std::string> LayerNames::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_;
}

std::vector<std::string> LayerNames::engine_layers(uint32_t engine_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  auto it = engines_.find(engine_id);
  if (it == engines_.end()) return out;
  for (uint32_t id : it->second.order) out.push_back(names_[id]);
  return out;
}

}  // namespace layers
}  // namespace trt_trace
