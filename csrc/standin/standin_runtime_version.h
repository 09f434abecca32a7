// The Torch-TensorRT runtime versions the stand-in can play, and what differs between them.
//
// Torch-TensorRT 2.11 (built for torch 2.11), 2.12/2.13 (torch 2.12/2.13) and 2.14 (torch 2.14,
// TensorRT 11) register the same op and class, but differ where trt_trace can see it:
//   * Serialized info: ABI "8" and 11 fields in 2.11; ABI "9" and 12 in 2.13 (the twelfth says
//     whether the engine needs native multi-device collectives); ABI "10" and 13 in 2.14 (the
//     thirteenth lists aliased outputs: "output@input@kind" records joined with '%').
//     __obj_flatten__ returns one (key, value) pair per field, pickling writes the fields, and
//     unpickling checks their number and the ABI: a program serialized by one version does not
//     load in another.
//   * Inputs off the engine's device: 2.13 moves them first thing in the call; 2.11 refuses them
//     at input setup.
//   * Streams: 2.11 runs every call on the engine's own stream (a pool stream taken at its first
//     call), with events caller -> engine -> caller whatever stream the caller is on; 2.13 runs on
//     the caller's stream unless that is the default stream, and only then on the engine's own one.
//   * Output setup: 2.11 allocates each output as float32 and converts it with .to(dtype), an op
//     dispatched (and seen by observers) after each allocation even when the dtype is float32; 2.13
//     allocates each output in its dtype.
//   * The execution context: 2.11 makes it in the constructor and re-creates it at once where it
//     must change (disable_profiling, a new allocation strategy); 2.13 and 2.14 make none in the
//     constructor, make it at the first call (or the first method that needs it), and drop it
//     where it must change, the next call making another (standin_profiling.h). Until then
//     __str__ lists no inputs or outputs ("<execution context not yet materialized>").
//   * 2.14 only: aliased outputs (an output bound to an input's storage: not allocated, no
//     pre-allocated outputs for such an engine) and several optimization profiles
//     (set_active_profile; with _auto_select_profiles, a switch inside the call when the input
//     shapes changed). 2.13 and 2.14: update_runtime_settings (strategies and a
//     tensorrt.RuntimeCacheHandle) drops the context when the settings change.
//
// A process plays one version: TRT_TRACE_STANDIN_RUNTIME=2.11|2.13|2.14 (default 2.13), read once when
// the library loads. Tests may switch it (tensorrt::_trt_trace_standin_set_runtime); an engine
// keeps the version it was constructed under, as an engine of a real process has one runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trt_standin {

enum class RuntimeVersion : uint8_t { k2_11 = 0, k2_13 = 1, k2_14 = 2 };
constexpr RuntimeVersion kRuntimeVersions[] = {RuntimeVersion::k2_11, RuntimeVersion::k2_13, RuntimeVersion::k2_14};

struct RuntimeTraits {
  const char* name;                 // "2.11", "2.13", "2.14": the value of TRT_TRACE_STANDIN_RUNTIME
  const char* abi_version;          // the ABI_TARGET_IDX field it writes and accepts
  int64_t serialization_len;        // serialized-info fields (and __obj_flatten__ pairs)
  bool moves_inputs_to_device;      // false: an input off the engine's device is an error
  bool runs_on_caller_stream;       // true: a caller on a non-default stream keeps the work there
  bool converts_outputs;            // true: outputs allocated as float32, then .to(dtype)
  bool lazy_context;                // true: no context until the first call; a dropped one is made at the next
  bool runtime_settings;            // true: update_runtime_settings and tensorrt.RuntimeCacheHandle (2.13+)
  bool aliased_io;                  // true: the ALIASED_IO_IDX field and aliased outputs (2.14)
  bool optimization_profiles;       // true: set_active_profile and shape-based profile selection (2.14)
};

const RuntimeTraits& traits(RuntimeVersion version);

// "2.11, 2.13 or 2.14": the accepted values, for messages.
const char* runtime_version_choices();

// "2.11", "2.13" or "2.14"; nullopt for anything else.
std::optional<RuntimeVersion> parse_runtime_version(const std::string& text);

// The version engines are constructed and unpickled under now.
RuntimeVersion current_runtime_version();
void set_current_runtime_version(RuntimeVersion version);

}  // namespace trt_standin
