// The stand-in's execute_engine, in the real runtime's order. The aten ops it
// dispatches in steps 1, 2, 7 and 8 are the ones the tracer's phase model
// observes; the "engine" computation runs hidden from observers of the
// dispatcher, as TensorRT's enqueueV3 dispatches no aten op. Where Torch-TensorRT
// 2.11, 2.13 and 2.14 differ (inputs off the engine's device, streams, the lazy
// context, 2.14's aliased outputs and optimization profiles), the call follows the
// version its engine was made under (standin_runtime_version.h).
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/profiler_legacy.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>

#include "standin/standin_engine.h"
#include "standin/standin_profiling.h"

#ifdef STANDIN_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace trt_standin {

namespace {

std::atomic<bool> g_gate_closed{false};
std::atomic<int64_t> g_at_gate{0};

void spin_for_us(int64_t us) {
  if (us <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

float activate(const EngineParams& p, float v) {
  if (p.activation == "relu") return v > 0.f ? v : 0.f;
  if (p.activation == "tanh") return std::tanh(v);
  return v;
}

// The engine's "plan", written into the bound outputs without dispatching any aten op (TensorRT's
// kernels are not aten ops): plain loops for contiguous float32 CPU tensors, the common case of
// the tests and benchmarks.
bool run_plan_cpu_float(const EngineParams& p, const std::vector<at::Tensor>& inputs,
                        std::vector<at::Tensor>& outputs) {
  for (const auto& t : inputs) {
    if (!t.device().is_cpu() || t.scalar_type() != at::kFloat || !t.is_contiguous()) return false;
  }
  for (const auto& t : outputs) {
    if (!t.device().is_cpu() || t.scalar_type() != at::kFloat || !t.is_contiguous()) return false;
  }
  const int64_t n = inputs[0].numel();
  std::vector<const float*> in;
  for (const auto& t : inputs) in.push_back(t.const_data_ptr<float>());
  std::vector<float*> out;
  for (auto& t : outputs) out.push_back(t.mutable_data_ptr<float>());
  const auto scale = static_cast<float>(p.scale), bias = static_cast<float>(p.bias);
  for (int64_t r = 0; r < p.repeat; ++r) {  // `repeat` passes of work, the same values each time
    for (int64_t i = 0; i < n; ++i) {
      float y = 0.f;
      for (const float* x : in) y += x[i];
      y = activate(p, y * scale + bias);
      for (size_t k = 0; k < out.size(); ++k) out[k][i] = y * static_cast<float>(k + 1);
    }
  }
  return true;
}

// Other devices and dtypes: aten ops. TensorRT's kernels are no dispatcher ops, so these are hidden
// from RecordFunction callbacks and from every dispatch key at or above ADInplaceOrView (modes,
// wrappers, autograd): an observer of the call's ops sees what it would see with the real runtime.
// `aliased`: an output shares an input's storage (2.14), so the plain loops, which read the inputs
// again on every pass, are not used; the ops below read every input before writing any output.
void run_plan(const EngineParams& p, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs,
              bool aliased) {
  if (!aliased && run_plan_cpu_float(p, inputs, outputs)) return;
  at::RecordFunctionGuard invisible(/*is_enabled=*/false);
  c10::impl::ExcludeDispatchKeyGuard below_modes(
      c10::DispatchKeySet(c10::DispatchKeySet::FULL) -
      c10::DispatchKeySet(c10::DispatchKeySet::FULL_AFTER, c10::DispatchKey::ADInplaceOrView));
  at::Tensor y = inputs[0].clone();
  for (size_t i = 1; i < inputs.size(); ++i) y.add_(inputs[i]);
  y.mul_(p.scale).add_(p.bias);
  if (p.activation == "relu") {
    y.relu_();
  } else if (p.activation == "tanh") {
    y.tanh_();
  }
  // More device work per call that leaves the values exact: repeat - 1 extra passes.
  for (int64_t r = 1; r < p.repeat; ++r) y.mul_(1.0);
  for (size_t k = 0; k < outputs.size(); ++k) at::mul_out(outputs[k], y, static_cast<double>(k + 1));
}

#ifdef STANDIN_WITH_CUDA
// Step 5, the stream choice. 2.13 runs on the caller's stream unless that is the default stream;
// 2.11 always runs on the engine's own stream (taken from the pool at its first call). Off the
// caller's stream, events hand the work over: caller -> engine before it, engine -> caller after.
struct CallStreams {
  c10::cuda::CUDAStream caller;
  c10::cuda::CUDAStream engine;
  bool hand_off;
};

CallStreams choose_streams(StandInEngine& engine) {
  const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(engine.device_index);
  const bool caller_on_default = caller == c10::cuda::getDefaultCUDAStream(engine.device_index);
  if (traits(engine.version).runs_on_caller_stream && !caller_on_default) return {caller, caller, false};
  if (!engine.own_stream) engine.own_stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, engine.device_index);
  return {caller, *engine.own_stream, true};
}
#endif

// With Torch-TensorRT's own profiling on, each step of a call is recorded by torch's legacy profiler
// into a Chrome trace file of its own, as the runtime does (`RecordProfile`).
std::unique_ptr<torch::autograd::profiler::RecordProfile> step_profile(const StandInEngine& engine, const char* file) {
  if (!engine.profile_execution) return nullptr;
  return std::make_unique<torch::autograd::profiler::RecordProfile>(profile_file(engine, file));
}

// The engine's layers (CPU engines): work of a known cost each. With the profiler on the context,
// each is timed and reported once, under its name, as TensorRT reports its layers.
void run_layers(StandInEngine& engine) {
  const bool timed = engine.profile_execution && engine.profiler != nullptr && engine.profiler_on_context;
  for (const StandInLayer& layer : engine.params.layers) {
    if (!timed) {
      spin_for_us(layer.us);
      continue;
    }
    const auto t0 = std::chrono::steady_clock::now();
    spin_for_us(layer.us);
    const auto t1 = std::chrono::steady_clock::now();
    const float ms = std::chrono::duration<float, std::milli>(t1 - t0).count();
    engine.profiler->report(layer.name, ms);
    engine.reported_ms.push_back(static_cast<double>(ms));
  }
  if (timed) ++engine.profiled_calls;
}

}  // namespace

void set_enqueue_gate_closed(bool closed) noexcept { g_gate_closed.store(closed, std::memory_order_release); }
int64_t calls_at_enqueue_gate() noexcept { return g_at_gate.load(std::memory_order_acquire); }
void wait_at_enqueue_gate() noexcept {
  if (C10_LIKELY(!g_gate_closed.load(std::memory_order_acquire))) return;
  g_at_gate.fetch_add(1, std::memory_order_acq_rel);
  while (g_gate_closed.load(std::memory_order_acquire)) std::this_thread::sleep_for(std::chrono::microseconds(200));
  g_at_gate.fetch_sub(1, std::memory_order_acq_rel);
}

std::vector<at::Tensor> execute_engine(std::vector<at::Tensor> inputs, c10::intrusive_ptr<StandInEngine> engine) {
  const EngineParams& p = engine->params;
  TORCH_CHECK(static_cast<int64_t>(inputs.size()) == p.num_inputs, "Engine ", engine->name, " expects ",
              p.num_inputs, " input(s) but was called with ", inputs.size());
  const bool on_cuda = engine->device_index >= 0;
  const at::Device device = on_cuda ? at::Device(at::kCUDA, engine->device_index) : at::Device(at::kCPU);

  const RuntimeTraits& rt = traits(engine->version);

  // 1. 2.13: inputs not on the engine's device are moved there (2.11 refuses them in step 7).
  if (rt.moves_inputs_to_device) {
    for (auto& in : inputs) {
      if (in.device() != device) in = in.to(device);
    }
  }

  // The execution context (2.13 and 2.14 make one here at the first call and where it was dropped,
  // before the workspace and the lock; 2.11 always has one).
  ensure_context(*engine);

  // 2. Dynamic workspace, before the lock (Dynamic strategy only), bound to the context.
  at::Tensor workspace;
  if (engine->dynamic_allocation) {
    if (p.workspace_bytes > 0) {
      workspace = at::empty({p.workspace_bytes}, at::TensorOptions().dtype(at::kByte).device(device));
    }
    if (!engine->context_user_managed) ++engine->static_context_workspaces;
  }

  // 3. The per-engine lock.
  std::unique_lock<std::mutex> lock(engine->mu);
  const int64_t call_index = ++engine->calls;

  // 6. Shape key from the input sizes; 2.14 with shape-based selection switches the optimization
  //    profile here when the shapes changed and the loaded profile does not take them (no op is
  //    dispatched: setOptimizationProfileAsync).
  std::string shape_key;
  for (const auto& in : inputs) shape_key += c10::str(in.sizes());
  const bool shape_changed = shape_key != engine->last_shape_key;
  engine->last_shape_key = shape_key;
  if (shape_changed && engine->num_optimization_profiles() > 1 && engine->auto_select_profiles &&
      !engine->profile_fits(engine->active_profile, inputs)) {
    int64_t fitting = -1;
    for (int64_t k = 0; k < engine->num_optimization_profiles() && fitting < 0; ++k) {
      if (engine->profile_fits(k, inputs)) fitting = k;
    }
    TORCH_CHECK(fitting >= 0, "No optimization profile matches the input shapes. Fix the input shapes or pin a "
                "profile explicitly via optimization_profile(module, index).");
    engine->active_profile = fitting;
    ++engine->profile_switches;
  }

  // 7. Input setup: view(shape).contiguous() per input.
  auto input_profile = step_profile(*engine, "_input_profile.trace");
  std::vector<at::Tensor> bound_inputs;
  bound_inputs.reserve(inputs.size());
  for (const auto& in : inputs) {
    TORCH_CHECK(in.device().type() == device.type(), "Expected input tensors to have device ",
                c10::DeviceTypeName(device.type(), /*lower_case=*/true), ", found device ", in.device());
    at::Tensor viewed = in.view(in.sizes());
    // setInputShape fails for a shape outside the loaded optimization profile (2.14, several profiles).
    TORCH_CHECK(engine->num_optimization_profiles() <= 1 || engine->profile_fits(engine->active_profile, {in}),
                "Error while setting the input shape");
    bound_inputs.push_back(p.dispatch_contiguous != 0 ? viewed.__dispatch_contiguous(c10::MemoryFormat::Contiguous)
                                                      : viewed.contiguous());
  }

  // 8. Output setup: an allocation per output, unless pre-allocated outputs are reused. 2.11
  //    allocates float32 and converts with .to(dtype) (dispatched even when that is float32);
  //    2.13 allocates in the output's dtype. (.contiguous() on the new tensor, which both do,
  //    dispatches nothing.)
  input_profile.reset();
  auto output_profile = step_profile(*engine, "_output_profile.trace");
  //    2.14: an aliased output is not allocated, the bound input takes its place (the caller's storage,
  //    written through); an engine with aliased outputs never reuses pre-allocated outputs.
  std::vector<at::Tensor> outputs;
  const bool aliased = !engine->aliased_outputs.empty();
  const bool reuse = engine->use_pre_allocated_outputs && !aliased &&
                     engine->pre_allocated_outputs.size() == static_cast<size_t>(p.num_outputs) &&
                     engine->pre_allocated_outputs[0].sizes() == bound_inputs[0].sizes();
  if (reuse) {
    outputs = engine->pre_allocated_outputs;
  } else {
    const at::TensorOptions like = bound_inputs[0].options();
    for (int64_t k = 0; k < p.num_outputs; ++k) {
      if (const auto source = engine->aliased_input_of(k)) {
        const at::Tensor& in = bound_inputs[static_cast<size_t>(*source)];
        TORCH_CHECK(in.sizes() == bound_inputs[0].sizes(), "Aliased output ", engine->out_binding_names[k],
                    " shape (", bound_inputs[0].sizes(), ") does not match source input ",
                    engine->in_binding_names[*source], " shape (", in.sizes(), ")");
        outputs.push_back(in);
      } else if (rt.converts_outputs) {
        outputs.push_back(at::empty(bound_inputs[0].sizes(), at::TensorOptions().device(like.device()))
                              .to(like.dtype().toScalarType()));
      } else {
        outputs.push_back(at::empty(bound_inputs[0].sizes(), like));
      }
    }
    if (engine->use_pre_allocated_outputs && !aliased) engine->pre_allocated_outputs = outputs;
  }

#ifdef STANDIN_WITH_CUDA
  // 5. The stream choice, made here for both versions (2.13 makes it before input setup, 2.11
  //    after output setup; it dispatches no op, so no observer can tell).
  std::optional<CallStreams> streams;
  if (on_cuda) streams = choose_streams(*engine);
#endif

  output_profile.reset();

  // 9. Enqueue on the engine's stream: launch the plan (host cost = launch cost).
  {
    auto enqueue_profile = step_profile(*engine, "_enqueue_profile.trace");
#ifdef STANDIN_WITH_CUDA
    std::optional<c10::cuda::CUDAStreamGuard> on_engine_stream;
    if (streams) {
      on_engine_stream.emplace(streams->engine);
      if (streams->hand_off) {
        at::cuda::CUDAEvent caller_ready;
        caller_ready.record(streams->caller);
        caller_ready.block(streams->engine);
      }
    }
#endif
    wait_at_enqueue_gate();
    spin_for_us(p.host_us);
    if (p.fail_every > 0 && call_index % p.fail_every == 0) {
      throw std::runtime_error("[Error thrown at core/runtime/execute_engine.cpp] Failed to execute TRT engine " +
                               engine->name + " (stand-in fault injection: every " + std::to_string(p.fail_every) +
                               " calls)");
    }
    run_layers(*engine);
    run_plan(p, bound_inputs, outputs, aliased);
  }
#ifdef STANDIN_WITH_CUDA
  if (streams && streams->hand_off) {  // engine -> caller
    at::cuda::CUDAEvent engine_done;
    engine_done.record(streams->engine);
    engine_done.block(streams->caller);
  }
#endif
  // With profiling on: the profiler's layer trace (all profiled calls so far) and the inspector's
  // layer information, rewritten after every call.
  if (engine->profile_execution && engine->profiler != nullptr) {
    write_layer_trace(profile_file(*engine, "_engine_execution_profile.trace"), engine->name, *engine->profiler);
    std::ofstream(profile_file(*engine, "_layer_information.json")) << layer_information(*engine);
  }
  return outputs;
}

}  // namespace trt_standin
