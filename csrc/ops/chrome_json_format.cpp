// Bulk formatting of drained records as Chrome JSON events, for the Python
// writer (trt_trace/io/writers/chrome_json.py), which decides everything else:
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
#include "format/chrome_json_events.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

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
  const size_t worst = kMaxEventBytes + longest_name + 2 * pid_s.size();
  at::Tensor result = output_buffer(out_buffer, worst * static_cast<size_t>(n), "chrome_json_events");
  char* const begin = reinterpret_cast<char*>(result.data_ptr<uint8_t>());
  JsonOut out{begin};
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    if (r.phase > kLastPublicPhase) continue;
    const std::string& engine = r.engine_id < engine_json.size() ? engine_json[r.engine_id] : engine_json[0];
    if (out.p != begin) out.lit(",\n");
    append_slice_event(out, r, static_cast<uint64_t>(tid[i]), pid_s.data(), pid_s.size(), engine.data(), engine.size());
    // Flow arrow (v1) from the enqueue slice to the GPU slice it launched: its start 1 ns into the
    // enqueue slice, its end ("bp":"e", the enclosing slice) 1 ns before the GPU slice ends. Perfetto
    // matches a flow's events in time order, and a GPU span may begin with its enqueue (it is
    // clamped there) and end long before the enqueue does: the slices' middles can come in either
    // order, these two ends do not (for spans of 2 ns or more).
    const bool gpu = r.phase == static_cast<uint8_t>(Phase::kGpu);
    if (flows && (gpu || launches_gpu(r))) {
      out.lit(",\n");
      append_flow_event(out, gpu, r.call_id, flow_ts(r, gpu), pid_s.data(), pid_s.size(), static_cast<uint64_t>(tid[i]));
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
