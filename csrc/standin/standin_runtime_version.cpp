#include "standin/standin_runtime_version.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace trt_standin {

namespace {

constexpr RuntimeVersion kDefaultVersion = RuntimeVersion::k2_13;

constexpr RuntimeTraits kTraits[] = {
    {"2.11", "8", 11, /*moves_inputs_to_device=*/false, /*runs_on_caller_stream=*/false, /*converts_outputs=*/true,
     /*lazy_context=*/false, /*runtime_settings=*/false, /*aliased_io=*/false, /*optimization_profiles=*/false},
    {"2.13", "9", 12, /*moves_inputs_to_device=*/true, /*runs_on_caller_stream=*/true, /*converts_outputs=*/false,
     /*lazy_context=*/true, /*runtime_settings=*/true, /*aliased_io=*/false, /*optimization_profiles=*/false},
    {"2.14", "10", 13, /*moves_inputs_to_device=*/true, /*runs_on_caller_stream=*/true, /*converts_outputs=*/false,
     /*lazy_context=*/true, /*runtime_settings=*/true, /*aliased_io=*/true, /*optimization_profiles=*/true},
};

// Read once, when the library loads: every engine of the process is made under one version unless
// a test switches it. A bad value gets one line and the default, like trt_trace's other settings.
RuntimeVersion version_from_environment() {
  const char* raw = std::getenv("TRT_TRACE_STANDIN_RUNTIME");
  if (raw == nullptr || *raw == '\0') return kDefaultVersion;
  if (auto v = parse_runtime_version(raw)) return *v;
  std::fprintf(stderr, "trt_trace: TRT_TRACE_STANDIN_RUNTIME='%s' must be %s (using %s)\n", raw,
               runtime_version_choices(), traits(kDefaultVersion).name);
  return kDefaultVersion;
}

std::atomic<RuntimeVersion> g_current{version_from_environment()};

}  // namespace

const RuntimeTraits& traits(RuntimeVersion version) { return kTraits[static_cast<int>(version)]; }

const char* runtime_version_choices() { return "2.11, 2.13 or 2.14"; }

std::optional<RuntimeVersion> parse_runtime_version(const std::string& text) {
  for (const auto v : kRuntimeVersions) {
    if (text == traits(v).name) return v;
  }
  return std::nullopt;
}

RuntimeVersion current_runtime_version() { return g_current.load(std::memory_order_relaxed); }

void set_current_runtime_version(RuntimeVersion version) { g_current.store(version, std::memory_order_relaxed); }

}  // namespace trt_standin
