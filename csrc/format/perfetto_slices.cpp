#include "format/perfetto_slices.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "format/perfetto_fields.h"
#include "format/protobuf_wire.h"

namespace trt_trace {
namespace perfetto_slices {
namespace {

using namespace perfetto_fields;  // field numbers (format/perfetto_fields.h, checked against the protos)

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

// The longest phase packet: tag, length, timestamp (11), sequence id (2), track event (2 + type 2, track
// 10, name 2, annotations engine 10, call_id 15, thread 10, device 8, stream 10, three flags 18,
// flows 20), with ids below 128, engine ids below 2^32 and track uuids below 2^63.
constexpr size_t kMaxSlicePacket = 2 + 11 + 2 + 2 + 105;
static_assert(kMaxSlicePacket - 2 < 128, "one-byte lengths");

// The longest layer packet: tag+length 2, timestamp 11, sequence 2, track event 2 + type 2 + track 11 +
// name 11, annotations engine 2+2+6, call_id 2+2+11, thread 2+2+6, device 2+2+4, layer 2+2+11 (ids under 2^63).
constexpr size_t kMaxLayerPacket = 2 + 11 + 2 + 2 + 2 + 11 + 11 + 10 + 15 + 10 + 8 + 15;
static_assert(kMaxLayerPacket - 2 < 128, "one-byte lengths");

// Opens a TracePacket with its timestamp and sequence and, inside it, a TrackEvent of `type` on
// `track`; returns the two length bytes to close (event, packet).
TRT_TRACE_INLINE std::pair<uint8_t*, uint8_t*> open_event(Out& out, int64_t ts, uint64_t seq_id, uint32_t type,
                                                          uint64_t track) {
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

}  // namespace

// The order records are written in. Perfetto sorts packets by timestamp and keeps the file order
// among equal ones, and an end closes the innermost open slice of its track, so only equal
// timestamps on one track need care. Writing each record's begin and end together, records by
// (begin, longer first, call before phase), gets them right: an end at t comes from a slice that
// began before any slice beginning at t (or is a zero-length one nested at t), and of two begins
// at t the outer comes first. Ends are anonymous, so the order of several ends at t does not matter.
// GPU spans go after host records that begin at the same ns (they are on other tracks, so nesting
// does not care): a span clamped to its call's enqueue begins with it, and trace processor drops a
// flow whose terminating end comes before its start.
bool SliceOrder::operator<(const SliceOrder& o) const {
  return std::tie(begin, gpu, neg_end, rank, record) < std::tie(o.begin, o.gpu, o.neg_end, o.rank, o.record);
}

size_t slice_packets_max_bytes(size_t n) { return 2 * kMaxSlicePacket * n + 1; }
size_t layer_packets_max_bytes(size_t n) { return 2 * kMaxLayerPacket * n + 1; }

size_t slice_packets(const Record* rec, size_t n, const int64_t* uuid, uint64_t seq, const SliceIids& iids, bool flows,
                     std::vector<SliceOrder>* order, uint8_t* out) {
  order->clear();
  order->reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Record& r = rec[i];
    if (r.phase > kLastPublicPhase) continue;
    // A caller-stream wait and the engine span it contains may share both ends: the wait sorts
    // first (rank 0) so that it stays the outer slice, as in the JSON (the resolver hands it first).
    const uint8_t rank = r.phase == static_cast<uint8_t>(Phase::kCallerWait) ? 0 : r.phase;
    order->push_back(SliceOrder{r.begin_ns, is_gpu_span(r.phase), -std::max(r.end_ns, r.begin_ns), rank,
                                static_cast<uint32_t>(i)});
  }
  // A drained batch is mostly in order already (each thread's calls in time order, a call before
  // its phases): the check is cheaper than the sort it usually saves.
  if (!std::is_sorted(order->begin(), order->end())) std::sort(order->begin(), order->end());

  Out ev{out};
  for (const SliceOrder& o : *order) {
    const Record& r = rec[o.record];
    const auto track = static_cast<uint64_t>(uuid[o.record]);
    auto lengths = open_event(ev, r.begin_ns, seq, kSliceBegin, track);
    // The same facts as the Chrome JSON's args (the engine is also the track's parent).
    ev.field(kNameIid, r.phase + 1u);
    ev.annotation(iids[kEngine], kStringValueIid, static_cast<uint64_t>(r.engine_id) + 1);
    ev.annotation(iids[kCallId], kUintValue, r.call_id);
    ev.annotation(iids[kThread], kUintValue, r.thread_id);
    if (r.device != kNoDevice) ev.annotation(iids[kDevice], kUintValue, r.device);
    const bool gpu = r.phase == static_cast<uint8_t>(Phase::kGpu);
    if (is_gpu_span(r.phase)) ev.annotation(iids[kStream], kUintValue, r.stream);
    if (r.flags & kFlagError) ev.annotation(iids[kError], kBoolValue, 1);
    if (r.flags & kFlagNested) ev.annotation(iids[kNested], kBoolValue, 1);
    if (r.flags & kFlagCaptured) ev.annotation(iids[kCaptured], kBoolValue, 1);
    if (r.flags & kFlagEngineStream) ev.annotation(iids[kEngineStream], kBoolValue, 1);
    // A flow from the enqueue slice to the GPU slice it launched (the call id names it), as
    // the JSON's launch arrows: none for failed or graph-captured calls (nothing ran).
    if (flows && launches_gpu(r)) ev.fixed64(kFlowIds, r.call_id);
    if (flows && gpu) ev.fixed64(kTerminatingFlowIds, r.call_id);
    close_event(ev, lengths);
    close_event(ev, open_event(ev, -o.neg_end, seq, kSliceEnd, track));
  }
  return static_cast<size_t>(ev.p - out);
}

size_t layer_packets(const LayerRecord* rec, size_t n, const int64_t* uuid, uint64_t seq, const LayerIids& iids,
                     uint64_t name_iid_base, std::vector<uint32_t>* order, uint8_t* out) {
  // Perfetto sorts packets by timestamp and keeps file order among equal ones: records by begin
  // (a call's layers are already in order; a zero-length layer's end comes before the next begin).
  order->resize(n);
  for (size_t i = 0; i < n; ++i) (*order)[i] = static_cast<uint32_t>(i);
  std::stable_sort(order->begin(), order->end(),
                   [&](uint32_t a, uint32_t b) { return rec[a].begin_ns < rec[b].begin_ns; });
  Out ev{out};
  for (const uint32_t i : *order) {
    const LayerRecord& r = rec[i];
    const auto track = static_cast<uint64_t>(uuid[i]);
    const uint64_t name_iid = name_iid_base + r.name_id;
    auto lengths = open_event(ev, r.begin_ns, seq, kSliceBegin, track);
    ev.field(kNameIid, name_iid);
    ev.annotation(iids[kLayerEngine], kStringValueIid, static_cast<uint64_t>(r.engine_id) + 1);
    ev.annotation(iids[kLayerCallId], kUintValue, r.call_id);
    ev.annotation(iids[kLayerThread], kUintValue, r.thread_id);
    if (r.device != kNoDevice) ev.annotation(iids[kLayerDevice], kUintValue, r.device);
    ev.annotation(iids[kLayerName], kStringValueIid, name_iid);
    close_event(ev, lengths);
    close_event(ev, open_event(ev, std::max(r.end_ns, r.begin_ns), seq, kSliceEnd, track));
  }
  return static_cast<size_t>(ev.p - out);
}

}  // namespace perfetto_slices
}  // namespace trt_trace
