// The fake libnvinfer_plugin.so.10: Torch-TensorRT's runtime calls only
// initLibNvInferPlugins(logger, namespace) from it, at load. No plugins exist.
#include <cstdint>

extern "C" __attribute__((visibility("default"))) bool initLibNvInferPlugins(void* /*logger*/,
                                                                             const char* /*plugin_namespace*/) {
  return true;
}
