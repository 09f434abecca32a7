// Bulk formatting of layer records (Phase::kLayer) for the writers, in both formats: one slice per
// layer, named after it, on the track the writer chose (trt_trace/io/tracks.py TrackBook.place_layers decides
// tracks and lanes and keeps the names; the writers own the files). Like the phase formatters (csrc/ops), on the
// drainer thread, into a buffer reused from batch to batch (ops/output_buffer.h).
//
// JSON: {"ph":"X","cat":"trt_trace.layer","name":<layer>,"ts","dur","pid","tid","args":{"engine",
// "engine_id","call_id","layer","thread"[,"device"]}}. The category is not trt_trace's own:
// readers that add up calls and phases (which select cat "trt_trace") never mistake a layer,
// whatever its name, for one of them.
// Perfetto: SLICE_BEGIN / SLICE_END packets; the name is interned (iid = name_iid_base + layer id),
// the annotations are engine (string iid = engine id + 1, as the phase slices), call_id, thread,
// device and layer (string iid = name_iid_base + layer id).
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
#include "format/perfetto_slices.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

const LayerRecord* layer_records(const at::Tensor& records, int64_t* n, const char* op) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(LayerRecord) == 0, op,
              ": records must be contiguous uint8 of whole records");
  *n = records.numel() / static_cast<int64_t>(sizeof(LayerRecord));
  const auto* rec = reinterpret_cast<const LayerRecord*>(records.data_ptr<uint8_t>());
  for (int64_t i = 0; i < *n; ++i) {
    TORCH_CHECK(rec[i].phase == static_cast<uint8_t>(Phase::kLayer), op, ": record ", i, " is not a layer record");
  }
  return rec;
}

// engine_json[i] / layer_json[i]: engine i's / layer i's name as a JSON string literal.
std::tuple<at::Tensor, int64_t> layer_json_events(const at::Tensor& records, const at::Tensor& tids, int64_t pid,
                                                  const std::vector<std::string>& engine_json,
                                                  const std::vector<std::string>& layer_json,
                                                  const std::optional<at::Tensor>& out_buffer) {
  int64_t n = 0;
  const LayerRecord* rec = layer_records(records, &n, "layer_json_events");
  TORCH_CHECK(tids.dtype() == at::kLong && tids.numel() == n, "layer_json_events: one int64 track id per record");
  TORCH_CHECK(!engine_json.empty(), "layer_json_events: engine_json must hold at least the entry for id 0");
  const at::Tensor tid_c = tids.contiguous();
  const int64_t* tid = tid_c.data_ptr<int64_t>();
  const std::string pid_s = std::to_string(pid);
  size_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(rec[i].name_id < layer_json.size(), "layer_json_events: no name for layer id ", rec[i].name_id);
    const std::string& engine = rec[i].engine_id < engine_json.size() ? engine_json[rec[i].engine_id] : engine_json[0];
    worst += kMaxLayerEventBytes + 2 * layer_json[rec[i].name_id].size() + engine.size() + pid_s.size();
  }
  at::Tensor result = output_buffer(out_buffer, worst + 1, "layer_json_events");
  char* const begin = reinterpret_cast<char*>(result.data_ptr<uint8_t>());
  JsonOut out{begin};
  for (int64_t i = 0; i < n; ++i) {
    const LayerRecord& r = rec[i];
    const std::string& layer = layer_json[r.name_id];
    const std::string& engine = r.engine_id < engine_json.size() ? engine_json[r.engine_id] : engine_json[0];
    if (out.p != begin) out.lit(",\n");
    append_layer_event(out, r, static_cast<uint64_t>(tid[i]), pid_s.data(), pid_s.size(), engine, layer);
  }
  return {result, static_cast<int64_t>(out.p - begin)};
}

// The packets come from the loop the session's native writer uses too (format/perfetto_slices.h).
std::tuple<at::Tensor, int64_t> layer_perfetto_packets(const at::Tensor& records, const at::Tensor& track_uuids,
                                                       int64_t seq_id, const std::vector<int64_t>& annotation_iids,
                                                       int64_t name_iid_base, const std::optional<at::Tensor>& out_buffer) {
  int64_t n = 0;
  const LayerRecord* rec = layer_records(records, &n, "layer_perfetto_packets");
  TORCH_CHECK(track_uuids.dtype() == at::kLong && track_uuids.numel() == n,
              "layer_perfetto_packets: one int64 track uuid per record");
  TORCH_CHECK(annotation_iids.size() == perfetto_slices::kNumLayerAnnotations, "layer_perfetto_packets: ",
              static_cast<int>(perfetto_slices::kNumLayerAnnotations),
              " annotation name iids expected (engine, call_id, thread, device, layer)");
  TORCH_CHECK(seq_id > 0 && seq_id < 128, "layer_perfetto_packets: the sequence id must be in 1..127");
  perfetto_slices::LayerIids iids{};
  for (size_t a = 0; a < iids.size(); ++a) {
    TORCH_CHECK(annotation_iids[a] > 0 && annotation_iids[a] < 128, "layer_perfetto_packets: iids must be in 1..127");
    iids[a] = static_cast<uint64_t>(annotation_iids[a]);
  }
  TORCH_CHECK(name_iid_base > 0 && name_iid_base < (int64_t{1} << 40), "layer_perfetto_packets: bad name_iid_base");
  const at::Tensor uuid_c = track_uuids.contiguous();
  const int64_t* uuid = uuid_c.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) TORCH_CHECK(uuid[i] >= 0, "layer_perfetto_packets: track uuids must be non-negative");
  std::vector<uint32_t> order;
  at::Tensor result = output_buffer(out_buffer, perfetto_slices::layer_packets_max_bytes(static_cast<size_t>(n)),
                                    "layer_perfetto_packets");
  const size_t written = perfetto_slices::layer_packets(rec, static_cast<size_t>(n), uuid, static_cast<uint64_t>(seq_id),
                                                        iids, static_cast<uint64_t>(name_iid_base), &order,
                                                        result.data_ptr<uint8_t>());
  return {result, static_cast<int64_t>(written)};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("_layer_json_events(Tensor records, Tensor tids, int pid, str[] engine_json, str[] layer_json, "
        "Tensor? out=None) -> (Tensor, int)",
        &trt_trace::layer_json_events);
  m.def("_layer_perfetto_packets(Tensor records, Tensor track_uuids, int seq_id, int[] annotation_iids, "
        "int name_iid_base, Tensor? out=None) -> (Tensor, int)",
        &trt_trace::layer_perfetto_packets);
}
