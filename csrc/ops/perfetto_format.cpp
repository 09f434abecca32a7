// Bulk encoding of drained records as Perfetto TrackEvent packets, for the Python writer
// (trt_trace/writers/perfetto_trace.py), which owns everything rare: track descriptors, interned
// names, the clock snapshot, metadata, the file. This file writes only the per-record slices.
//
// Why C++: a Python protobuf object per event caps a writer at well under 1 M events/s; this loop
// hand-encodes the wire format. Field numbers are constants here; tests compare them with the
// descriptors of the `perfetto` package's protos (perfetto_field_numbers below).
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
#include <vector>

#include "common/record.h"

namespace trt_trace {
namespace {

// Field numbers of the protos (perfetto/trace/trace.proto, trace_packet.proto, track_event/*.proto).
constexpr uint32_t kTracePacket = 1;           // Trace.packet
constexpr uint32_t kTimestamp = 8;             // TracePacket.timestamp
constexpr uint32_t kSequenceId = 10;           // TracePacket.trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;           // TracePacket.track_event
constexpr uint32_t kDebugAnnotations = 4;      // TrackEvent.debug_annotations
constexpr uint32_t kType = 9;                  // TrackEvent.type
constexpr uint32_t kNameIid = 10;              // TrackEvent.name_iid
constexpr uint32_t kTrackUuid = 11;            // TrackEvent.track_uuid
constexpr uint32_t kFlowIds = 47;              // TrackEvent.flow_ids (fixed64)
constexpr uint32_t kTerminatingFlowIds = 48;   // TrackEvent.terminating_flow_ids (fixed64)
constexpr uint32_t kAnnotationNameIid = 1;     // DebugAnnotation.name_iid
constexpr uint32_t kBoolValue = 2;             // DebugAnnotation.bool_value
constexpr uint32_t kUintValue = 3;             // DebugAnnotation.uint_value
constexpr uint32_t kSliceBegin = 1;            // TrackEvent.Type.TYPE_SLICE_BEGIN
constexpr uint32_t kSliceEnd = 2;              // TrackEvent.Type.TYPE_SLICE_END

constexpr uint32_t kVarint = 0, kFixed64 = 1, kBytes = 2;

// Interned annotation names, in the order of the caller's `annotation_iids` list.
enum Annotation { kCallId, kThread, kDevice, kStream, kError, kNested, kCaptured, kNumAnnotations };

size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A cursor into a buffer sized for the worst case up front: no capacity checks per append.
struct Out {
  uint8_t* p;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<uint8_t>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<uint8_t>(v);
  }
  void tag(uint32_t field, uint32_t wire) { varint((field << 3) | wire); }
  void field(uint32_t field, uint64_t v) {
    tag(field, kVarint);
    varint(v);
  }
  void fixed64(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    std::memcpy(p, &v, 8);  // little-endian on every platform torch builds for
    p += 8;
  }
  void bytes(uint32_t field, const uint8_t* data, size_t n) {
    tag(field, kBytes);
    varint(n);
    std::memcpy(p, data, n);
    p += n;
  }
  // A debug annotation {name_iid, <value field>: v}; every value here is a varint.
  void annotation(uint64_t name_iid, uint32_t value_field, uint64_t v) {
    tag(kDebugAnnotations, kBytes);
    varint(varint_size(name_iid) + varint_size(v) + 2);  // two one-byte tags
    field(kAnnotationNameIid, name_iid);
    field(value_field, v);
  }
};

// One begin or end of a record's slice, placed so that Perfetto (which sorts packets by
// timestamp and keeps the file order among equal ones) rebuilds the nesting: at one timestamp
// ends come first, then begins, the longer slice first; a zero-length slice ends right after
// it begins.
struct Event {
  int64_t ts;
  int64_t order;  // among begins at ts: -(end), the outer slice first
  uint32_t record;
  uint8_t rank;   // 0: end of a slice with a duration, 1: begin, or either end of a zero-length one
  uint8_t phase;  // the call before its phases when both span the same time
  uint8_t is_end;
  bool operator<(const Event& o) const {
    return std::tie(ts, rank, order, phase, is_end, record) <
           std::tie(o.ts, o.rank, o.order, o.phase, o.is_end, o.record);
  }
};

void encode_packet(Out& out, int64_t ts, uint64_t seq_id, const uint8_t* event, size_t event_size) {
  const size_t packet_size = 1 + varint_size(static_cast<uint64_t>(ts)) + 1 + varint_size(seq_id) + 1 +
                             varint_size(event_size) + event_size;
  out.tag(kTracePacket, kBytes);
  out.varint(packet_size);
  out.field(kTimestamp, static_cast<uint64_t>(ts));
  out.field(kSequenceId, seq_id);
  out.bytes(kTrackEvent, event, event_size);
}

// records: uint8 [n * 40]; track_uuids: int64 [n], the track of each record; annotation_iids: the
// interned names (see Annotation); flows: flow ids from each launching enqueue to its GPU slice.
// The event name of a record is interned as phase + 1.
at::Tensor encode_slices(const at::Tensor& records, const at::Tensor& track_uuids, int64_t seq_id,
                         const std::vector<int64_t>& annotation_iids, bool flows) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "perfetto_slice_packets: records must be contiguous uint8 of whole records");
  const int64_t n = records.numel() / static_cast<int64_t>(sizeof(Record));
  TORCH_CHECK(track_uuids.dtype() == at::kLong && track_uuids.numel() == n,
              "perfetto_slice_packets: one int64 track uuid per record");
  TORCH_CHECK(annotation_iids.size() == kNumAnnotations, "perfetto_slice_packets: ", kNumAnnotations,
              " annotation name iids expected");
  TORCH_CHECK(seq_id > 0, "perfetto_slice_packets: the sequence id must be positive");
  const at::Tensor uuid_c = track_uuids.contiguous();
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const int64_t* uuid = uuid_c.data_ptr<int64_t>();
  const auto iid = [&](Annotation a) { return static_cast<uint64_t>(annotation_iids[a]); };
  const auto seq = static_cast<uint64_t>(seq_id);

  std::vector<Event> events;
  events.reserve(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    if (r.phase > static_cast<uint8_t>(Phase::kGpu)) continue;
    const auto idx = static_cast<uint32_t>(i);
    const bool empty = r.end_ns <= r.begin_ns;
    events.push_back(Event{r.begin_ns, -r.end_ns, idx, 1, r.phase, 0});
    events.push_back(empty ? Event{r.begin_ns, -r.begin_ns, idx, 1, r.phase, 1}
                           : Event{r.end_ns, -r.begin_ns, idx, 0, 0, 1});
  }
  std::sort(events.begin(), events.end());

  // Worst case per record: begin packet <= 3 + 11 + 11 + 3 + (3 + 11 + 3 + 7 * 24 + 2 * 11) and end packet <= 64.
  constexpr size_t kWorstPerRecord = 384;
  at::Tensor result = at::empty({static_cast<int64_t>(kWorstPerRecord * events.size() / 2 + 1)}, at::kByte);
  uint8_t* const begin = result.data_ptr<uint8_t>();
  Out out{begin};
  uint8_t scratch[kWorstPerRecord];
  for (const Event& e : events) {
    const Record& r = rec[e.record];
    Out ev{scratch};
    ev.field(kType, e.is_end ? kSliceEnd : kSliceBegin);
    ev.field(kTrackUuid, static_cast<uint64_t>(uuid[e.record]));
    if (!e.is_end) {
      // The same facts as the Chrome JSON's args; the engine is the track's parent.
      ev.field(kNameIid, r.phase + 1u);
      ev.annotation(iid(kCallId), kUintValue, r.call_id);
      ev.annotation(iid(kThread), kUintValue, r.thread_id);
      if (r.device != kNoDevice) ev.annotation(iid(kDevice), kUintValue, r.device);
      const bool gpu = r.phase == static_cast<uint8_t>(Phase::kGpu);
      if (gpu) ev.annotation(iid(kStream), kUintValue, r.stream);
      if (r.flags & kFlagError) ev.annotation(iid(kError), kBoolValue, 1);
      if (r.flags & kFlagNested) ev.annotation(iid(kNested), kBoolValue, 1);
      if (r.flags & kFlagCaptured) ev.annotation(iid(kCaptured), kBoolValue, 1);
      // A flow from the enqueue slice to the GPU slice it launched (the call id names it), as
      // the JSON's launch arrows: none for failed or graph-captured calls (nothing ran).
      const bool launch = r.phase == static_cast<uint8_t>(Phase::kEnqueue) && r.device != kNoDevice &&
                          !(r.flags & (kFlagCaptured | kFlagError));
      if (flows && launch) ev.fixed64(kFlowIds, r.call_id);
      if (flows && gpu) ev.fixed64(kTerminatingFlowIds, r.call_id);
    }
    encode_packet(out, e.ts, seq, scratch, static_cast<size_t>(ev.p - scratch));
  }
  return result.narrow(0, 0, out.p - begin);
}

// The constants above by proto name, for the test that checks them against the descriptors.
std::tuple<std::vector<std::string>, std::vector<int64_t>> field_numbers() {
  std::vector<std::pair<std::string, int64_t>> table = {
      {"Trace.packet", kTracePacket},
      {"TracePacket.timestamp", kTimestamp},
      {"TracePacket.trusted_packet_sequence_id", kSequenceId},
      {"TracePacket.track_event", kTrackEvent},
      {"TrackEvent.debug_annotations", kDebugAnnotations},
      {"TrackEvent.type", kType},
      {"TrackEvent.name_iid", kNameIid},
      {"TrackEvent.track_uuid", kTrackUuid},
      {"TrackEvent.flow_ids", kFlowIds},
      {"TrackEvent.terminating_flow_ids", kTerminatingFlowIds},
      {"DebugAnnotation.name_iid", kAnnotationNameIid},
      {"DebugAnnotation.bool_value", kBoolValue},
      {"DebugAnnotation.uint_value", kUintValue},
      {"TrackEvent.Type.TYPE_SLICE_BEGIN", kSliceBegin},
      {"TrackEvent.Type.TYPE_SLICE_END", kSliceEnd},
  };
  std::vector<std::string> names;
  std::vector<int64_t> numbers;
  for (auto& [name, number] : table) {
    names.push_back(name);
    numbers.push_back(number);
  }
  return {names, numbers};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("perfetto_slice_packets(Tensor records, Tensor track_uuids, int seq_id, int[] annotation_iids, "
        "bool flows) -> Tensor",
        &trt_trace::encode_slices);
  m.def("perfetto_field_numbers() -> (str[], int[])", &trt_trace::field_numbers);
}
