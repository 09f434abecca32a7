#include "format/perfetto_track_packets.h"

#include <algorithm>
#include <ctime>
#include <numeric>

#include "format/perfetto_fields.h"
#include "format/protobuf_wire.h"
#include "format/utf8_text.h"

namespace trt_trace {
namespace perfetto_packets {
namespace {

using namespace perfetto_fields;

// The fields of one message, added in any order and written in field-number order (repeated fields in
// the order added), as protobuf's serializers write them: the encoders below need not know which of
// two fields has the lower number.
class Message {
 public:
  Message& varint(uint32_t field, uint64_t v) {
    wire::append_varint_field(part(field), field, v);
    return *this;
  }
  // int32 / int64 fields: a negative value as its 64-bit two's complement (ten bytes), as protobuf writes it.
  Message& signed_varint(uint32_t field, int64_t v) { return varint(field, static_cast<uint64_t>(v)); }
  Message& double_value(uint32_t field, double v) {
    wire::append_double_field(part(field), field, v);
    return *this;
  }
  Message& bytes(uint32_t field, std::string_view v) {
    wire::append_bytes_field(part(field), field, v);
    return *this;
  }
  Message& text(uint32_t field, std::string_view v) { return bytes(field, utf8_text(v)); }
  Message& message(uint32_t field, const Message& m) { return bytes(field, m.serialized()); }
  // Fields already encoded (tags included), all of number `field`.
  Message& encoded(uint32_t field, std::string_view fields) {
    part(field).append(fields.data(), fields.size());
    return *this;
  }

  std::string serialized() const {
    std::vector<size_t> order(parts_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return parts_[a].first < parts_[b].first; });
    std::string out;
    for (size_t i : order) out += parts_[i].second;
    return out;
  }

 private:
  std::string& part(uint32_t field) {
    parts_.emplace_back(field, std::string());
    return parts_.back().second;
  }
  std::vector<std::pair<uint32_t, std::string>> parts_;  // (field number, encoded field)
};

Message packet_on(uint32_t seq) {
  Message packet;
  packet.varint(kSequenceId, seq);
  return packet;
}

void frame_packet(std::string& out, const Message& packet) { frame(out, packet.serialized()); }

// An interned entry (EventName, DebugAnnotationName, InternedString: iid, then the name or str).
Message interned(uint64_t iid, std::string_view name) {
  Message entry;
  entry.varint(kInternedIid, iid).text(kInternedName, name);
  return entry;
}

uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// A DebugAnnotation's value from a kept Value (fill_annotation): a scalar field, or the dict's kept
// entries (each named) or the list's kept items, nested.
void fill_annotation(Message& annotation, const Value& value) {
  using Kind = Value::Kind;
  switch (value.kind) {
    case Kind::kNull:
      break;  // never reached: not kept
    case Kind::kBool:
      annotation.varint(kBoolValue, value.boolean ? 1 : 0);
      break;
    case Kind::kInt:
      annotation.signed_varint(kIntValue, value.int_value);
      break;
    case Kind::kUint:
      annotation.varint(kUintValue, value.uint_value);
      break;
    case Kind::kDouble:
      annotation.double_value(kDoubleValue, value.double_value);
      break;
    case Kind::kString:
      annotation.text(kStringValue, value.text);
      break;
    case Kind::kDict:
      for (const auto& [key, item] : value.entries) {
        if (!kept(item)) continue;
        Message entry;
        entry.text(kAnnotationName, key);
        fill_annotation(entry, item);
        annotation.message(kDictEntries, entry);
      }
      break;
    case Kind::kList:
      for (const Value& item : value.items) {
        if (!kept(item)) continue;
        Message nested;
        fill_annotation(nested, item);
        annotation.message(kArrayValues, nested);
      }
      break;
  }
}

}  // namespace

void frame(std::string& out, std::string_view packet) { wire::append_bytes_field(out, kTracePacket, packet); }

void clock_snapshot(std::string& out, uint32_t seq, uint64_t boottime_ns, uint64_t monotonic_ns, uint64_t realtime_ns) {
  Message snapshot;
  const std::pair<uint32_t, uint64_t> clocks[] = {
      {kClockBoottime, boottime_ns}, {kClockMonotonic, monotonic_ns}, {kClockRealtime, realtime_ns}};
  for (const auto& [id, ns] : clocks) {
    Message clock;
    clock.varint(kClockId, id).varint(kClockTimestamp, ns);
    snapshot.message(kClocks, clock);
  }
  Message packet = packet_on(seq);
  packet.message(kClockSnapshot, snapshot);
  frame_packet(out, packet);
}

void clock_snapshot(std::string& out, uint32_t seq) {
  // Back to back (a few hundred ns apart: well under the precision that matters for the records).
  const uint64_t mono = clock_ns(CLOCK_MONOTONIC);
  const uint64_t boot = clock_ns(CLOCK_BOOTTIME);
  const uint64_t real = clock_ns(CLOCK_REALTIME);
  clock_snapshot(out, seq, boot, mono, real);
}

void sequence_start(std::string& out, uint32_t seq, const std::vector<std::string>& phase_names,
                    std::string_view metadata_event_name, const std::vector<std::string>& annotation_names) {
  Message names;
  for (size_t i = 0; i < phase_names.size(); ++i) names.message(kEventNames, interned(i + 1, phase_names[i]));
  names.message(kEventNames, interned(phase_names.size() + 1, metadata_event_name));
  for (size_t i = 0; i < annotation_names.size(); ++i) {
    names.message(kDebugAnnotationNames, interned(i + 1, annotation_names[i]));
  }
  Message defaults;
  defaults.varint(kDefaultTimestampClockId, kClockMonotonic);
  Message packet = packet_on(seq);
  packet.varint(kFirstPacketOnSequence, 1)
      .varint(kSequenceFlags, kSeqIncrementalStateCleared)
      .message(kTracePacketDefaults, defaults)
      .message(kInternedData, names);
  frame_packet(out, packet);
}

void track_descriptor(std::string& out, uint32_t seq, uint64_t uuid, std::string_view name, uint64_t parent_uuid,
                      int32_t rank, bool has_children, std::optional<uint64_t> engine_iid) {
  Message track;
  track.varint(kDescriptorUuid, uuid)
      .varint(kDescriptorParentUuid, parent_uuid)
      .text(kDescriptorName, name)
      .signed_varint(kSiblingOrderRank, rank);
  if (has_children) track.varint(kChildOrdering, kChildOrderingExplicit);
  Message packet = packet_on(seq);
  packet.message(kTrackDescriptor, track);
  if (engine_iid.has_value()) {
    Message strings;
    strings.message(kDebugAnnotationStringValues, interned(*engine_iid, name));
    packet.message(kInternedData, strings);
  }
  frame_packet(out, packet);
}

void process_descriptor(std::string& out, uint32_t seq, uint64_t uuid, int32_t pid, std::string_view process_name) {
  Message process;
  process.signed_varint(kProcessPid, pid).text(kProcessName, process_name);
  Message track;
  track.varint(kDescriptorUuid, uuid).varint(kChildOrdering, kChildOrderingExplicit).message(kDescriptorProcess, process);
  Message packet = packet_on(seq);
  packet.message(kTrackDescriptor, track);
  frame_packet(out, packet);
}

void layer_names(std::string& out, uint32_t seq, const std::vector<uint32_t>& ids,
                 const std::vector<std::string>& names, uint64_t layer_iid_base, uint64_t layer_annotation_iid) {
  Message interned_data;
  interned_data.message(kDebugAnnotationNames, interned(layer_annotation_iid, "layer"));
  for (uint32_t id : ids) {
    const std::string& name = names.at(id);
    interned_data.message(kEventNames, interned(layer_iid_base + id, name));
    interned_data.message(kDebugAnnotationStringValues, interned(layer_iid_base + id, name));
  }
  Message packet = packet_on(seq);
  packet.message(kInternedData, interned_data);
  frame_packet(out, packet);
}

// ---- metadata -----------------------------------------------------------------------------------

Value Value::with_kind(Kind k) {
  Value v;
  v.kind = k;
  return v;
}

// Each a value of one kind with the one field of that kind set.
Value Value::of_bool(bool b) { Value v = with_kind(Kind::kBool); v.boolean = b; return v; }
Value Value::of_int(int64_t i) { Value v = with_kind(Kind::kInt); v.int_value = i; return v; }
Value Value::of_double(double d) { Value v = with_kind(Kind::kDouble); v.double_value = d; return v; }
Value Value::of_string(std::string s) { Value v = with_kind(Kind::kString); v.text = std::move(s); return v; }

Value Value::of_uint(uint64_t u) {
  if (u <= static_cast<uint64_t>(INT64_MAX)) return of_int(static_cast<int64_t>(u));
  Value v = with_kind(Kind::kUint);
  v.uint_value = u;
  return v;
}

Value& Value::add(std::string key, Value value) {
  entries.emplace_back(std::move(key), std::move(value));
  return *this;
}

Value& Value::push(Value item) {
  items.push_back(std::move(item));
  return *this;
}

bool kept(const Value& value) {
  switch (value.kind) {
    case Value::Kind::kNull:
      return false;
    case Value::Kind::kDict:
      return std::any_of(value.entries.begin(), value.entries.end(), [](const auto& e) { return kept(e.second); });
    case Value::Kind::kList:
      return std::any_of(value.items.begin(), value.items.end(), [](const Value& v) { return kept(v); });
    default:
      return true;
  }
}

std::string debug_annotations(const Value::Entries& metadata) {
  Message event;
  for (const auto& [key, value] : metadata) {
    if (!kept(value)) continue;
    Message annotation;
    annotation.text(kAnnotationName, key);
    fill_annotation(annotation, value);
    event.message(kDebugAnnotations, annotation);
  }
  return event.serialized();
}

std::string split_end_annotations(std::string_view next_part, int64_t part, uint64_t events) {
  return debug_annotations({{"ended", Value::of_string("split")},
                            {"next_part", Value::of_string(std::string(next_part))},
                            {"part", Value::of_int(part)},
                            {"events", Value::of_uint(events)}});
}

void metadata_instant(std::string& out, uint32_t seq, uint64_t ts, uint64_t track_uuid, uint64_t name_iid,
                      std::string_view annotations) {
  Message event;
  event.varint(kType, kInstant).varint(kTrackUuid, track_uuid).varint(kNameIid, name_iid);
  event.encoded(kDebugAnnotations, annotations);
  Message packet = packet_on(seq);
  packet.varint(kTimestamp, ts).message(kTrackEvent, event);
  frame_packet(out, packet);
}

void inference_slice(std::string& out, uint32_t seq, uint64_t begin_ns, uint64_t end_ns, uint64_t track_uuid,
                     std::string_view name, std::string_view kind, uint64_t call_id, uint64_t thread, bool error,
                     uint64_t call_id_iid, uint64_t thread_iid, uint64_t error_iid) {
  Message begin;
  {
    Message a;
    a.text(kAnnotationName, "kind").text(kStringValue, kind);
    begin.message(kDebugAnnotations, a);
  }
  {  // integers as Python's fill_annotation writes them: int64 where they fit, uint64 above
    Message a;
    a.varint(kAnnotationNameIid, call_id_iid).varint(call_id <= static_cast<uint64_t>(INT64_MAX) ? kIntValue : kUintValue,
                                                      call_id);
    begin.message(kDebugAnnotations, a);
  }
  {
    Message a;
    a.varint(kAnnotationNameIid, thread_iid).varint(kIntValue, thread);
    begin.message(kDebugAnnotations, a);
  }
  if (error) {
    Message a;
    a.varint(kAnnotationNameIid, error_iid).varint(kBoolValue, 1);
    begin.message(kDebugAnnotations, a);
  }
  begin.varint(kType, kSliceBegin).varint(kTrackUuid, track_uuid).text(kEventName, name);
  Message packet = packet_on(seq);
  packet.varint(kTimestamp, begin_ns).message(kTrackEvent, begin);
  frame_packet(out, packet);
  Message end;
  end.varint(kType, kSliceEnd).varint(kTrackUuid, track_uuid);
  Message end_packet = packet_on(seq);
  end_packet.varint(kTimestamp, end_ns).message(kTrackEvent, end);
  frame_packet(out, end_packet);
}

}  // namespace perfetto_packets
}  // namespace trt_trace
