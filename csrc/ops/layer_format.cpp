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
#include "format/perfetto_fields.h"
#include "format/protobuf_wire.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

const Record* layer_records(const at::Tensor& records, int64_t* n, const char* op) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0, op,
              ": records must be contiguous uint8 of whole records");
  *n = records.numel() / static_cast<int64_t>(sizeof(Record));
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
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
  const Record* rec = layer_records(records, &n, "layer_json_events");
  TORCH_CHECK(tids.dtype() == at::kLong && tids.numel() == n, "layer_json_events: one int64 track id per record");
  TORCH_CHECK(!engine_json.empty(), "layer_json_events: engine_json must hold at least the entry for id 0");
  const at::Tensor tid_c = tids.contiguous();
  const int64_t* tid = tid_c.data_ptr<int64_t>();
  const std::string pid_s = std::to_string(pid);
  size_t worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(rec[i].stream < layer_json.size(), "layer_json_events: no name for layer id ", rec[i].stream);
    const std::string& engine = rec[i].engine_id < engine_json.size() ? engine_json[rec[i].engine_id] : engine_json[0];
    worst += kMaxLayerEventBytes + 2 * layer_json[rec[i].stream].size() + engine.size() + pid_s.size();
  }
  at::Tensor result = output_buffer(out_buffer, worst + 1, "layer_json_events");
  char* const begin = reinterpret_cast<char*>(result.data_ptr<uint8_t>());
  JsonOut out{begin};
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    const std::string& layer = layer_json[r.stream];
    const std::string& engine = r.engine_id < engine_json.size() ? engine_json[r.engine_id] : engine_json[0];
    if (out.p != begin) out.lit(",\n");
    append_layer_event(out, r, static_cast<uint64_t>(tid[i]), pid_s.data(), pid_s.size(), engine, layer);
  }
  return {result, static_cast<int64_t>(out.p - begin)};
}

// Protobuf wire format (format/protobuf_wire.h) with the field numbers of format/perfetto_fields.h, which tests
// check against the perfetto package's descriptors.
using namespace perfetto_fields;
enum Annotation { kEngine, kCallId, kThread, kDevice, kLayer, kNumAnnotations };

// Every message here is under 128 bytes (kMaxPacket): the cursor's one length byte.
struct Bytes : wire::Cursor {
  void annotation(uint64_t name_iid, uint32_t value_field, uint64_t v) {
    uint8_t* at = open(kDebugAnnotations);
    field(kAnnotationNameIid, name_iid);
    field(value_field, v);
    close(at);
  }
};

// tag+length 2, timestamp 11, sequence 2, track event 2 + type 2 + track 11 + name 11, annotations
// engine 2+2+6, call_id 2+2+11, thread 2+2+6, device 2+2+4, layer 2+2+11 (ids under 2^63).
constexpr size_t kMaxPacket = 2 + 11 + 2 + 2 + 2 + 11 + 11 + 10 + 15 + 10 + 8 + 15;
static_assert(kMaxPacket - 2 < 128, "one-byte lengths");

std::tuple<at::Tensor, int64_t> layer_perfetto_packets(const at::Tensor& records, const at::Tensor& track_uuids,
                                                       int64_t seq_id, const std::vector<int64_t>& annotation_iids,
                                                       int64_t name_iid_base, const std::optional<at::Tensor>& out_buffer) {
  int64_t n = 0;
  const Record* rec = layer_records(records, &n, "layer_perfetto_packets");
  TORCH_CHECK(track_uuids.dtype() == at::kLong && track_uuids.numel() == n,
              "layer_perfetto_packets: one int64 track uuid per record");
  TORCH_CHECK(annotation_iids.size() == kNumAnnotations, "layer_perfetto_packets: ", kNumAnnotations,
              " annotation name iids expected (engine, call_id, thread, device, layer)");
  TORCH_CHECK(seq_id > 0 && seq_id < 128, "layer_perfetto_packets: the sequence id must be in 1..127");
  for (int64_t a : annotation_iids) TORCH_CHECK(a > 0 && a < 128, "layer_perfetto_packets: iids must be in 1..127");
  TORCH_CHECK(name_iid_base > 0 && name_iid_base < (int64_t{1} << 40), "layer_perfetto_packets: bad name_iid_base");
  const at::Tensor uuid_c = track_uuids.contiguous();
  const int64_t* uuid = uuid_c.data_ptr<int64_t>();
  const auto iid = [&](Annotation a) { return static_cast<uint64_t>(annotation_iids[a]); };
  // Perfetto sorts packets by timestamp and keeps file order among equal ones: records by begin
  // (a call's layers are already in order; a zero-length layer's end comes before the next begin).
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return rec[a].begin_ns < rec[b].begin_ns; });
  at::Tensor result = output_buffer(out_buffer, 2 * kMaxPacket * static_cast<size_t>(n) + 1, "layer_perfetto_packets");
  uint8_t* const begin = result.data_ptr<uint8_t>();
  Bytes ev{begin};
  const auto event = [&](int64_t ts, uint32_t type, uint64_t track) {
    uint8_t* packet = ev.open(kTracePacket);
    ev.field(kTimestamp, static_cast<uint64_t>(ts));
    ev.field(kSequenceId, static_cast<uint64_t>(seq_id));
    uint8_t* te = ev.open(kTrackEvent);
    ev.field(kType, type);
    ev.field(kTrackUuid, track);
    return std::make_pair(te, packet);
  };
  for (int64_t i : order) {
    const Record& r = rec[i];
    TORCH_CHECK(uuid[i] >= 0, "layer_perfetto_packets: track uuids must be non-negative");
    const auto track = static_cast<uint64_t>(uuid[i]);
    const uint64_t name_iid = static_cast<uint64_t>(name_iid_base) + r.stream;
    auto lengths = event(r.begin_ns, kSliceBegin, track);
    ev.field(kNameIid, name_iid);
    ev.annotation(iid(kEngine), kStringValueIid, static_cast<uint64_t>(r.engine_id) + 1);
    ev.annotation(iid(kCallId), kUintValue, r.call_id);
    ev.annotation(iid(kThread), kUintValue, r.thread_id);
    if (r.device != kNoDevice) ev.annotation(iid(kDevice), kUintValue, r.device);
    ev.annotation(iid(kLayer), kStringValueIid, name_iid);
    ev.close(lengths.first);
    ev.close(lengths.second);
    lengths = event(std::max(r.end_ns, r.begin_ns), kSliceEnd, track);
    ev.close(lengths.first);
    ev.close(lengths.second);
  }
  return {result, static_cast<int64_t>(ev.p - begin)};
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
