// The field numbers and enum values of Perfetto's protos (perfetto/trace/trace.proto, trace_packet.proto,
// clock_snapshot.proto, interned_data/, track_event/) that trt_trace's encoders write, in one place.
//
// Written out here because the native encoders have no protobuf library; kept honest by
// tests/test_perfetto_trace.py::test_cpp_field_numbers_match_the_perfetto_descriptors, which compares
// every entry of kPerfettoFields (name, number, wire type) with the `perfetto` package's descriptors.
// Each is one line of TRT_TRACE_PERFETTO_FIELDS, from which both the constant the encoders use and its
// entry in that table are made.
#pragma once

#include <cstdint>

#include "format/protobuf_wire.h"

namespace trt_trace {
namespace perfetto_fields {

// F(constant, number, "Message.field" or "Message.Enum.VALUE" / "Enum.VALUE", how it is written: Varint,
// Fixed64, Bytes, or Enum for an enum value), nested messages and enums as dotted paths. A(constant, ...):
// the same constant as the field of another message (the interned entries share iid 1 and name 2),
// checked there too.
#define TRT_TRACE_PERFETTO_FIELDS(F, A) \
  F(kTracePacket, 1, "Trace.packet", Bytes)                                                          \
  F(kClockSnapshot, 6, "TracePacket.clock_snapshot", Bytes)                                          \
  F(kTimestamp, 8, "TracePacket.timestamp", Varint)                                                  \
  F(kSequenceId, 10, "TracePacket.trusted_packet_sequence_id", Varint)                               \
  F(kTrackEvent, 11, "TracePacket.track_event", Bytes)                                               \
  F(kInternedData, 12, "TracePacket.interned_data", Bytes)                                           \
  F(kSequenceFlags, 13, "TracePacket.sequence_flags", Varint)                                        \
  F(kTracePacketDefaults, 59, "TracePacket.trace_packet_defaults", Bytes)                            \
  F(kTrackDescriptor, 60, "TracePacket.track_descriptor", Bytes)                                     \
  F(kFirstPacketOnSequence, 87, "TracePacket.first_packet_on_sequence", Varint)                      \
  F(kSeqIncrementalStateCleared, 1, "TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED", Enum) \
  F(kDefaultTimestampClockId, 58, "TracePacketDefaults.timestamp_clock_id", Varint)                  \
  F(kClocks, 1, "ClockSnapshot.clocks", Bytes)                                                       \
  F(kClockId, 1, "ClockSnapshot.Clock.clock_id", Varint)                                             \
  F(kClockTimestamp, 2, "ClockSnapshot.Clock.timestamp", Varint)                                     \
  F(kClockRealtime, 1, "BuiltinClock.BUILTIN_CLOCK_REALTIME", Enum)                                  \
  F(kClockMonotonic, 3, "BuiltinClock.BUILTIN_CLOCK_MONOTONIC", Enum)                                \
  F(kClockBoottime, 6, "BuiltinClock.BUILTIN_CLOCK_BOOTTIME", Enum)                                  \
  F(kEventNames, 2, "InternedData.event_names", Bytes)                                               \
  F(kDebugAnnotationNames, 3, "InternedData.debug_annotation_names", Bytes)                          \
  F(kDebugAnnotationStringValues, 29, "InternedData.debug_annotation_string_values", Bytes)          \
  F(kInternedIid, 1, "EventName.iid", Varint)                                                        \
  F(kInternedName, 2, "EventName.name", Bytes)                                                       \
  A(kInternedIid, "DebugAnnotationName.iid", Varint)                                                 \
  A(kInternedName, "DebugAnnotationName.name", Bytes)                                                \
  A(kInternedIid, "InternedString.iid", Varint)                                                      \
  A(kInternedName, "InternedString.str", Bytes)                                                      \
  F(kDescriptorUuid, 1, "TrackDescriptor.uuid", Varint)                                              \
  F(kDescriptorName, 2, "TrackDescriptor.name", Bytes)                                               \
  F(kDescriptorProcess, 3, "TrackDescriptor.process", Bytes)                                         \
  F(kDescriptorParentUuid, 5, "TrackDescriptor.parent_uuid", Varint)                                 \
  F(kChildOrdering, 11, "TrackDescriptor.child_ordering", Varint)                                    \
  F(kSiblingOrderRank, 12, "TrackDescriptor.sibling_order_rank", Varint)                             \
  F(kChildOrderingExplicit, 3, "TrackDescriptor.ChildTracksOrdering.EXPLICIT", Enum)                 \
  F(kProcessPid, 1, "ProcessDescriptor.pid", Varint)                                                 \
  F(kProcessName, 6, "ProcessDescriptor.process_name", Bytes)                                        \
  F(kDebugAnnotations, 4, "TrackEvent.debug_annotations", Bytes)                                     \
  F(kType, 9, "TrackEvent.type", Varint)                                                             \
  F(kNameIid, 10, "TrackEvent.name_iid", Varint)                                                     \
  F(kTrackUuid, 11, "TrackEvent.track_uuid", Varint)                                                 \
  F(kEventName, 23, "TrackEvent.name", Bytes)                                                        \
  F(kFlowIds, 47, "TrackEvent.flow_ids", Fixed64)                                                    \
  F(kTerminatingFlowIds, 48, "TrackEvent.terminating_flow_ids", Fixed64)                             \
  F(kSliceBegin, 1, "TrackEvent.Type.TYPE_SLICE_BEGIN", Enum)                                        \
  F(kSliceEnd, 2, "TrackEvent.Type.TYPE_SLICE_END", Enum)                                            \
  F(kInstant, 3, "TrackEvent.Type.TYPE_INSTANT", Enum)                                               \
  F(kAnnotationNameIid, 1, "DebugAnnotation.name_iid", Varint)                                       \
  F(kBoolValue, 2, "DebugAnnotation.bool_value", Varint)                                             \
  F(kUintValue, 3, "DebugAnnotation.uint_value", Varint)                                             \
  F(kIntValue, 4, "DebugAnnotation.int_value", Varint)                                               \
  F(kDoubleValue, 5, "DebugAnnotation.double_value", Fixed64)                                        \
  F(kStringValue, 6, "DebugAnnotation.string_value", Bytes)                                          \
  F(kAnnotationName, 10, "DebugAnnotation.name", Bytes)                                              \
  F(kDictEntries, 11, "DebugAnnotation.dict_entries", Bytes)                                         \
  F(kArrayValues, 12, "DebugAnnotation.array_values", Bytes)                                         \
  F(kStringValueIid, 17, "DebugAnnotation.string_value_iid", Varint)

#define TRT_TRACE_DECLARE_FIELD(constant, number, name, wire) constexpr uint32_t constant = number;
#define TRT_TRACE_NO_DECLARATION(constant, name, wire)
TRT_TRACE_PERFETTO_FIELDS(TRT_TRACE_DECLARE_FIELD, TRT_TRACE_NO_DECLARATION)
#undef TRT_TRACE_NO_DECLARATION
#undef TRT_TRACE_DECLARE_FIELD

// For the check against the descriptors: name, number, wire type (-1 for an enum value).
struct FieldNumber {
  const char* name;
  uint32_t number;
  int wire;
};

constexpr int kAsEnum = -1;
constexpr int kAsVarint = static_cast<int>(wire::kVarint), kAsFixed64 = static_cast<int>(wire::kFixed64),
              kAsBytes = static_cast<int>(wire::kBytes);

#define TRT_TRACE_FIELD_ENTRY(constant, number, name, wire) {name, constant, kAs##wire},
#define TRT_TRACE_ALIAS_ENTRY(constant, name, wire) {name, constant, kAs##wire},
constexpr FieldNumber kPerfettoFields[] = {TRT_TRACE_PERFETTO_FIELDS(TRT_TRACE_FIELD_ENTRY, TRT_TRACE_ALIAS_ENTRY)};
#undef TRT_TRACE_ALIAS_ENTRY
#undef TRT_TRACE_FIELD_ENTRY

}  // namespace perfetto_fields
}  // namespace trt_trace
