// Layer names, interned once per engine like engine names: a layer record carries a small id
// (LayerRecord::name_id), the writers look the name up in this table. Ids are process-wide (a name seen
// in two engines gets two ids, one per engine) and never reused.
//
// A profiled call reports the same layers in the same order as the call before it, so interning
// one call's layers compares each name with the one its position had last time: no hashing, no
// allocation in the usual case.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/leaked.h"
#include "layers/runtime_profiling.h"

namespace trt_trace {
namespace layers {

class LayerNames : public Leaked<LayerNames> {
 public:

  // The ids of one profiled call's layers of `engine_id`, in order (new names interned).
  void intern(uint32_t engine_id, const std::vector<TracedLayer>& layers, std::vector<uint32_t>* ids);
  // Every name by id.
  std::vector<std::string> names() const;
  // An engine's layers in the order first reported.
  std::vector<std::string> engine_layers(uint32_t engine_id) const;
  // In a forked child, before anything else runs: the lock may have been held by a parent thread.
  void after_fork_in_child() noexcept { new (&mutex_) std::mutex(); }

 private:
  struct Engine {
    std::vector<uint32_t> order;                     // ids in the order first reported
    std::vector<uint32_t> last;                      // the last call's ids by position
    std::unordered_map<std::string, uint32_t> ids;   // name -> id
  };
  mutable std::mutex mutex_;
  std::vector<std::string> names_;
  std::unordered_map<uint32_t, Engine> engines_;
};

}  // namespace layers
}  // namespace trt_trace
