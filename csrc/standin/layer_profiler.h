// The stand-in's per-layer profiler (standin_profiling.h says how the runtime's is mirrored), apart from
// the profiling methods so that the engine (standin_engine.h) can hold one without including them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace trt_standin {

// TRTEngineProfiler's behaviour: layer name -> (total ms as a float, count), names in the order
// first reported; the layer trace in the perfetto (default) or trex format.
struct LayerProfiler {
  std::vector<std::string> names;
  std::map<std::string, std::pair<float, int>> profile;
  bool trex = false;
  void report(const std::string& name, float ms);
};

}  // namespace trt_standin
