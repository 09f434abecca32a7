// The fake libnvonnxparser.so.10: the TensorRT Python bindings link against it (and load with every
// symbol resolved at once), so `import tensorrt` needs these three entry points to exist. Only an
// OnnxParser / OnnxParserRefitter built from Python, or asking for the parser's version, calls them:
// the fake parses no ONNX, and a call stops the process with its name.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define FAKETRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
[[noreturn]] void no_parser(const char* entry) noexcept {
  std::fprintf(stderr, "faketrt: %s is not implemented (the fake has no ONNX parser)\n", entry);
  std::fflush(stderr);
  std::abort();
}
}  // namespace

FAKETRT_EXPORT void* createNvOnnxParser_INTERNAL(void* /*network*/, void* /*logger*/, int32_t /*version*/) {
  no_parser("createNvOnnxParser_INTERNAL");
}

FAKETRT_EXPORT void* createNvOnnxParserRefitter_INTERNAL(void* /*refitter*/, void* /*logger*/, int32_t /*version*/) {
  no_parser("createNvOnnxParserRefitter_INTERNAL");
}

FAKETRT_EXPORT int32_t getNvOnnxParserVersion() { no_parser("getNvOnnxParserVersion"); }
