// torch.ops.trt_trace.* for the tests and the benchmarks only: synthetic records, the record layout and the
// phase names for the checks against trt_trace/schema/records.py and trt_trace/schema/phases.py, the private switches a
// test sets one by one (a session sets them whole: session/session_control.h), the GPU
// timing's self-timing, per-layer timing's private folder and layer-trace parser, and the native encoders of a
// Perfetto trace's non-slice packets. Nothing in the package's own code paths calls these.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "buffer/thread_rings.h"
#include "common/phases.h"
#include "common/record.h"
#include "engines/engine_registry.h"
#include "format/json_value.h"
#include "format/perfetto_track_packets.h"
#include "format/utf8_text.h"
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

bool gpu_stream_trace_installed() { return gpu::engine_stream_trace_installed(); }

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
  gpu::self_timing.set(enable);
  const gpu::SelfTimes t = gpu::take_self_times();
  std::vector<int64_t> out(t.ns, t.ns + gpu::kSelfSteps);
  out.insert(out.end(), t.count, t.count + gpu::kSelfSteps);
  return out;
}

// Test and benchmark support: count records pushed from the calling thread, as
// a traced call would, with begin_ns = first_seq .. first_seq+count-1.
void push_synthetic(int64_t count, int64_t engine_id, int64_t first_seq) {
  for (int64_t i = 0; i < count; ++i) {
    const Record r = span_record(Phase::kCall, first_seq + i, first_seq + i, static_cast<uint64_t>(first_seq + i),
                                 static_cast<uint32_t>(engine_id), 0, 0, kNoDevice, 0);
    ThreadRings::instance().push(&r, 1);
  }
}

// Layout check for trt_trace/schema/records.py: per record kind (common/record.h TRT_TRACE_RECORD_KINDS),
// "kind:size" and then "field:offset:size" for each field in order, from the one list that declares them.
std::vector<std::string> record_layout() {
  std::vector<std::string> out;
#define TRT_TRACE_EXPORT_FIELD(type, name) \
  out.push_back(std::string(#name) + ":" + std::to_string(offsetof(K, name)) + ":" + std::to_string(sizeof(type)));
#define TRT_TRACE_EXPORT_KIND(Struct, FIELDS, py)                          \
  {                                                                        \
    using K = Struct;                                                      \
    out.push_back(std::string(py) + ":" + std::to_string(sizeof(K)));     \
    FIELDS(TRT_TRACE_EXPORT_FIELD)                                         \
  }
  TRT_TRACE_RECORD_KINDS(TRT_TRACE_EXPORT_KIND)
#undef TRT_TRACE_EXPORT_KIND
#undef TRT_TRACE_EXPORT_FIELD
  return out;
}

// The slice names by Phase value (common/phases.h), for the check against trt_trace/schema/phases.py.
std::vector<std::string> phase_names() { return {std::begin(kPhaseNames), std::end(kPhaseNames)}; }
// The values the phase list gives the kinds Python also reads (phases.py derives them from its own list):
// how many host phases, kLayer, kInference.
std::vector<int64_t> record_kinds() {
  return {kNumHostPhases, static_cast<int64_t>(Phase::kLayer), static_cast<int64_t>(Phase::kInference)};
}

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

// A JSON-like value from the test's pre-order program (tests/test_perfetto_track_packets.py): ints[*at] is
// the kind, then 0 null; 1 bool b; 2 int v; 3 uint bits (the encoder's uint64 entry point, whatever the
// value); 4 double (index into doubles); 5 string (index into texts); 6 dict n, then n times (key's text
// index, value); 7 list n, then n values.
perfetto_packets::Value value_of(const std::vector<int64_t>& ints, size_t* at, const std::vector<double>& doubles,
                                 const std::vector<std::string>& texts) {
  using perfetto_packets::Value;
  const auto next = [&] {
    TORCH_CHECK(*at < ints.size(), "value program cut short");
    return ints[(*at)++];
  };
  switch (next()) {
    case 0:
      return Value::null();
    case 1:
      return Value::of_bool(next() != 0);
    case 2:
      return Value::of_int(next());
    case 3:
      return Value::of_uint(static_cast<uint64_t>(next()));
    case 4:
      return Value::of_double(doubles.at(static_cast<size_t>(next())));
    case 5:
      return Value::of_string(texts.at(static_cast<size_t>(next())));
    case 6: {
      Value dict = Value::dict();
      for (int64_t n = next(); n > 0; --n) {
        std::string key = texts.at(static_cast<size_t>(next()));
        dict.add(std::move(key), value_of(ints, at, doubles, texts));
      }
      return dict;
    }
    case 7: {
      Value list = Value::list();
      for (int64_t n = next(); n > 0; --n) list.push(value_of(ints, at, doubles, texts));
      return list;
    }
    default:
      TORCH_CHECK(false, "unknown value kind");
  }
}

// One of format/perfetto_track_packets.h's encoders, for the byte-for-byte comparison with
// trt_trace/io/writers/perfetto_trace.py. Strings come as bytes (`text`, cut at `text_ends`) so that a test
// can hand over any bytes, not only valid UTF-8; numbers as int64 (a uint64 as its bits). `which`:
// "frame" [] text; "utf8_text" [] text; "clock_snapshot" [seq, boot, mono, real]; "clock_now" [seq];
// "sequence_start" [seq, n_phases] phases..., metadata name, annotation names...; "track" [seq, uuid,
// parent, rank, has_children, has_engine_iid, engine_iid] name; "process" [seq, uuid, pid] name;
// "layer_names" [seq, iid_base, annotation_iid, ids...] names...; "metadata" [seq, ts, track, name_iid,
// dict program (value_of)]; "metadata_bytes" [seq, ts, track, name_iid] annotation bytes;
// "split_end" [seq, ts, track, name_iid, part, events] next_part. Returns the bytes (uint8).
at::Tensor perfetto_track_packet(const std::string& which, const std::vector<int64_t>& ints,
                                 const std::vector<double>& doubles, const at::Tensor& text,
                                 const std::vector<int64_t>& text_ends) {
  namespace pp = perfetto_packets;
  TORCH_CHECK(text.dtype() == at::kByte && text.dim() == 1, "text: one-dimensional uint8");
  const at::Tensor text_c = text.contiguous();
  const char* blob = reinterpret_cast<const char*>(text_c.data_ptr<uint8_t>());
  std::vector<std::string> texts;
  int64_t start = 0;
  for (int64_t end : text_ends) {
    TORCH_CHECK(start <= end && end <= text.numel(), "text_ends must rise within text");
    texts.emplace_back(blob + start, static_cast<size_t>(end - start));
    start = end;
  }
  const auto need = [&](size_t n_ints, size_t n_texts) {
    TORCH_CHECK(ints.size() >= n_ints && texts.size() >= n_texts, which, ": ", n_ints, " ints and ", n_texts,
                " texts expected");
  };
  const auto u = [&](size_t i) { return static_cast<uint64_t>(ints[i]); };
  const auto seq = [&] { return static_cast<uint32_t>(ints[0]); };
  std::string out;
  if (which == "frame") {
    need(0, 1);
    pp::frame(out, texts[0]);
  } else if (which == "utf8_text") {
    need(0, 1);
    out = utf8_text(texts[0]);
  } else if (which == "clock_snapshot") {
    need(4, 0);
    pp::clock_snapshot(out, seq(), u(1), u(2), u(3));
  } else if (which == "clock_now") {
    need(1, 0);
    pp::clock_snapshot(out, seq());
  } else if (which == "sequence_start") {
    need(2, static_cast<size_t>(ints[1]) + 1);
    const auto phases_end = texts.begin() + ints[1];
    pp::sequence_start(out, seq(), {texts.begin(), phases_end}, *phases_end, {phases_end + 1, texts.end()});
  } else if (which == "track") {
    need(7, 1);
    pp::track_descriptor(out, seq(), u(1), texts[0], u(2), static_cast<int32_t>(ints[3]), ints[4] != 0,
                         ints[5] != 0 ? std::optional<uint64_t>(u(6)) : std::nullopt);
  } else if (which == "process") {
    need(3, 1);
    pp::process_descriptor(out, seq(), u(1), static_cast<int32_t>(ints[2]), texts[0]);
  } else if (which == "layer_names") {
    need(3, 0);
    std::vector<uint32_t> ids;
    for (size_t i = 3; i < ints.size(); ++i) ids.push_back(static_cast<uint32_t>(ints[i]));
    pp::layer_names(out, seq(), ids, texts, u(1), u(2));
  } else if (which == "metadata") {
    need(5, 0);
    size_t at = 4;
    const pp::Value dict = value_of(ints, &at, doubles, texts);
    TORCH_CHECK(dict.kind == pp::Value::Kind::kDict && at == ints.size(), "metadata: one dict program expected");
    pp::metadata_instant(out, seq(), u(1), u(2), u(3), pp::debug_annotations(dict.entries));
  } else if (which == "metadata_bytes") {
    need(4, 1);
    pp::metadata_instant(out, seq(), u(1), u(2), u(3), texts[0]);
  } else if (which == "split_end") {
    need(6, 1);
    pp::metadata_instant(out, seq(), u(1), u(2), u(3), pp::split_end_annotations(texts[0], ints[4], u(5)));
  } else {
    TORCH_CHECK(false, "perfetto_track_packet: unknown encoder ", which);
  }
  at::Tensor result = at::empty({static_cast<int64_t>(out.size())}, at::kByte);
  if (!out.empty()) std::memcpy(result.data_ptr<uint8_t>(), out.data(), out.size());
  return result;
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
  // Whether GPU spans may move to an engine's own stream (Settings.engine_stream_spans).
  m.def("_set_engine_stream_spans(bool enable) -> ()", [](bool enable) { gpu::engine_stream_spans.set(enable); });
  m.def("_get_engine_stream_spans() -> bool", [] { return gpu::engine_stream_spans(); });
  // The GPU timing switch itself, also in a CPU-only build.
  m.def("_gpu_timing_switch() -> bool", [] { return gpu::enabled(); });
  m.def("_profiler_op_callbacks() -> bool", [] { return profiler_op_callbacks_installed(); });
  m.def("_gpu_event_host_ns(int device, int calls, int every=1, int hand_off=0, int kernels=0, int scrub_kib=0) -> float",
        &gpu_event_host_ns);
  m.def("_gpu_self_time(bool enable) -> int[]", &gpu_self_time);
  m.def("_gpu_stream_trace_installed() -> bool", &gpu_stream_trace_installed);
  m.def("_set_buffer_capacity(int records) -> ()", &set_buffer_capacity);
  m.def("_buffer_capacity() -> int", &buffer_capacity);
  m.def("_parse_engine_name(str text) -> str", &trt_trace::parse_engine_name);
  // A JSON text read into a metadata value and written back (format/json_value.h); None where it does not parse.
  m.def("_json_value_roundtrip(str text) -> str?", [](const std::string& text) -> std::optional<std::string> {
    const auto value = trt_trace::json_value::parse(text);
    if (!value) return std::nullopt;
    return trt_trace::json_value::to_json(*value);
  });
  m.def("_push_synthetic(int count, int engine_id, int first_seq) -> ()", &push_synthetic);
  m.def("_record_layout() -> str[]", &record_layout);
  m.def("_phase_names() -> str[]", &phase_names);
  m.def("_record_kinds() -> int[]", &record_kinds);
  // Per-layer timing: the folder the runtime writes its profile files into now ("" when none), the parser.
  m.def("_layer_private_folder() -> str", [] { return layers::private_folder(); });
  m.def("_parse_layer_trace(str text) -> (str[], int[])", &parse_layer_trace);
  // Perfetto's non-slice packets as the native writer encodes them (format/perfetto_track_packets.h).
  m.def("_perfetto_track_packet(str which, int[] ints, float[] doubles, Tensor text, int[] text_ends) -> Tensor",
        &perfetto_track_packet);
  // The metrics text of given counters, and its numbers.
  m.def("_metrics_text_of(Tensor name_bytes, Tensor name_ends, Tensor stats, Tensor hist_total, Tensor hist_gpu, "
        "int dropped) -> Tensor", &metrics_text_of);
  m.def("_metrics_sample_values(float[] values) -> str", &metrics_sample_values);
}
