#include "stats/timing_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/json_text.h"

namespace trt_trace {

namespace {

// A number with a fixed number of decimals, as the table and its JSON print it.
std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string ms(int64_t ns) { return fixed(static_cast<double>(ns) / 1e6, 3); }
std::string pct(double v) { return fixed(v, 1); }

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

int64_t time_ns(const TimingRow& r) { return std::max(r.stats[kStatTotalNs], r.gpu_scaled_ns); }

bool sampled(const TimingRow& r) { return r.stats[kStatGpuCalls] > 0 && r.stats[kStatGpuSampledOut] > 0; }

std::string json_ms(int64_t ns) { return fixed(static_cast<double>(ns) / 1e6, 6); }
std::string json_pct(double v) { return fixed(v, 4); }

}  // namespace

int64_t scaled_gpu_ns(const std::array<int64_t, kNumStatColumns>& stats) {
  const int64_t measured = stats[kStatGpuCalls], out = stats[kStatGpuSampledOut];
  if (measured <= 0 || out <= 0) return stats[kStatGpuNs];
  return static_cast<int64_t>(std::llround(static_cast<double>(stats[kStatGpuNs]) / static_cast<double>(measured) *
                                           static_cast<double>(measured + out)));
}

TimingTable build_timing_table(std::vector<TimingRow> rows, int64_t all_p50_ns, int64_t all_p99_ns,
                               std::string percentiles_of, uint64_t dropped_events, uint64_t threads_with_drops,
                               int64_t gpu_every) {
  TimingTable t;
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const TimingRow& r) { return r.stats[kStatCalls] == 0; }),
             rows.end());
  for (auto& r : rows) r.gpu_scaled_ns = scaled_gpu_ns(r.stats);
  std::stable_sort(rows.begin(), rows.end(), [](const TimingRow& a, const TimingRow& b) {
    return time_ns(a) > time_ns(b);
  });
  t.all = TimingRow{"ALL", {}, all_p50_ns, all_p99_ns};
  int64_t all_time = 0;
  for (const auto& r : rows) {
    for (int c = 0; c < kNumStatColumns; ++c) t.all.stats[c] += r.stats[c];
    t.all.gpu_scaled_ns += r.gpu_scaled_ns;
    t.any_gpu = t.any_gpu || r.stats[kStatGpuCalls] > 0;
    all_time += time_ns(r);
  }
  double cum = 0;
  for (const auto& r : rows) {
    const double s = all_time > 0 ? 100.0 * static_cast<double>(time_ns(r)) / static_cast<double>(all_time) : 0.0;
    cum += s;
    t.share.push_back(s);
    t.cumulative.push_back(std::min(cum, 100.0));
  }
  t.rows = std::move(rows);
  t.percentiles_of = std::move(percentiles_of);
  t.dropped_events = dropped_events;
  t.threads_with_drops = threads_with_drops;
  t.gpu_every = gpu_every;
  return t;
}

// The host phases' columns, in common/phases.h order: cell(p) of each, joined.
template <typename Cell>
std::string host_phase_columns(Cell cell) {
  std::string out;
  for (int p = 0; p < kNumHostPhases; ++p) out += cell(p);
  return out;
}

std::string timing_table_text(const TimingTable& t) {
  size_t name_w = 6;
  for (const auto& r : t.rows) name_w = std::max(name_w, r.engine.size());
  const size_t w = 11, wp = 8;
  // "p50 ms" for the call's total, "<phase> p50" for a phase.
  const bool of_call = t.percentiles_of == "total";
  const std::string p50 = of_call ? "p50 ms" : t.percentiles_of + " p50";
  const std::string p99 = of_call ? "p99 ms" : t.percentiles_of + " p99";
  const size_t wq = std::max<size_t>(9, p50.size() + 2);
  std::string out = pad_right("engine", name_w) + pad_left("calls", 8) + pad_left("total ms", w) +
                    pad_left("share %", wp + 1) + pad_left("cum %", wp) + pad_left(p50, wq) + pad_left(p99, wq) +
                    host_phase_columns([&](int p) { return pad_left(kPhaseNames[1 + p], w); }) +
                    (t.any_gpu ? pad_left("gpu ms", w) : "") + "\n";
  auto percentile = [](int64_t ns) { return ns >= 0 ? ms(ns) : std::string("-"); };
  auto line = [&](const TimingRow& r, const std::string& share, const std::string& cum) {
    out += pad_right(r.engine, name_w) + pad_left(std::to_string(r.stats[kStatCalls]), 8) +
           pad_left(ms(r.stats[kStatTotalNs]), w) + pad_left(share, wp + 1) + pad_left(cum, wp) +
           pad_left(percentile(r.p50_ns), wq) + pad_left(percentile(r.p99_ns), wq) +
           host_phase_columns([&](int p) { return pad_left(ms(r.stats[host_phase_column(p)]), w); });
    if (t.any_gpu) {
      out += pad_left(r.stats[kStatGpuCalls] > 0 ? (sampled(r) ? "~" : "") + ms(r.gpu_scaled_ns) : "-", w);
    }
    out += "\n";
  };
  for (size_t i = 0; i < t.rows.size(); ++i) line(t.rows[i], pct(t.share[i]), pct(t.cumulative[i]));
  const bool any_time = !t.rows.empty() && time_ns(t.all) > 0;
  line(t.all, any_time ? "100.0" : "-", any_time ? "100.0" : "-");
  if (t.any_gpu && t.all.stats[kStatGpuSampledOut] > 0) {
    const int64_t measured = t.all.stats[kStatGpuCalls];
    out += "gpu ms: sampled, " + std::to_string(measured) + " of " +
           std::to_string(measured + t.all.stats[kStatGpuSampledOut]) + " CUDA calls measured" +
           (t.gpu_every > 1    ? " (1 in " + std::to_string(t.gpu_every) + ")"
            : t.gpu_every < 0 ? " (at more than one rate)"
                              : "") + ", scaled to all" +
           (t.percentiles_of == "gpu" ? "; gpu p50/p99 of the measured calls" : "") + "\n";
  }
  if (t.all.stats[kStatErrors] > 0) {
    out += std::to_string(t.all.stats[kStatErrors]) + " call(s) raised an exception (flagged in the trace)\n";
  }
  if (t.dropped_events > 0) {
    out += "WARNING: " + std::to_string(t.dropped_events) + " event(s) dropped in " +
           std::to_string(t.threads_with_drops) +
           " thread(s): a trace buffer was full (raise TRT_TRACE_BUFFER)\n";
  }
  return out;
}

std::string timing_table_json(const TimingTable& t) {
  auto row = [&](const TimingRow& r, const std::string& share, const std::string& cum) {
    const auto& s = r.stats;
    std::string o = "{\"engine\":" + json_string(r.engine) + ",\"calls\":" + std::to_string(s[kStatCalls]) +
                    ",\"errors\":" + std::to_string(s[kStatErrors]) + ",\"total_ms\":" + json_ms(s[kStatTotalNs]) +
                    ",\"share_pct\":" + share + ",\"cum_pct\":" + cum +
                    ",\"p50_ms\":" + (r.p50_ns >= 0 ? json_ms(r.p50_ns) : "null") +
                    ",\"p99_ms\":" + (r.p99_ns >= 0 ? json_ms(r.p99_ns) : "null") +
                    host_phase_columns([&](int p) {
                      return ",\"" + std::string(kPhaseNames[1 + p]) + "_ms\":" + json_ms(s[host_phase_column(p)]);
                    }) +
                    ",\"gpu_ms\":" + (s[kStatGpuCalls] > 0 ? json_ms(r.gpu_scaled_ns) : "null") +
                    ",\"gpu_measured_ms\":" + (s[kStatGpuCalls] > 0 ? json_ms(s[kStatGpuNs]) : "null") +
                    ",\"gpu_calls\":" + std::to_string(s[kStatGpuCalls]) +
                    ",\"gpu_sampled_out\":" + std::to_string(s[kStatGpuSampledOut]) + "}";
    return o;
  };
  std::string out = "{\"percentiles_of\":" + json_string(t.percentiles_of) +
                    ",\"gpu_every\":" + std::to_string(t.gpu_every) + ",\"engines\":[";
  for (size_t i = 0; i < t.rows.size(); ++i) {
    if (i) out += ",";
    out += row(t.rows[i], json_pct(t.share[i]), json_pct(t.cumulative[i]));
  }
  const bool any_time = !t.rows.empty() && time_ns(t.all) > 0;
  out += "],\"all\":" + row(t.all, any_time ? "100" : "null", any_time ? "100" : "null");
  out += ",\"dropped_events\":" + std::to_string(t.dropped_events) +
         ",\"threads_with_drops\":" + std::to_string(t.threads_with_drops) + "}";
  return out;
}

}  // namespace trt_trace
