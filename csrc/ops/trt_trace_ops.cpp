// torch.ops.trt_trace.*: the control surface, callable from Python
// (torch.ops.trt_trace.x) and from C++ (through the dispatcher, e.g. from a
// serving binary that loads this library).
//
// Bulk data leaves C++ as tensors of plain bytes / int64 (no per-event
// objects): the Python drainer views them as numpy structured arrays.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>

#include "buffer/call_layout.h"
#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "engines/engine_registry.h"
#include "stats/duration_histogram.h"
#include "stats/engine_stats.h"
#include "hook/engine_stream_trace.h"
#include "hook/gpu_events.h"
#include "drainer/drain.h"
#include "drainer/gpu_resolver.h"
#include "stats/gpu_sampling.h"
#include "hook/gpu_self_time.h"
#include "integrations/nvtx_ranges.h"
#include "integrations/profiler_scopes.h"
#include "hook/tracing_state.h"
#include "stats/timing_table.h"

namespace trt_trace {
namespace {

void set_profile_execution(bool enable) { set_tracing(enable); }
bool get_profile_execution() { return tracing_enabled(); }
// A session's own switch (_set_recording is trt_trace::set_recording): traced calls also go into the
// rings (tracing_state.h).
bool get_recording() { return recording_epoch() != 0; }

std::pair<uint64_t, uint64_t> drop_totals() {
  uint64_t dropped = 0, threads = 0;
  for (const auto& c : ThreadRings::instance().thread_counts()) {
    dropped += c.dropped;
    threads += c.dropped > 0 ? 1 : 0;
  }
  return {dropped, threads};
}

// The live table: counters and the duration histograms; percentiles_of "total" (the call's host
// time) or "gpu" (its GPU span), the two durations the hot path keeps histograms of.
std::string timing_table(const std::string& percentiles_of, bool json) {
  const int series = percentiles_of == "total" ? kHistTotal : percentiles_of == "gpu" ? kHistGpu : -1;
  TORCH_CHECK(series >= 0, "live percentiles are kept of the call's total and of its GPU span, not of '",
              percentiles_of, "': give \"total\" or \"gpu\", or summarise a trace file for a host phase");
  const auto names = EngineRegistry::instance().names();
  const auto n = static_cast<uint32_t>(names.size());
  const auto stats = EngineStats::instance().snapshot(n);
  const auto hist = EngineStats::instance().histograms(n, series);
  constexpr int kB = histogram::kBuckets;
  std::vector<int64_t> all(kB, 0);
  std::vector<TimingRow> rows;
  for (uint32_t id = 1; id < n; ++id) {
    const int64_t* h = hist.data() + static_cast<size_t>(id) * kB;
    for (int b = 0; b < kB; ++b) all[b] += h[b];
    rows.push_back({names[id], stats[id], histogram::percentile(h, 50), histogram::percentile(h, 99)});
  }
  const auto [dropped, threads] = drop_totals();
  // The rate the sampled-out counts were taken at, not today's setting (a session puts it back).
  const int64_t rate = gpu::rate_in_stats();  // 0: no call sampled since the stats were reset
  TimingTable table = build_timing_table(std::move(rows), histogram::percentile(all.data(), 50),
                                         histogram::percentile(all.data(), 99), percentiles_of, dropped, threads,
                                         rate == 0 ? 1 : rate);
  return json ? timing_table_json(table) : timing_table_text(table);
}

std::string live_table_text() { return timing_table("total", false); }

std::string dump_engine_timing() {
  std::string text = live_table_text();
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  return text;
}

// Returns whether NVTX ranges are available (compiled in); they are emitted for traced calls.
bool set_nvtx(bool enable) { return nvtx::set_enabled(enable); }
bool get_nvtx() { return nvtx::enabled(); }

void reset() { EngineStats::instance().reset(); }

// Records drained from every thread's ring into `out` (uint8, room for whole records), with the GPU
// spans resolved so far; returns how many. The drainer passes the same buffer every time, so a drain
// allocates nothing (batch-sized allocations of varying size would fragment the C heap over a long
// run). wait_gpu: wait for every pending GPU span (final drain; never on a hot path).
int64_t drain_into(const at::Tensor& out, bool wait_gpu) {
  TORCH_CHECK(out.device().is_cpu() && out.dtype() == at::kByte && out.is_contiguous(),
              "trt_trace::drain_into: out must be a contiguous CPU uint8 tensor");
  const size_t max_records = static_cast<size_t>(out.numel()) / sizeof(Record);
  TORCH_CHECK(max_records >= kMinDrainRecords, "trt_trace::drain_into: out must hold at least ", kMinDrainRecords,
              " records (", kMinDrainRecords * sizeof(Record), " bytes): a call's ring slots expand into up to ",
              kMaxRecordsPerCall, " records");
  auto* records = reinterpret_cast<Record*>(out.data_ptr<uint8_t>());
  return static_cast<int64_t>(drainer::drain_batch(records, max_records, wait_gpu));
}

// The same into a new tensor of at most max_records records (tests, one-off drains).
at::Tensor drain(int64_t max_records, bool wait_gpu) {
  TORCH_CHECK(max_records >= static_cast<int64_t>(kMinDrainRecords), "trt_trace::drain: max_records must be at least ",
              kMinDrainRecords);
  at::Tensor out = at::empty({max_records * static_cast<int64_t>(sizeof(Record))}, at::kByte);
  const int64_t n = drain_into(out, wait_gpu);
  return out.narrow(0, 0, n * static_cast<int64_t>(sizeof(Record)));
}

int64_t pending() {
  return static_cast<int64_t>(ThreadRings::instance().pending() + gpu::Resolver::instance().pending());
}

bool set_gpu_timing(bool enable) { return gpu::set_enabled(enable); }
bool get_gpu_timing() { return gpu::enabled() && gpu::available(); }
// GPU-timing sampling: 1 traced CUDA call in n of each engine (per calling thread) gets GPU events.
void set_gpu_every(int64_t n) {
  TORCH_CHECK(gpu::set_sample_every(n), "trt_trace::set_gpu_every: n must be an integer from 1 (every call) to ",
              gpu::kMaxGpuEvery, ", not ", n, " (set_gpu_timing(False) turns GPU timing off)");
}
int64_t get_gpu_every() { return gpu::sample_every(); }

void set_caller_wait_every(int64_t n) {
  TORCH_CHECK(gpu::set_caller_wait_every(n), "trt_trace::set_caller_wait_every: n must be an integer from 1 (every "
              "measured call) to ", gpu::kMaxGpuEvery, ", got ", n);
}

// Named, so that no reader depends on an order of fields.
c10::Dict<std::string, double> gpu_clock_stats() {
  const gpu::ClockStats s = gpu::Resolver::instance().clock_stats();
  c10::Dict<std::string, double> out;
  out.insert("anchors", static_cast<double>(s.anchors));
  out.insert("max_abs_residual_ns", static_cast<double>(s.max_abs_residual_ns));
  out.insert("last_residual_ns", static_cast<double>(s.last_residual_ns));
  out.insert("anchor_window_ns", static_cast<double>(s.anchor_window_ns));
  out.insert("anchors_put_off", static_cast<double>(s.anchors_put_off));
  out.insert("gpu_clock_rate_ppm", s.gpu_clock_rate_ppm);
  out.insert("p50_abs_residual_ns", static_cast<double>(s.p50_abs_residual_ns));
  out.insert("p99_abs_residual_ns", static_cast<double>(s.p99_abs_residual_ns));
  return out;
}

// Rows: thread id, produced, dropped (events), capacity, alive, dropped calls.
at::Tensor thread_counts() {
  const auto counts = ThreadRings::instance().thread_counts();
  at::Tensor out = at::zeros({static_cast<int64_t>(counts.size()), 6}, at::kLong);
  auto a = out.accessor<int64_t, 2>();
  for (size_t i = 0; i < counts.size(); ++i) {
    a[i][0] = counts[i].thread_id;
    a[i][1] = static_cast<int64_t>(counts[i].produced);
    a[i][2] = static_cast<int64_t>(counts[i].dropped);
    a[i][3] = static_cast<int64_t>(counts[i].capacity);
    a[i][4] = counts[i].alive ? 1 : 0;
    a[i][5] = static_cast<int64_t>(counts[i].dropped_calls);
  }
  return out;
}

void reset_thread_counts() { ThreadRings::instance().reset_counts(); }

std::vector<std::string> engine_names() { return EngineRegistry::instance().names(); }

at::Tensor engine_stats() {
  const auto n = static_cast<uint32_t>(EngineRegistry::instance().names().size());
  const auto rows = EngineStats::instance().snapshot(n);
  at::Tensor out = at::zeros({static_cast<int64_t>(n), kNumStatColumns}, at::kLong);
  auto a = out.accessor<int64_t, 2>();
  for (uint32_t i = 0; i < n; ++i) {
    for (int c = 0; c < kNumStatColumns; ++c) a[i][c] = rows[i][c];
  }
  return out;
}

// The names of engine_stats()'s columns (for the test against trt_trace/schema/records.py STATS_COLUMNS).
std::vector<std::string> stats_columns() { return {std::begin(kStatColumnNames), std::end(kStatColumnNames)}; }

// Each row's GPU ns scaled to all its CUDA calls (timing_table.h), for rows of numbers aggregated
// elsewhere (the plot of a trace file): int64 [rows].
at::Tensor scaled_gpu_ns_of(const at::Tensor& stats) {
  TORCH_CHECK(stats.dim() == 2 && stats.size(1) == kNumStatColumns,
              "trt_trace::_scaled_gpu_ns: stats must be [rows, ", kNumStatColumns, "] int64");
  const at::Tensor s = stats.to(at::kLong).contiguous();
  auto a = s.accessor<int64_t, 2>();
  at::Tensor out = at::empty({s.size(0)}, at::kLong);
  for (int64_t i = 0; i < s.size(0); ++i) {
    std::array<int64_t, kNumStatColumns> row;
    for (int c = 0; c < kNumStatColumns; ++c) row[c] = a[i][c];
    out.data_ptr<int64_t>()[i] = scaled_gpu_ns(row);
  }
  return out;
}

// A table of numbers aggregated elsewhere (a trace file): percentiles [len(names), 2] int64 ns
// (p50, p99; -1 where none), all_p50/all_p99 over every call; gpu_every: the file's sampling setting.
std::string format_timing_table(const std::vector<std::string>& names, const at::Tensor& stats, int64_t dropped,
                         int64_t threads_with_drops, const std::optional<at::Tensor>& percentiles,
                         int64_t all_p50, int64_t all_p99, const std::string& percentiles_of, bool json,
                         int64_t gpu_every) {
  TORCH_CHECK(stats.dim() == 2 && stats.size(1) == kNumStatColumns && stats.size(0) == (int64_t)names.size(),
              "trt_trace::format_timing_table: stats must be [len(names), ", kNumStatColumns, "] int64");
  const at::Tensor s = stats.to(at::kLong).contiguous();
  auto a = s.accessor<int64_t, 2>();
  at::Tensor p;
  if (percentiles.has_value()) {
    TORCH_CHECK(percentiles->dim() == 2 && percentiles->size(0) == (int64_t)names.size() && percentiles->size(1) == 2,
                "trt_trace::format_timing_table: percentiles must be [len(names), 2] int64");
    p = percentiles->to(at::kLong).contiguous();
  }
  std::vector<TimingRow> rows;
  for (size_t i = 0; i < names.size(); ++i) {
    TimingRow r{names[i], {}};
    for (int c = 0; c < kNumStatColumns; ++c) r.stats[c] = a[i][c];
    if (p.defined()) {
      r.p50_ns = p.data_ptr<int64_t>()[2 * i];
      r.p99_ns = p.data_ptr<int64_t>()[2 * i + 1];
    }
    rows.push_back(std::move(r));
  }
  TimingTable table = build_timing_table(std::move(rows), all_p50, all_p99, percentiles_of,
                                         static_cast<uint64_t>(dropped), static_cast<uint64_t>(threads_with_drops),
                                         std::max<int64_t>(gpu_every, 1));
  return json ? timing_table_json(table) : timing_table_text(table);
}

// Histogram `series` (0: the call's total, 1: its GPU span) of every engine id: int64 [ids, buckets].
at::Tensor engine_histograms(int64_t series) {
  TORCH_CHECK(series >= 0 && series < kNumHistSeries, "trt_trace::engine_histograms: series must be 0 or 1");
  const auto n = static_cast<uint32_t>(EngineRegistry::instance().names().size());
  const auto counts = EngineStats::instance().histograms(n, static_cast<int>(series));
  at::Tensor out = at::empty({static_cast<int64_t>(n), histogram::kBuckets}, at::kLong);
  std::copy(counts.begin(), counts.end(), out.data_ptr<int64_t>());
  return out;
}

// The buckets' lower bounds in ns and, last, the upper bound of the last one.
std::vector<int64_t> histogram_bounds() {
  std::vector<int64_t> out;
  for (int b = 0; b <= histogram::kBuckets; ++b) out.push_back(histogram::lower_bound(b));
  return out;
}

int64_t sweep_engines() {
  EngineRegistry::instance().sweep();
  return static_cast<int64_t>(EngineRegistry::instance().live_count());
}

int64_t clock_now_ns() { return now_ns(); }

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY(trt_trace, m) {
  using namespace trt_trace;
  m.def("set_profile_execution(bool enable) -> ()", &set_profile_execution);
  m.def("get_profile_execution() -> bool", &get_profile_execution);
  m.def("_set_recording(bool enable) -> ()", &trt_trace::set_recording);
  m.def("_get_recording() -> bool", &get_recording);
  m.def("dump_engine_timing() -> str", &dump_engine_timing);
  m.def("timing_table(str percentiles_of=\"total\", bool json=False) -> str", &timing_table);
  m.def("_engine_histograms(int series) -> Tensor", &engine_histograms);
  m.def("_histogram_bounds() -> int[]", &histogram_bounds);
  m.def("reset() -> ()", &reset);
  m.def("set_nvtx(bool enable) -> bool", &set_nvtx);
  m.def("get_nvtx() -> bool", &get_nvtx);
  m.def("_drain(int max_records, bool wait_gpu=False) -> Tensor", &drain);
  m.def("_drain_into(Tensor(a!) out, bool wait_gpu=False) -> int", &drain_into);
  m.def("set_gpu_timing(bool enable) -> bool", &set_gpu_timing);
  m.def("get_gpu_timing() -> bool", &get_gpu_timing);
  m.def("set_gpu_every(int n) -> ()", &set_gpu_every);
  m.def("get_gpu_every() -> int", &get_gpu_every);
  m.def("gpu_clock_stats() -> Dict(str, float)", &gpu_clock_stats);
  m.def("set_caller_wait_every(int n) -> ()", &set_caller_wait_every);
  m.def("get_caller_wait_every() -> int", [] { return gpu::caller_wait_every(); });
  m.def("_pending() -> int", &pending);
  m.def("_thread_counts() -> Tensor", &thread_counts);
  m.def("_reset_thread_counts() -> ()", &reset_thread_counts);
  m.def("_engine_names() -> str[]", &engine_names);
  m.def("_engine_stats() -> Tensor", &engine_stats);
  m.def("_stats_columns() -> str[]", &stats_columns);
  m.def("_scaled_gpu_ns(Tensor stats) -> Tensor", &scaled_gpu_ns_of);
  m.def("_format_timing_table(str[] names, Tensor stats, int dropped, int threads_with_drops, Tensor? percentiles=None, "
        "int all_p50=-1, int all_p99=-1, str percentiles_of=\"total\", bool json=False, int gpu_every=1) -> str",
        &format_timing_table);
  m.def("_sweep_engines() -> int", &sweep_engines);
  m.def("_clock_now_ns() -> int", &clock_now_ns);
}
