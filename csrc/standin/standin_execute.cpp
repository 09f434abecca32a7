// The stand-in's execute_engine, in the real runtime's order. The aten ops it
// dispatches in steps 1, 2, 7 and 8 are the ones the tracer's phase model
// observes; the "engine" computation runs hidden from observers of the
// dispatcher, as TensorRT's enqueueV3 dispatches no aten op. Where Torch-TensorRT
// 2.11 and 2.13 differ (inputs off the engine's device, streams), the call follows
// the version its engine was made under (standin_runtime_version.h).
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <thread>

#include "standin/standin_engine.h"

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
void run_plan(const EngineParams& p, const std::vector<at::Tensor>& inputs, std::vector<at::Tensor>& outputs) {
  if (run_plan_cpu_float(p, inputs, outputs)) return;
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

  // 2. Dynamic workspace, before the lock (Dynamic strategy only).
  at::Tensor workspace;
  if (engine->dynamic_allocation && p.workspace_bytes > 0) {
    workspace = at::empty({p.workspace_bytes}, at::TensorOptions().dtype(at::kByte).device(device));
  }

  // 3. The per-engine lock.
  std::unique_lock<std::mutex> lock(engine->mu);
  const int64_t call_index = ++engine->calls;

  // 6. Shape key from the input sizes.
  std::string shape_key;
  for (const auto& in : inputs) shape_key += c10::str(in.sizes());
  engine->last_shape_key = shape_key;

  // 7. Input setup: view(shape).contiguous() per input.
  std::vector<at::Tensor> bound_inputs;
  bound_inputs.reserve(inputs.size());
  for (const auto& in : inputs) {
    TORCH_CHECK(in.device().type() == device.type(), "Expected input tensors to have device ",
                c10::DeviceTypeName(device.type(), /*lower_case=*/true), ", found device ", in.device());
    at::Tensor viewed = in.view(in.sizes());
    bound_inputs.push_back(p.dispatch_contiguous != 0 ? viewed.__dispatch_contiguous(c10::MemoryFormat::Contiguous)
                                                      : viewed.contiguous());
  }

  // 8. Output setup: an allocation per output, unless pre-allocated outputs are reused. 2.11
  //    allocates float32 and converts with .to(dtype) (dispatched even when that is float32);
  //    2.13 allocates in the output's dtype. (.contiguous() on the new tensor, which both do,
  //    dispatches nothing.)
  std::vector<at::Tensor> outputs;
  const bool reuse = engine->use_pre_allocated_outputs &&
                     engine->pre_allocated_outputs.size() == static_cast<size_t>(p.num_outputs) &&
                     engine->pre_allocated_outputs[0].sizes() == bound_inputs[0].sizes();
  if (reuse) {
    outputs = engine->pre_allocated_outputs;
  } else {
    const at::TensorOptions like = bound_inputs[0].options();
    for (int64_t k = 0; k < p.num_outputs; ++k) {
      if (rt.converts_outputs) {
        outputs.push_back(at::empty(bound_inputs[0].sizes(), at::TensorOptions().device(like.device()))
                              .to(like.dtype().toScalarType()));
      } else {
        outputs.push_back(at::empty(bound_inputs[0].sizes(), like));
      }
    }
    if (engine->use_pre_allocated_outputs) engine->pre_allocated_outputs = outputs;
  }

#ifdef STANDIN_WITH_CUDA
  // 5. The stream choice, made here for both versions (2.13 makes it before input setup, 2.11
  //    after output setup; it dispatches no op, so no observer can tell).
  std::optional<CallStreams> streams;
  if (on_cuda) streams = choose_streams(*engine);
#endif

  // 9. Enqueue on the engine's stream: launch the plan (host cost = launch cost).
  {
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
    run_plan(p, bound_inputs, outputs);
  }
#ifdef STANDIN_WITH_CUDA
  if (streams && streams->hand_off) {  // engine -> caller
    at::cuda::CUDAEvent engine_done;
    engine_done.record(streams->engine);
    engine_done.block(streams->caller);
  }
#endif
  return outputs;
}

}  // namespace trt_standin
