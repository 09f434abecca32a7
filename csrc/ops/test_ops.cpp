// torch.ops.trt_trace.* for the tests and the benchmarks only: synthetic records, the record layout and the
// phase names for the checks against trt_trace/records.py and trt_trace/phases.py, the private switches a
// test sets one by one (a session sets them whole: _apply_settings in trt_trace_ops.cpp), the GPU
// timing's self-timing, and per-layer timing's private folder and layer-trace parser. Nothing in the package's own code paths calls these.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "buffer/thread_rings.h"
#include "common/phases.h"
#include "common/record.h"
#include "engines/engine_registry.h"
#include "hook/engine_stream_trace.h"
#include "hook/gpu_events.h"
#include "hook/gpu_self_time.h"
#include "integrations/profiler_scopes.h"
#include "layers/private_folder.h"
#include "layers/runtime_profiling.h"
#include "metrics/exposition_text.h"
#include "metrics/sample_values.h"
#include "stats/duration_histogram.h"

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

// Per-layer timing's parser: (names, ns) of a layer trace as the runtime writes it; raises if it is not one.
std::tuple<std::vector<std::string>, std::vector<int64_t>> parse_layer_trace(const std::string& text) {
  std::vector<layers::TracedLayer> traced;
  TORCH_CHECK(layers::parse_layer_trace(text, &traced), "not a layer trace of Torch-TensorRT's profiler");
  std::vector<std::string> names;
  std::vector<int64_t> ns;
  for (const auto& l : traced) {
    names.emplace_back(l.name);
    ns.push_back(l.ns);
  }
  return {names, ns};
}

// The metrics text of counters given as arguments (tests/test_metrics_text.py: the native text of recorded
// counters against prometheus_client's): names as UTF-8 bytes and their end offsets (any bytes, valid
// UTF-8 or not), stats [ids, columns], histograms [ids, buckets] each; the text as bytes.
at::Tensor metrics_text_of(const at::Tensor& name_bytes, const at::Tensor& name_ends, const at::Tensor& stats,
                           const at::Tensor& hist_total, const at::Tensor& hist_gpu, int64_t dropped) {
  metrics::EngineCounters c;
  const at::Tensor bytes = name_bytes.to(at::kByte).contiguous();
  const at::Tensor ends = name_ends.to(at::kLong).contiguous();
  int64_t begin = 0;
  for (int64_t i = 0; i < ends.numel(); ++i) {
    const int64_t end = ends.data_ptr<int64_t>()[i];
    TORCH_CHECK(begin <= end && end <= bytes.numel(), "trt_trace::_metrics_text_of: name_ends out of order");
    c.names.emplace_back(reinterpret_cast<const char*>(bytes.data_ptr<uint8_t>()) + begin, end - begin);
    begin = end;
  }
  TORCH_CHECK(stats.dim() == 2 && stats.size(1) == kNumStatColumns, "trt_trace::_metrics_text_of: stats must be "
              "[ids, ", kNumStatColumns, "]");
  const at::Tensor s = stats.to(at::kLong).contiguous();
  c.stats.resize(s.size(0));
  for (int64_t i = 0; i < s.size(0); ++i) {
    for (int k = 0; k < kNumStatColumns; ++k) c.stats[i][k] = s.data_ptr<int64_t>()[i * kNumStatColumns + k];
  }
  const at::Tensor* hists[] = {&hist_total, &hist_gpu};
  for (int series = 0; series < kNumHistSeries; ++series) {
    const at::Tensor h = hists[series]->to(at::kLong).contiguous();
    TORCH_CHECK(h.dim() == 2 && h.size(1) == histogram::kBuckets, "trt_trace::_metrics_text_of: a histogram must be "
                "[ids, ", histogram::kBuckets, "]");
    c.histograms[series].assign(h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel());
  }
  c.dropped_events = static_cast<uint64_t>(dropped);
  std::string text;
  metrics::append_exposition_text(text, c);
  at::Tensor out = at::empty({static_cast<int64_t>(text.size())}, at::kByte);
  std::memcpy(out.data_ptr<uint8_t>(), text.data(), text.size());
  return out;
}

// Each value as a sample's number in the metrics text, one a line (against prometheus_client's floatToGoString).
std::string metrics_sample_values(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    metrics::append_sample_value(out, v);
    out += '\n';
  }
  return out;
}

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
  // Per-layer timing: the folder the runtime writes its profile files into now ("" when none), the parser.
  m.def("_layer_private_folder() -> str", [] { return layers::private_folder(); });
  m.def("_parse_layer_trace(str text) -> (str[], int[])", &parse_layer_trace);
  // The metrics text of given counters, and its numbers.
  m.def("_metrics_text_of(Tensor name_bytes, Tensor name_ends, Tensor stats, Tensor hist_total, Tensor hist_gpu, "
        "int dropped) -> Tensor", &metrics_text_of);
  m.def("_metrics_sample_values(float[] values) -> str", &metrics_sample_values);
}
