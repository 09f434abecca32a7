// A stand-in for Torch-TensorRT's runtime engine (torch.classes.tensorrt.Engine).
//
// It mirrors what trt_trace depends on in the real runtime: the class name and constructor from
// List[str] serialized info in the real index layout, __str__/__repr__ text ("Torch-TensorRT
// TensorRT Engine:" then "  Name: <name>"), def_pickle with the engine field base64-encoded, and
// __obj_flatten__ as one (key, value) pair per field. The layout and the call's stream and device
// handling follow the runtime version the engine was made under (standin_runtime_version.h:
// 2.11, 2.13 or 2.14). Instead of a TensorRT plan, the ENGINE field holds the stand-in's parameters
// ("key=value;..."), so they survive pickling and AOTInductor packaging.
#pragma once

#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "standin/layer_profiler.h"
#include "standin/standin_runtime_version.h"

#ifdef STANDIN_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace trt_standin {

// The real runtime's serialized-info indices. 2.11 has the first 11; 2.13 adds the twelfth, 2.14 the
// thirteenth. How many a version reads and writes is RuntimeTraits::serialization_len.
enum SerializedInfoIndex : int {
  ABI_TARGET_IDX = 0,
  NAME_IDX,
  DEVICE_IDX,
  ENGINE_IDX,
  INPUT_BINDING_NAMES_IDX,
  OUTPUT_BINDING_NAMES_IDX,
  HW_COMPATIBLE_IDX,
  SERIALIZED_METADATA_IDX,
  TARGET_PLATFORM_IDX,
  REQUIRES_OUTPUT_ALLOCATOR_IDX,
  RESOURCE_ALLOCATION_STRATEGY_IDX,
  REQUIRES_NATIVE_MULTIDEVICE_IDX,  // 2.13 and later
  ALIASED_IO_IDX,                   // 2.14: "output@input@kind" records joined with '%'
  MAX_SERIALIZATION_LEN,
};
constexpr char kBindingDelim = '%';
constexpr char kAliasFieldDelim = '@';

// One optimization profile of the stand-in's "plan" (2.14): the range of dimension 0 it accepts
// for every input, as TensorRT's getProfileShape gives min and max.
struct ProfileRange {
  int64_t min = 0;
  int64_t max = 0;
};

// A layer of the stand-in's "plan": host work of a known cost inside enqueue (CPU engines), which
// the engine's profiler times and reports under the layer's name, as TensorRT reports its layers.
struct StandInLayer {
  std::string name;
  int64_t us = 0;
};

// What the stand-in's "plan" computes and costs. Output k of a call is
//   y = act(sum(inputs) * scale + bias); out_k = y * (k + 1)
// with `repeat` passes over y on the device (repeat - 1 of them leave it unchanged).
struct EngineParams {
  double scale = 1.0;
  double bias = 0.0;
  std::string activation = "relu";  // relu | tanh | none
  int64_t num_inputs = 1;
  int64_t num_outputs = 1;
  int64_t repeat = 1;            // more device work per call
  int64_t host_us = 0;           // extra host cost inside enqueue, in microseconds
  int64_t workspace_bytes = 0;   // dynamic workspace size (Dynamic strategy only)
  int64_t fail_every = 0;        // > 0: every Nth call throws in enqueue (fault tests)
  // 1: `.contiguous()` of each bound input reaches the dispatcher even when the input is already
  // contiguous (benchmarks: the runtime's view, contiguous and empty per call as dispatcher calls).
  int64_t dispatch_contiguous = 0;
  // In execution order; "layers=<us>:<name>|<us>:<name>..." with %, ; and | in names as %25, %3B, %7C.
  std::vector<StandInLayer> layers;
  // Optimization profiles ("profiles=<min>:<max>|..."); none: one profile that takes any shape.
  std::vector<ProfileRange> profiles;

  static EngineParams parse(const std::string& text);
  std::string serialize() const;
};

// tensorrt.RuntimeCacheHandle (2.13+): a runtime cache engines may share, and the file it is kept in.
// Only TensorRT-RTX fills one; the stand-in keeps the path and never has a cache.
struct RuntimeCacheHandle : torch::CustomClassHolder {
  explicit RuntimeCacheHandle(std::string p) : path(std::move(p)) {}
  std::string path;
};

std::string base64_encode(const std::string& in);
std::string base64_decode(const std::string& in);

struct StandInEngine : torch::CustomClassHolder {
  // Made under the current runtime version. Like the real constructor it checks no ABI (that is
  // unpickling's job, from_pickled) and ignores fields past the ones its version reads.
  explicit StandInEngine(std::vector<std::string> serialized_info);
  // Unpickling: the ENGINE field base64-decoded, then the field count and ABI of the current
  // version checked, with the real runtime's messages.
  static c10::intrusive_ptr<StandInEngine> from_pickled(std::vector<std::string> serialized_info);

  std::vector<std::string> serialize() const;  // ENGINE field base64-encoded, as pickled
  c10::IValue obj_flatten() const;              // a tuple of (key, value) tuples, one per field
  std::string to_str() const;

  RuntimeVersion version;         // the runtime version it was made under
  std::vector<std::string> info;  // its version's fields, ABI its version's (ENGINE field raw)
  std::string name;
  EngineParams params;
  int64_t device_index = -1;      // -1: CPU
  bool dynamic_allocation = false;
  bool use_pre_allocated_outputs = false;
  std::vector<at::Tensor> pre_allocated_outputs;
  std::vector<std::string> in_binding_names;
  std::vector<std::string> out_binding_names;

  // 2.14: output index -> the input index whose storage it is bound to (from ALIASED_IO_IDX). Such an
  // output is not allocated: the call returns the bound input in its place.
  std::vector<std::pair<int64_t, int64_t>> aliased_outputs;
  std::optional<int64_t> aliased_input_of(int64_t output) const;
  void parse_aliased_io(const std::string& text);

  // 2.14's optimization profiles: the one loaded in the context, shape-based selection (opt-in), and
  // how many switches were made (for tests).
  int64_t active_profile = 0;
  bool auto_select_profiles = false;
  int64_t profile_switches = 0;
  int64_t num_optimization_profiles() const {
    return params.profiles.empty() ? 1 : static_cast<int64_t>(params.profiles.size());
  }
  bool profile_fits(int64_t profile, const std::vector<at::Tensor>& inputs) const;

  // 2.13+: the runtime settings (two strategies and a runtime cache handle, compared by identity);
  // a change drops the context.
  int64_t kernel_strategy = 0;
  int64_t cuda_graph_strategy = 0;
  c10::intrusive_ptr<RuntimeCacheHandle> runtime_cache;  // null: the engine's own, in memory

  std::mutex mu;  // the per-engine lock of the real runtime

  // Torch-TensorRT's own profiling (standin_profiling.h). The profiler and the context are guarded,
  // as in the real runtime, by nothing: calls use them under `mu`, the methods without it.
  bool profile_execution = false;
  std::unique_ptr<LayerProfiler> profiler;
  std::string profile_path_prefix;     // the real default: the system's temporary directory
  bool context_live = true;            // 2.13+ makes none until the first call, drops it, makes the next lazily
  bool context_user_managed = false;   // created for the Dynamic strategy (the workspace is bound to it)
  bool profiler_on_context = false;    // the live context has the profiler attached
  int64_t contexts_created = 1;        // 2.11: the constructor's; 2.13+: none until the first call
  int64_t static_context_workspaces = 0;  // workspaces bound to a static context (a TensorRT error)
  std::atomic<int64_t> unsafe_toggles{0};  // enable/disable_profiling while a call held `mu`
  int64_t profiled_calls = 0;          // calls that ran with the profiler attached
  std::vector<double> reported_ms;     // every layer time reported to the profiler (the float ms it got)
  std::atomic<int64_t> calls{0};
  std::string last_shape_key;
#ifdef STANDIN_WITH_CUDA
  // The engine's own pool stream: taken at construction in 2.13, at the first call in 2.11.
  std::optional<c10::cuda::CUDAStream> own_stream;
#endif
};

std::vector<at::Tensor> execute_engine(std::vector<at::Tensor> inputs, c10::intrusive_ptr<StandInEngine> engine);

// A gate in every engine's enqueue, for tests that must act while a call is under way (instead of
// sleeping and hoping it is): while closed, each call waits in its enqueue, counted.
void set_enqueue_gate_closed(bool closed) noexcept;
int64_t calls_at_enqueue_gate() noexcept;
void wait_at_enqueue_gate() noexcept;

}  // namespace trt_standin
