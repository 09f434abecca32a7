// torch.ops.trt_trace.* for the tests and the benchmarks only: synthetic records, the record layout and the
// phase names for the checks against trt_trace/records.py and trt_trace/phases.py, the private switches a
// test sets one by one (a session sets them whole: _apply_settings in trt_trace_ops.cpp), and the GPU
// timing's self-timing. Nothing in the package's own code paths calls these.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstddef>
#include <string>
#include <vector>

#include "buffer/thread_rings.h"
#include "common/phases.h"
#include "common/record.h"
#include "engines/engine_registry.h"
#include "hook/engine_stream_trace.h"
#include "hook/gpu_events.h"
#include "hook/gpu_self_time.h"
#include "integrations/profiler_scopes.h"

namespace trt_trace {
namespace {

// The GPU timing switch itself, also in a CPU-only build.
bool gpu_timing_switch() { return gpu::enabled(); }
bool gpu_stream_trace_installed() { return gpu::engine_stream_trace_installed(); }
// Whether GPU spans may move to an engine's own stream (Settings.engine_stream_spans).
void set_engine_stream_spans(bool enable) { gpu::g_engine_stream_spans.store(enable, std::memory_order_relaxed); }
bool get_engine_stream_spans() { return gpu::g_engine_stream_spans.load(std::memory_order_relaxed); }

void set_buffer_capacity(int64_t records) {
  TORCH_CHECK(records > 0, "trt_trace::set_buffer_capacity: records must be positive");
  ThreadRings::instance().set_capacity(static_cast<size_t>(records));
}

int64_t buffer_capacity() { return static_cast<int64_t>(ThreadRings::instance().capacity()); }

double gpu_event_host_ns(int64_t device, int64_t calls, int64_t every, int64_t hand_off, int64_t kernels,
                         int64_t scrub_kib) {
  if (device < 0 || device >= kNoDevice) return -1;
  return gpu::event_pair_host_ns(static_cast<uint16_t>(device), calls, every, hand_off, kernels, scrub_kib);
}

// Switches GPU timing's self-timing (gpu_self_time.h) and returns the sums since the last call:
// ns per step (begin, engine start, engine end, end), then the number of times each ran.
std::vector<int64_t> gpu_self_time(bool enable) {
  gpu::g_self_timing.store(enable, std::memory_order_relaxed);
  const gpu::SelfTimes t = gpu::take_self_times();
  std::vector<int64_t> out(t.ns, t.ns + gpu::kSelfSteps);
  out.insert(out.end(), t.count, t.count + gpu::kSelfSteps);
  return out;
}

// Test and benchmark support: count records pushed from the calling thread, as
// a traced call would, with begin_ns = first_seq .. first_seq+count-1.
void push_synthetic(int64_t count, int64_t engine_id, int64_t first_seq) {
  for (int64_t i = 0; i < count; ++i) {
    Record r{first_seq + i, first_seq + i, static_cast<uint64_t>(first_seq + i), static_cast<uint32_t>(engine_id),
             0, static_cast<uint8_t>(Phase::kCall), 0, kNoDevice, 0};
    ThreadRings::instance().push(&r, 1);
  }
}

// Layout check for trt_trace/records.py: size, then field offsets in order.
std::vector<int64_t> record_layout() {
  return {sizeof(Record),
          offsetof(Record, begin_ns),
          offsetof(Record, end_ns),
          offsetof(Record, call_id),
          offsetof(Record, engine_id),
          offsetof(Record, thread_id),
          offsetof(Record, phase),
          offsetof(Record, flags),
          offsetof(Record, device),
          offsetof(Record, stream)};
}

// The slice names by Phase value (common/phases.h), for the check against trt_trace/phases.py.
std::vector<std::string> phase_names() { return {std::begin(kPhaseNames), std::end(kPhaseNames)}; }

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace;
  m.def("_set_engine_stream_spans(bool enable) -> ()", &set_engine_stream_spans);
  m.def("_get_engine_stream_spans() -> bool", &get_engine_stream_spans);
  m.def("_gpu_timing_switch() -> bool", &gpu_timing_switch);
  m.def("_profiler_op_callbacks() -> bool", [] { return profiler_op_callbacks_installed(); });
  m.def("_gpu_event_host_ns(int device, int calls, int every=1, int hand_off=0, int kernels=0, int scrub_kib=0) -> float",
        &gpu_event_host_ns);
  m.def("_gpu_self_time(bool enable) -> int[]", &gpu_self_time);
  m.def("_gpu_stream_trace_installed() -> bool", &gpu_stream_trace_installed);
  m.def("_set_buffer_capacity(int records) -> ()", &set_buffer_capacity);
  m.def("_buffer_capacity() -> int", &buffer_capacity);
  m.def("_parse_engine_name(str text) -> str", &trt_trace::parse_engine_name);
  m.def("_push_synthetic(int count, int engine_id, int first_seq) -> ()", &push_synthetic);
  m.def("_record_layout() -> int[]", &record_layout);
  m.def("_phase_names() -> str[]", &phase_names);
}
