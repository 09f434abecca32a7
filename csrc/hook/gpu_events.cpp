#include "hook/gpu_events.h"

#include <atomic>

#include "common/clock.h"
#include "hook/engine_stream_trace.h"
#include "stats/gpu_sampling.h"
#include "hook/gpu_self_time.h"

#ifdef TRT_TRACE_WITH_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#include <vector>

#include "hook/gpu_event_pool.h"
#endif

namespace trt_trace {
namespace gpu {

Switch enabled{true};

#ifdef TRT_TRACE_WITH_CUDA

bool available() noexcept { return true; }

bool set_enabled(bool on) {
  enabled.set(on);
  return true;
}

bool begin_call(uint16_t device, CallEvents* ev, bool engine_stream_only) noexcept {
  if (device >= kMaxDevices) return false;
  const SelfTimer timer(kSelfBegin);
  try {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    ev->stream = static_cast<uint32_t>(stream.id());
    ev->caller_stream = stream.stream();
    // The caller's start event goes on whatever the runtime does next: where it hands the work to a
    // stream of its own, a call made engine-stream-only drops it for the engine stream's pair (end_call);
    // where it does not, it is this call's span with the end event on the same stream. (Recording no
    // start here, and counting on a hand-off like the last call's, lost the span of every call whose
    // runtime changed its mind: 2.13 after the caller left the default stream.)
    ev->caller_end_optional = engine_stream_only;
    DeviceOf on_device(stream);
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.stream(), &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    if (status != cudaStreamCaptureStatusNone) {
      ev->captured = true;  // recording an event now would break the capture
      return false;
    }
    cudaEvent_t start = acquire_event(device);
    if (start == nullptr) return false;
    if (cudaEventRecord(start, stream.stream()) != cudaSuccess) {
      cudaGetLastError();
      give_back(device, start);
      return false;
    }
    ev->start = start;
    watch_engine_stream(ev, device);
    return true;
  } catch (...) {
    return false;
  }
}

// The caller-stream end event, on the device's current stream (the runtime's stream guard is undone
// by now). False: none recorded.
bool record_caller_end(uint16_t device, CallEvents* ev) noexcept {
  try {
    const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
    DeviceOf on_device(stream);
    cudaEvent_t end = acquire_event(device);
    if (end != nullptr && cudaEventRecord(end, stream.stream()) == cudaSuccess) {
      ev->end = end;
      return true;
    }
    cudaGetLastError();
    give_back(device, end);
  } catch (...) {
  }
  return false;
}

bool end_call(uint16_t device, CallEvents* ev) noexcept {
  stop_watching(ev);
  if (ev->start == nullptr && ev->engine_start == nullptr) return false;  // nothing recorded
  const SelfTimer timer(kSelfEnd);
  const bool engine_pair = ev->engine_start != nullptr && ev->engine_end != nullptr;
  if (engine_pair) {
    try {  // the engine stream's id, for the span's `stream`
      ev->engine_stream_id = static_cast<uint32_t>(
          c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(ev->engine_stream), static_cast<c10::DeviceIndex>(device))
              .id());
    } catch (...) {
    }
  } else {
    give_back(device, static_cast<cudaEvent_t>(ev->engine_start));
    ev->engine_start = nullptr;
  }
  if (engine_pair && ev->caller_end_optional) {
    // Engine-stream-only: the engine's own span; the caller's start, never ended, goes back unused.
    ev->caller_pair_skipped = true;
  } else if (ev->start != nullptr && record_caller_end(device, ev)) {
    ev->on_engine_stream = engine_pair;
    return true;
  }
  if (!engine_pair) {
    release(device, ev);
    return false;
  }
  // No caller-stream pair (skipped, or its end not recorded): the engine's own span alone, as start/end.
  give_back(device, static_cast<cudaEvent_t>(ev->start));
  ev->start = ev->engine_start;
  ev->end = ev->engine_end;
  ev->engine_start = ev->engine_end = nullptr;
  ev->stream = ev->engine_stream_id;
  ev->on_engine_stream = false;
  ev->engine_only = true;
  return true;
}

void release(uint16_t device, CallEvents* ev) noexcept {
  stop_watching(ev);
  if (device >= kMaxDevices) return;
  give_back(device, static_cast<cudaEvent_t>(ev->start));
  give_back(device, static_cast<cudaEvent_t>(ev->end));
  give_back(device, static_cast<cudaEvent_t>(ev->engine_start));
  give_back(device, static_cast<cudaEvent_t>(ev->engine_end));
  ev->start = ev->end = ev->engine_start = ev->engine_end = nullptr;
}

double event_pair_host_ns(uint16_t device, int64_t calls, int64_t every, int64_t hand_off, int64_t kernels,
                          int64_t scrub_kib) noexcept {
  if (calls <= 0 || device >= kMaxDevices || every < 1 || hand_off < kNoHandOff || hand_off > kHandOffPerCall ||
      kernels < 0 || scrub_kib < 0) {
    return -1;
  }
  try {
    std::vector<CallEvents> calls_events(static_cast<size_t>(calls));
    const auto index = static_cast<c10::DeviceIndex>(device);
    // The engine's work: `kernels` small kernel launches per call on the stream it runs on.
    const at::Tensor work = kernels > 0 ? at::zeros({256}, at::TensorOptions().device(at::kCUDA, index)) : at::Tensor();
    // The runtime's own hand-off, as Torch-TensorRT 2.11 makes it for an engine on a stream of its
    // own: the engine's stream waits for the caller's, the caller's for the engine's, through c10
    // events (which c10's GPU trace reports to engine_stream_trace.h).
    // kHandOffPerCall: the two events are made and destroyed by each call, as the runtime's are.
    std::optional<c10::cuda::CUDAStream> engine_stream;
    std::optional<at::cuda::CUDAEvent> ready, done;
    if (hand_off != kNoHandOff) engine_stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
    // The rest of a real call's host work, as far as caches see it: `scrub_kib` KiB written between
    // calls (in both passes), which evicts what the CUDA runtime's calls had left in them.
    std::vector<char> scrub(static_cast<size_t>(scrub_kib) * 1024);
    // The calls' stream: the current one, which nothing in the loop changes (looked up once, outside
    // the timed loop).
    const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream(index);
    // One pass of `calls` calls, traced (the hook's GPU-event work behind its sampling decision) or
    // not; host ns, or -1 if an event could not be recorded.
    const auto pass = [&](bool traced) -> int64_t {
      bool ok = true;
      std::atomic<int64_t> countdown{0}, engine_stream_left{0};
      const int64_t t0 = now_ns();
      for (CallEvents& ev : calls_events) {
        ev = CallEvents{};
        // As CallScope decides: whether the call is measured, and which pairs it records.
        const bool sampled = traced && (every == 1 || take_sample(countdown, every));
        const bool only = sampled && engine_stream_only(engine_stream_left, /*epoch=*/0);
        if (sampled && !begin_call(device, &ev, only)) ok = false;
        if (hand_off != kNoHandOff) {
          if (hand_off == kHandOffPerCall || !ready) ready.emplace();
          ready->record(caller);
          ready->block(*engine_stream);
          if (hand_off == kHandOffPerCall) ready.reset();  // the runtime's go out of scope here
        }
        if (kernels > 0) {
          c10::cuda::CUDAStreamGuard on(hand_off != kNoHandOff ? *engine_stream : caller);
          for (int64_t k = 0; k < kernels; ++k) work.add_(1.0);
        }
        if (hand_off != kNoHandOff) {
          if (hand_off == kHandOffPerCall || !done) done.emplace();
          done->record(*engine_stream);
          done->block(caller);
          if (hand_off == kHandOffPerCall) done.reset();
        }
        if (sampled && ok) {
          if (!end_call(device, &ev)) ok = false;
          saw_engine_stream(engine_stream_left, /*epoch=*/0, only, ev.on_engine_stream || ev.engine_only);
        }
        volatile char* line = scrub.data();  // volatile: the writes are the point
        for (size_t i = 0; i < scrub.size(); i += 64) line[i] = static_cast<char>(line[i] + 1);
        if (!ok) break;
      }
      const int64_t ns = now_ns() - t0;
      c10::cuda::CUDAGuard guard(index);
      cudaDeviceSynchronize();
      for (CallEvents& ev : calls_events) release(device, &ev);
      return ok ? ns : -1;
    };
    // The first traced pass creates the pool's events (a one-off cost, not a per-call one); the
    // timed one reuses them once completed, as calls do after the drainer resolved their events.
    if (pass(true) < 0) return -1;
    const int64_t traced = pass(true);
    if (traced < 0) return -1;
    // With a hand-off, kernels or a scrub, the same calls without the hook's work are timed too and taken off.
    const int64_t base = hand_off != kNoHandOff || kernels > 0 || scrub_kib > 0 ? pass(false) : 0;
    return static_cast<double>(traced - base) / static_cast<double>(calls);
  } catch (...) {
    return -1;
  }
}

#else  // CPU-only build: no GPU spans

bool available() noexcept { return false; }
bool set_enabled(bool on) {
  enabled.set(on);
  return false;
}
bool begin_call(uint16_t, CallEvents*, bool) noexcept { return false; }
bool end_call(uint16_t, CallEvents*) noexcept { return false; }
void release(uint16_t, CallEvents*) noexcept {}
double event_pair_host_ns(uint16_t, int64_t, int64_t, int64_t, int64_t, int64_t) noexcept { return -1; }

#endif

}  // namespace gpu
}  // namespace trt_trace
