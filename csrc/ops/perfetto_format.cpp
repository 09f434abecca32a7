// Bulk encoding of drained records as Perfetto TrackEvent packets, for the Python writer
// (trt_trace/io/writers/perfetto_trace.py), which owns everything rare: track descriptors, interned
// names, the clock snapshot, metadata, the file. This file writes only the per-record slices.
//
// Why C++: a Python protobuf object per event caps a writer at well under 1 M events/s; this loop
// hand-encodes the wire format (format/protobuf_wire.h). Field numbers are constants in
// format/perfetto_fields.h; tests compare them with the descriptors of the `perfetto` package's protos
// (perfetto_field_numbers below).
//
// Output: a run of Trace.packet fields (tag 0x0A, length, TracePacket), i.e. bytes that can be
// appended to a trace file as they are. Each record becomes a SLICE_BEGIN packet (name, debug
// annotations, flow ids) and a SLICE_END packet on the track the caller chose for it.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/record.h"
#include "format/perfetto_fields.h"
#include "format/protobuf_wire.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

using namespace perfetto_fields;  // field numbers (format/perfetto_fields.h, checked against the protos)

// Interned annotation names, in the order of the caller's `annotation_iids` list.
enum Annotation { kEngine, kCallId, kThread, kDevice, kStream, kError, kNested, kCaptured, kEngineStream, kNumAnnotations };

#define TRT_TRACE_INLINE TRT_TRACE_WIRE_INLINE

// The wire cursor (format/protobuf_wire.h) with a slice's debug annotation.
struct Out : wire::Cursor {
  // A debug annotation {name_iid, <value field>: v}; every value here is a varint.
  TRT_TRACE_INLINE void annotation(uint64_t name_iid, uint32_t value_field, uint64_t v) {
    uint8_t* length_at = open(kDebugAnnotations);
    field(kAnnotationNameIid, name_iid);
    field(value_field, v);
    close(length_at);
  }
};

// The longest packet: tag, length, timestamp (11), sequence id (2), track event (2 + type 2, track
// 10, name 2, annotations engine 10, call_id 15, thread 10, device 8, stream 10, three flags 18,
// flows 20), with ids below 128, engine ids below 2^32 and track uuids below 2^63.
constexpr size_t kMaxPacket = 2 + 11 + 2 + 2 + 105;
static_assert(kMaxPacket - 2 < 128, "one-byte lengths");

// The order records are written in. Perfetto sorts packets by timestamp and keeps the file order
// among equal ones, and an end closes the innermost open slice of its track, so only equal
// timestamps on one track need care. Writing each record's begin and end together, records by
// (begin, longer first, call before phase), gets them right: an end at t comes from a slice that
// began before any slice beginning at t (or is a zero-length one nested at t), and of two begins
// at t the outer comes first. Ends are anonymous, so the order of several ends at t does not matter.
// GPU spans go after host records that begin at the same ns (they are on other tracks, so nesting
// does not care): a span clamped to its call's enqueue begins with it, and trace processor drops a
// flow whose terminating end comes before its start.
struct Order {
  int64_t begin;
  bool gpu;
  int64_t neg_end;
  uint8_t rank;  // the phase, except a caller-stream wait's (0: before the span it contains)
  uint32_t record;
  bool operator<(const Order& o) const {
    return std::tie(begin, gpu, neg_end, rank, record) < std::tie(o.begin, o.gpu, o.neg_end, o.rank, o.record);
  }
};

// Opens a TracePacket with its timestamp and sequence and, inside it, a TrackEvent of `type` on
// `track`; returns the two length bytes to close (event, packet).
TRT_TRACE_INLINE std::pair<uint8_t*, uint8_t*> open_event(Out& out, int64_t ts, uint64_t seq_id, uint32_t type, uint64_t track) {
  uint8_t* packet = out.open(kTracePacket);
  out.field(kTimestamp, static_cast<uint64_t>(ts));
  out.field(kSequenceId, seq_id);
  uint8_t* event = out.open(kTrackEvent);
  out.field(kType, type);
  out.field(kTrackUuid, track);
  return {event, packet};
}

TRT_TRACE_INLINE void close_event(Out& out, std::pair<uint8_t*, uint8_t*> lengths) {
  out.close(lengths.first);
  out.close(lengths.second);
}

// records: uint8 [n * 40]; track_uuids: int64 [n], the track of each record; annotation_iids: the
// interned names (see Annotation); flows: flow ids from each launching enqueue to its GPU slice.
// The event name of a record is interned as phase + 1, its engine's name (a debug annotation
// string, so that SQL finds a slice's engine in its args as in the JSON) as engine id + 1. Returns (buffer, n): the packets in the first
// n bytes of buffer, which is `out` when given and large enough, else a new one (ops/output_buffer.h).
std::tuple<at::Tensor, int64_t> perfetto_slice_packets(const at::Tensor& records, const at::Tensor& track_uuids,
                                              int64_t seq_id, const std::vector<int64_t>& annotation_iids,
                                              bool flows, const std::optional<at::Tensor>& out_buffer) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "perfetto_slice_packets: records must be contiguous uint8 of whole records");
  const int64_t n = records.numel() / static_cast<int64_t>(sizeof(Record));
  TORCH_CHECK(track_uuids.dtype() == at::kLong && track_uuids.numel() == n,
              "perfetto_slice_packets: one int64 track uuid per record");
  TORCH_CHECK(annotation_iids.size() == kNumAnnotations, "perfetto_slice_packets: ", kNumAnnotations,
              " annotation name iids expected");
  TORCH_CHECK(seq_id > 0 && seq_id < 128, "perfetto_slice_packets: the sequence id must be in 1..127");
  for (int64_t a : annotation_iids) TORCH_CHECK(a > 0 && a < 128, "perfetto_slice_packets: iids must be in 1..127");
  const at::Tensor uuid_c = track_uuids.contiguous();
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const int64_t* uuid = uuid_c.data_ptr<int64_t>();
  const auto iid = [&](Annotation a) { return static_cast<uint64_t>(annotation_iids[a]); };
  const auto seq = static_cast<uint64_t>(seq_id);

  // Kept from batch to batch (one drainer thread formats): no batch-sized allocation here either.
  thread_local std::vector<Order> order;
  order.clear();
  order.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    if (r.phase > kLastPublicPhase) continue;
    // A caller-stream wait and the engine span it contains may share both ends: the wait sorts
    // first (rank 0) so that it stays the outer slice, as in the JSON (the resolver hands it first).
    const uint8_t rank = r.phase == static_cast<uint8_t>(Phase::kCallerWait) ? 0 : r.phase;
    order.push_back(Order{r.begin_ns, is_gpu_span(r.phase), -std::max(r.end_ns, r.begin_ns), rank,
                          static_cast<uint32_t>(i)});
  }
  // A drained batch is mostly in order already (each thread's calls in time order, a call before
  // its phases): the check is cheaper than the sort it usually saves.
  if (!std::is_sorted(order.begin(), order.end())) std::sort(order.begin(), order.end());

  at::Tensor result = output_buffer(out_buffer, 2 * kMaxPacket * order.size() + 1, "perfetto_slice_packets");
  uint8_t* const begin = result.data_ptr<uint8_t>();
  Out ev{begin};
  for (const Order& o : order) {
    const Record& r = rec[o.record];
    const int64_t track_id = uuid[o.record];
    TORCH_CHECK(track_id >= 0, "perfetto_slice_packets: track uuids must be non-negative");
    const auto track = static_cast<uint64_t>(track_id);
    auto lengths = open_event(ev, r.begin_ns, seq, kSliceBegin, track);
    // The same facts as the Chrome JSON's args (the engine is also the track's parent).
    ev.field(kNameIid, r.phase + 1u);
    ev.annotation(iid(kEngine), kStringValueIid, static_cast<uint64_t>(r.engine_id) + 1);
    ev.annotation(iid(kCallId), kUintValue, r.call_id);
    ev.annotation(iid(kThread), kUintValue, r.thread_id);
    if (r.device != kNoDevice) ev.annotation(iid(kDevice), kUintValue, r.device);
    const bool gpu = r.phase == static_cast<uint8_t>(Phase::kGpu);
    if (is_gpu_span(r.phase)) ev.annotation(iid(kStream), kUintValue, r.stream);
    if (r.flags & kFlagError) ev.annotation(iid(kError), kBoolValue, 1);
    if (r.flags & kFlagNested) ev.annotation(iid(kNested), kBoolValue, 1);
    if (r.flags & kFlagCaptured) ev.annotation(iid(kCaptured), kBoolValue, 1);
    if (r.flags & kFlagEngineStream) ev.annotation(iid(kEngineStream), kBoolValue, 1);
    // A flow from the enqueue slice to the GPU slice it launched (the call id names it), as
    // the JSON's launch arrows: none for failed or graph-captured calls (nothing ran).
    const bool launch = launches_gpu(r);
    if (flows && launch) ev.fixed64(kFlowIds, r.call_id);
    if (flows && gpu) ev.fixed64(kTerminatingFlowIds, r.call_id);
    close_event(ev, lengths);
    close_event(ev, open_event(ev, -o.neg_end, seq, kSliceEnd, track));
  }
  return {result, static_cast<int64_t>(ev.p - begin)};
}

// The field numbers every Perfetto encoder uses (format/perfetto_fields.h), by proto name, with the wire type
// each is written with (-1: an enum value), for the test that checks them against the descriptors.
std::tuple<std::vector<std::string>, std::vector<int64_t>, std::vector<int64_t>> perfetto_field_numbers() {
  std::vector<std::string> names;
  std::vector<int64_t> numbers, wires;
  for (const FieldNumber& f : kPerfettoFields) {
    names.emplace_back(f.name);
    numbers.push_back(f.number);
    wires.push_back(f.wire);
  }
  return {names, numbers, wires};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("_perfetto_slice_packets(Tensor records, Tensor track_uuids, int seq_id, int[] annotation_iids, "
        "bool flows, Tensor? out=None) -> (Tensor, int)",
        &trt_trace::perfetto_slice_packets);
  m.def("_perfetto_field_numbers() -> (str[], int[], int[])", &trt_trace::perfetto_field_numbers);
}
