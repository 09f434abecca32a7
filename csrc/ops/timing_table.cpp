#include "ops/timing_table.h"

#include <algorithm>
#include <cstdio>

namespace trt_trace {

namespace {

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

std::string pad_right(const std::string& s, size_t w) {
  return s.size() >= w ? s : s + std::string(w - s.size(), ' ');
}

}  // namespace

std::string format_timing_table(std::vector<TimingRow> rows, uint64_t dropped_events, uint64_t threads_with_drops) {
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const TimingRow& r) { return r.stats[kStatCalls] == 0; }),
             rows.end());
  std::stable_sort(rows.begin(), rows.end(), [](const TimingRow& a, const TimingRow& b) {
    return a.stats[kStatTotalNs] > b.stats[kStatTotalNs];
  });
  TimingRow all{"ALL", {}};
  bool any_gpu = false;
  for (const auto& r : rows) {
    for (int c = 0; c < kNumStatColumns; ++c) all.stats[c] += r.stats[c];
    any_gpu = any_gpu || r.stats[kStatGpuCalls] > 0;
  }

  size_t name_w = 6;
  for (const auto& r : rows) name_w = std::max(name_w, r.engine.size());
  const size_t w = 11;
  std::string out = pad_right("engine", name_w) + pad_left("calls", 8) + pad_left("total ms", w) +
                    pad_left("workspace", w) + pad_left("inputs", w) + pad_left("outputs", w) +
                    pad_left("enqueue", w) + (any_gpu ? pad_left("gpu ms", w) : "") + "\n";
  auto line = [&](const TimingRow& r) {
    out += pad_right(r.engine, name_w) + pad_left(std::to_string(r.stats[kStatCalls]), 8) +
           pad_left(ms(r.stats[kStatTotalNs]), w) + pad_left(ms(r.stats[kStatWorkspaceNs]), w) +
           pad_left(ms(r.stats[kStatInputsNs]), w) + pad_left(ms(r.stats[kStatOutputsNs]), w) +
           pad_left(ms(r.stats[kStatEnqueueNs]), w);
    if (any_gpu) out += pad_left(r.stats[kStatGpuCalls] > 0 ? ms(r.stats[kStatGpuNs]) : "-", w);
    out += "\n";
  };
  for (const auto& r : rows) line(r);
  line(all);
  if (all.stats[kStatErrors] > 0) {
    out += std::to_string(all.stats[kStatErrors]) + " call(s) raised an exception (flagged in the trace)\n";
  }
  if (dropped_events > 0) {
    out += "WARNING: " + std::to_string(dropped_events) + " event(s) dropped in " +
           std::to_string(threads_with_drops) +
           " thread(s): a trace buffer was full (raise TRT_TRACE_BUFFER)\n";
  }
  return out;
}

}  // namespace trt_trace
