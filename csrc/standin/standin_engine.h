// A stand-in for Torch-TensorRT's runtime engine (torch.classes.tensorrt.Engine).
//
// It mirrors what trt_trace depends on in the real runtime: the class name and constructor from
// List[str] serialized info in the real index layout, __str__/__repr__ text ("Torch-TensorRT
// TensorRT Engine:" then "  Name: <name>"), def_pickle with the engine field base64-encoded, and
// __obj_flatten__ as one (key, value) pair per field. The layout and the call's stream and device
// handling follow the runtime version the engine was made under (standin_runtime_version.h:
// 2.11 or 2.13). Instead of a TensorRT plan, the ENGINE field holds the stand-in's parameters
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

#include "standin/standin_runtime_version.h"

#ifdef STANDIN_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace trt_standin {

// The real runtime's serialized-info indices. 2.11 has the first 11; 2.13 adds the twelfth. How
// many a version reads and writes is RuntimeTraits::serialization_len.
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
  REQUIRES_NATIVE_MULTIDEVICE_IDX,  // 2.13 only
  MAX_SERIALIZATION_LEN,
};
constexpr char kBindingDelim = '%';

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

  static EngineParams parse(const std::string& text);
  std::string serialize() const;
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

  std::mutex mu;  // the per-engine lock of the real runtime
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
