// Bulk formatting of drained records as Chrome JSON events, for the Python
// writer (trt_trace/writers/chrome_json.py), which decides everything else:
// tracks and lanes (the `tids` it passes), track names, metadata, file layout.
//
// Why C++: building one Python dict per event caps a Python writer at ~0.2 M
// events/s; this loop writes 2+ M events/s. It runs on the drainer thread,
// never on an inference thread.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "common/record.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

// A cursor into a buffer sized for the worst case up front: no capacity checks per append.
struct Out {
  char* p;
  void lit(const char* s, size_t n) {
    std::memcpy(p, s, n);
    p += n;
  }
  template <size_t N>
  void lit(const char (&s)[N]) {
    lit(s, N - 1);
  }
  void str(const std::string& s) { lit(s.data(), s.size()); }
  void num(uint64_t v) { p = std::to_chars(p, p + 20, v).ptr; }  // no locale, no format parsing
  // ns -> microseconds with exactly three decimals (Perfetto reads them back to the ns).
  void us(int64_t ns) {
    if (ns < 0) {
      *p++ = '-';
      ns = -ns;
    }
    const auto v = static_cast<uint64_t>(ns);
    num(v / 1000);
    const auto frac = static_cast<unsigned>(v % 1000);
    p[0] = '.';
    p[1] = static_cast<char>('0' + frac / 100);
    p[2] = static_cast<char>('0' + frac / 10 % 10);
    p[3] = static_cast<char>('0' + frac % 10);
    p += 4;
  }
};

// records: uint8 [n * 40]; tids: int64 [n]; engine_json[i]: engine i's name as a JSON string
// literal (quotes included, escaped by the caller). flows: emit launch flow events (enqueue ->
// gpu). Returns (buffer, n): the events comma-separated, without brackets, in the first n bytes of
// buffer, which is `out` when given and large enough, else a new one (see ops/output_buffer.h).
std::tuple<at::Tensor, int64_t> chrome_json_events(const at::Tensor& records, const at::Tensor& tids, int64_t pid,
                                              const std::vector<std::string>& engine_json, bool flows,
                                              const std::optional<at::Tensor>& out_buffer) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "chrome_json_events: records must be contiguous uint8 of whole records");
  const int64_t n = records.numel() / static_cast<int64_t>(sizeof(Record));
  TORCH_CHECK(tids.dtype() == at::kLong && tids.numel() == n, "chrome_json_events: one int64 track id per record");
  TORCH_CHECK(!engine_json.empty(), "chrome_json_events: engine_json must hold at least the entry for id 0");
  const at::Tensor tid_c = tids.contiguous();
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const int64_t* tid = tid_c.data_ptr<int64_t>();
  const std::string pid_s = std::to_string(pid);
  size_t longest_name = 0;
  for (const auto& e : engine_json) longest_name = std::max(longest_name, e.size());
  // Fixed text + 12 numbers of <= 21 chars + a flow event, per record.
  const size_t worst = 640 + longest_name + 2 * pid_s.size();
  at::Tensor result = output_buffer(out_buffer, worst * static_cast<size_t>(n), "chrome_json_events");
  char* const begin = reinterpret_cast<char*>(result.data_ptr<uint8_t>());
  Out out{begin};
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    if (r.phase > kLastPublicPhase) continue;
    const std::string& engine = r.engine_id < engine_json.size() ? engine_json[r.engine_id] : engine_json[0];
    if (out.p != begin) out.lit(",\n");
    out.lit(R"({"ph":"X","cat":"trt_trace","name":")");
    const char* name = kPhaseNames[r.phase];
    out.lit(name, std::strlen(name));
    out.lit(R"(","ts":)");
    out.us(r.begin_ns);
    out.lit(R"(,"dur":)");
    out.us(r.end_ns - r.begin_ns);
    out.lit(R"(,"pid":)");
    out.str(pid_s);
    out.lit(R"(,"tid":)");
    out.num(static_cast<uint64_t>(tid[i]));
    out.lit(R"(,"args":{"engine":)");
    out.str(engine);
    out.lit(R"(,"engine_id":)");
    out.num(r.engine_id);
    out.lit(R"(,"call_id":)");
    out.num(r.call_id);
    out.lit(R"(,"thread":)");
    out.num(r.thread_id);
    if (r.device != kNoDevice) {
      out.lit(R"(,"device":)");
      out.num(r.device);
    }
    const bool gpu = r.phase == static_cast<uint8_t>(Phase::kGpu);
    if (is_gpu_span(r.phase)) {
      out.lit(R"(,"stream":)");
      out.num(r.stream);
    }
    if (r.flags & kFlagError) out.lit(R"(,"error":true)");
    if (r.flags & kFlagNested) out.lit(R"(,"nested":true)");
    if (r.flags & kFlagCaptured) out.lit(R"(,"captured":true)");
    if (r.flags & kFlagEngineStream) out.lit(R"(,"engine_stream":true)");
    out.lit("}}");
    // Flow arrow (v1) from the enqueue slice to the GPU slice it launched: its start 1 ns into the
    // enqueue slice, its end ("bp":"e", the enclosing slice) 1 ns before the GPU slice ends. Perfetto
    // matches a flow's events in time order, and a GPU span may begin with its enqueue (it is
    // clamped there) and end long before the enqueue does: the slices' middles can come in either
    // order, these two ends do not (for spans of 2 ns or more).
    const bool launch = launches_gpu(r);
    if (flows && (gpu || launch)) {
      if (gpu) {
        out.lit(",\n{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":");
      } else {
        out.lit(",\n{\"ph\":\"s\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":");
      }
      out.num(r.call_id);
      out.lit(R"(,"ts":)");
      const int64_t inside = r.end_ns > r.begin_ns ? 1 : 0;
      out.us(gpu ? r.end_ns - inside : r.begin_ns + inside);
      out.lit(R"(,"pid":)");
      out.str(pid_s);
      out.lit(R"(,"tid":)");
      out.num(static_cast<uint64_t>(tid[i]));
      out.lit("}");
    }
  }
  return {result, static_cast<int64_t>(out.p - begin)};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("_chrome_json_events(Tensor records, Tensor tids, int pid, str[] engine_json, bool flows, "
        "Tensor? out=None) -> (Tensor, int)",
        &trt_trace::chrome_json_events);
}
