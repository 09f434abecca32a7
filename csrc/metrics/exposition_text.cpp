#include "metrics/exposition_text.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "buffer/thread_rings.h"
#include "common/phases.h"
#include "engines/engine_registry.h"
#include "metrics/sample_values.h"
#include "stats/duration_histogram.h"

namespace trt_trace {
namespace metrics {
namespace {

constexpr int kB = histogram::kBuckets;
constexpr int kNumBounds = kLastBoundExp - kFirstBoundExp + 1;

// One engine name's sums over the ids that carry it.
struct NamedEngine {
  std::string_view name;
  std::array<int64_t, kNumStatColumns> stats{};
  std::array<std::vector<int64_t>, kNumHistSeries> histograms;
  bool called = false;
};

std::vector<NamedEngine> by_name(const EngineCounters& c) {
  size_t n = c.names.size();
  n = std::min(n, c.stats.size());
  for (const auto& h : c.histograms) n = std::min(n, h.size() / kB);
  std::vector<NamedEngine> out;
  std::unordered_map<std::string_view, size_t> index;
  for (size_t id = 1; id < n; ++id) {
    const auto [it, fresh] = index.emplace(c.names[id], out.size());
    if (fresh) {
      out.emplace_back();
      out.back().name = c.names[id];
      for (auto& h : out.back().histograms) h.assign(kB, 0);
    }
    NamedEngine& e = out[it->second];
    for (int k = 0; k < kNumStatColumns; ++k) e.stats[k] += c.stats[id][k];
    for (int s = 0; s < kNumHistSeries; ++s) {
      const int64_t* h = c.histograms[s].data() + id * kB;
      for (int b = 0; b < kB; ++b) e.histograms[s][b] += h[b];
    }
    if (c.stats[id][kStatCalls] > 0) e.called = true;
  }
  out.erase(std::remove_if(out.begin(), out.end(), [](const NamedEngine& e) { return !e.called; }), out.end());
  return out;
}

// The bucket of the live histogram that starts at each Prometheus bound (counts below it add up to
// the cumulative count), and the bound's `le` text: Python's repr of bound / 1e9.
struct Bounds {
  std::array<int, kNumBounds> first_bucket{};
  std::array<std::string, kNumBounds> le;
  Bounds() {
    for (int i = 0; i < kNumBounds; ++i) {
      const int64_t bound = int64_t{1} << (kFirstBoundExp + i);
      int b = 0;
      while (b < kB && histogram::lower_bound(b) < bound) ++b;
      first_bucket[i] = b;
      append_python_float_repr(le[i], static_cast<double>(bound) / 1e9);
    }
  }
};

const Bounds& bounds() {
  static const Bounds* b = new Bounds();  // leaked: the server thread may format during exit
  return *b;
}

double seconds(int64_t ns) { return static_cast<double>(ns) / 1e9; }

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += "# HELP ";
  out += name;
  out += ' ';
  append_help_text(out, help);
  out += "\n# TYPE ";
  out += name;
  out += ' ';
  out += type;
  out += '\n';
}

// name{engine="...",<extra>="<extra_value>"} value
void sample(std::string& out, std::string_view name, std::string_view engine, double value,
            std::string_view extra = {}, std::string_view extra_value = {}) {
  out += name;
  out += "{engine=\"";
  append_label_value(out, engine);
  out += '"';
  if (!extra.empty()) {
    out += ',';
    out += extra;
    out += "=\"";
    append_label_value(out, extra_value);
    out += '"';
  }
  out += "} ";
  append_sample_value(out, value);
  out += '\n';
}

void counter_family(std::string& out, const std::vector<NamedEngine>& engines, std::string_view name,
                    std::string_view help, int column, bool gpu_engines_only) {
  header(out, name, "counter", help);
  for (const auto& e : engines) {
    if (gpu_engines_only && e.stats[kStatGpuCalls] == 0 && e.stats[kStatGpuSampledOut] == 0) continue;
    const int64_t v = e.stats[column];
    sample(out, name, e.name, column == kStatGpuNs ? seconds(v) : static_cast<double>(v));
  }
}

void histogram_family(std::string& out, const std::vector<NamedEngine>& engines, std::string_view name,
                      std::string_view help, int series, int sum_column) {
  header(out, name, "histogram", help);
  const std::string bucket = std::string(name) + "_bucket";
  const std::string count = std::string(name) + "_count";
  const std::string sum = std::string(name) + "_sum";
  const Bounds& bs = bounds();
  for (const auto& e : engines) {
    const auto& h = e.histograms[series];
    int64_t total = 0;
    for (int64_t v : h) total += v;
    if (series == kHistGpu && total == 0) continue;  // no GPU span measured: no GPU histogram
    int64_t below = 0;
    int b = 0;
    for (int i = 0; i < kNumBounds; ++i) {
      for (; b < bs.first_bucket[i]; ++b) below += h[b];
      sample(out, bucket, e.name, static_cast<double>(below), "le", bs.le[i]);
    }
    sample(out, bucket, e.name, static_cast<double>(total), "le", "+Inf");
    sample(out, count, e.name, static_cast<double>(total));
    sample(out, sum, e.name, seconds(e.stats[sum_column]));
  }
}

std::string host_phase_help() {
  std::string help = "Host time of engine calls per phase (";
  for (int p = 0; p < kNumHostPhases; ++p) {
    if (p > 0) help += ", ";
    help += kPhaseNames[1 + p];  // kPhaseNames[0] is the call
  }
  return help + ")";
}

}  // namespace

EngineCounters live_counters() {
  EngineCounters c;
  c.names = EngineRegistry::instance().names();
  const auto n = static_cast<uint32_t>(c.names.size());
  c.stats = EngineStats::instance().snapshot(n);
  for (int s = 0; s < kNumHistSeries; ++s) c.histograms[s] = EngineStats::instance().histograms(n, s);
  for (const auto& t : ThreadRings::instance().thread_counts()) c.dropped_events += t.dropped;
  return c;
}

void append_exposition_text(std::string& out, const EngineCounters& counters) {
  const std::vector<NamedEngine> engines = by_name(counters);
  counter_family(out, engines, "trt_trace_engine_calls_total", "Engine calls counted (tensorrt::execute_engine)",
                 kStatCalls, false);
  counter_family(out, engines, "trt_trace_engine_errors_total", "Engine calls that raised", kStatErrors, false);
  histogram_family(out, engines, "trt_trace_engine_call_seconds", "Host time per engine call", kHistTotal,
                   kStatTotalNs);
  const std::string phase_family = "trt_trace_engine_phase_seconds_total";
  header(out, phase_family, "counter", host_phase_help());
  for (const auto& e : engines) {
    for (int p = 0; p < kNumHostPhases; ++p) {
      sample(out, phase_family, e.name, seconds(e.stats[host_phase_column(p)]), "phase", kPhaseNames[1 + p]);
    }
  }
  counter_family(out, engines, "trt_trace_engine_gpu_seconds_total",
                 "GPU time of the engine calls measured (CUDA event spans; with TRT_TRACE_GPU_EVERY=N about 1 call "
                 "in N: scale by (gpu_spans + gpu_sampled_out) / gpu_spans)",
                 kStatGpuNs, true);
  counter_family(out, engines, "trt_trace_engine_gpu_spans_total", "Engine calls whose GPU span was measured",
                 kStatGpuCalls, true);
  counter_family(out, engines, "trt_trace_engine_gpu_sampled_out_total",
                 "CUDA engine calls without GPU events because of sampling (TRT_TRACE_GPU_EVERY)", kStatGpuSampledOut,
                 true);
  histogram_family(out, engines, "trt_trace_engine_gpu_call_seconds",
                   "GPU time per engine call, of the calls measured (see gpu_spans)", kHistGpu, kStatGpuNs);
  header(out, "trt_trace_dropped_events_total", "counter",
         "Trace events dropped because a thread's trace buffer was full");
  out += "trt_trace_dropped_events_total ";
  append_sample_value(out, static_cast<double>(counters.dropped_events));
  out += '\n';
}

}  // namespace metrics
}  // namespace trt_trace
