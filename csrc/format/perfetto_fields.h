// The field numbers and enum values of Perfetto's protos (perfetto/trace/trace.proto, trace_packet.proto,
// clock_snapshot.proto, interned_data/, track_event/) that trt_trace's encoders write, in one place.
//
// Written out here because the native encoders have no protobuf library; kept honest by
// tests/test_perfetto_trace.py::test_cpp_field_numbers_match_the_perfetto_descriptors, which compares
// every entry of kPerfettoFields (name, number, wire type) with the `perfetto` package's descriptors.
// A constant used by an encoder must be in that table.
#pragma once

#include <cstdint>

#include "format/protobuf_wire.h"

namespace trt_trace {
namespace perfetto_fields {

// Trace
constexpr uint32_t kTracePacket = 1;  // Trace.packet
// TracePacket
constexpr uint32_t kClockSnapshot = 6;
constexpr uint32_t kTimestamp = 8;
constexpr uint32_t kSequenceId = 10;  // trusted_packet_sequence_id
constexpr uint32_t kTrackEvent = 11;
constexpr uint32_t kInternedData = 12;
constexpr uint32_t kSequenceFlags = 13;
constexpr uint32_t kTracePacketDefaults = 59;
constexpr uint32_t kTrackDescriptor = 60;
constexpr uint32_t kFirstPacketOnSequence = 87;
constexpr uint32_t kSeqIncrementalStateCleared = 1;  // TracePacket.SequenceFlags
// TracePacketDefaults
constexpr uint32_t kDefaultTimestampClockId = 58;  // timestamp_clock_id
// ClockSnapshot, ClockSnapshot.Clock, BuiltinClock
constexpr uint32_t kClocks = 1;
constexpr uint32_t kClockId = 1;
constexpr uint32_t kClockTimestamp = 2;
constexpr uint32_t kClockRealtime = 1, kClockMonotonic = 3, kClockBoottime = 6;
// InternedData and its entries (EventName, DebugAnnotationName, InternedString: iid 1 and a name or str 2)
constexpr uint32_t kEventNames = 2;
constexpr uint32_t kDebugAnnotationNames = 3;
constexpr uint32_t kDebugAnnotationStringValues = 29;
constexpr uint32_t kInternedIid = 1;
constexpr uint32_t kInternedName = 2;  // EventName.name, DebugAnnotationName.name, InternedString.str
// TrackDescriptor, ProcessDescriptor
constexpr uint32_t kDescriptorUuid = 1;
constexpr uint32_t kDescriptorName = 2;
constexpr uint32_t kDescriptorProcess = 3;
constexpr uint32_t kDescriptorParentUuid = 5;
constexpr uint32_t kChildOrdering = 11;
constexpr uint32_t kSiblingOrderRank = 12;
constexpr uint32_t kChildOrderingExplicit = 3;  // TrackDescriptor.ChildTracksOrdering.EXPLICIT
constexpr uint32_t kProcessPid = 1;
constexpr uint32_t kProcessName = 6;
// TrackEvent
constexpr uint32_t kDebugAnnotations = 4;
constexpr uint32_t kType = 9;
constexpr uint32_t kNameIid = 10;
constexpr uint32_t kTrackUuid = 11;
constexpr uint32_t kEventName = 23;  // TrackEvent.name (not interned)
constexpr uint32_t kFlowIds = 47;             // fixed64
constexpr uint32_t kTerminatingFlowIds = 48;  // fixed64
constexpr uint32_t kSliceBegin = 1, kSliceEnd = 2, kInstant = 3;  // TrackEvent.Type
// DebugAnnotation
constexpr uint32_t kAnnotationNameIid = 1;
constexpr uint32_t kBoolValue = 2;
constexpr uint32_t kUintValue = 3;
constexpr uint32_t kIntValue = 4;
constexpr uint32_t kDoubleValue = 5;
constexpr uint32_t kStringValue = 6;
constexpr uint32_t kAnnotationName = 10;
constexpr uint32_t kDictEntries = 11;
constexpr uint32_t kArrayValues = 12;
constexpr uint32_t kStringValueIid = 17;

// For the check against the descriptors: "Message.field" (wire type of the encoding used here) or
// "Message.Enum.VALUE" / "Enum.VALUE" (wire -1), nested messages and enums as dotted paths.
struct FieldNumber {
  const char* name;
  uint32_t number;
  int wire;
};

constexpr int kEnumValue = -1;
constexpr int kAsVarint = static_cast<int>(wire::kVarint), kAsFixed64 = static_cast<int>(wire::kFixed64),
              kAsBytes = static_cast<int>(wire::kBytes);

constexpr FieldNumber kPerfettoFields[] = {
    {"Trace.packet", kTracePacket, kAsBytes},
    {"TracePacket.clock_snapshot", kClockSnapshot, kAsBytes},
    {"TracePacket.timestamp", kTimestamp, kAsVarint},
    {"TracePacket.trusted_packet_sequence_id", kSequenceId, kAsVarint},
    {"TracePacket.track_event", kTrackEvent, kAsBytes},
    {"TracePacket.interned_data", kInternedData, kAsBytes},
    {"TracePacket.sequence_flags", kSequenceFlags, kAsVarint},
    {"TracePacket.trace_packet_defaults", kTracePacketDefaults, kAsBytes},
    {"TracePacket.track_descriptor", kTrackDescriptor, kAsBytes},
    {"TracePacket.first_packet_on_sequence", kFirstPacketOnSequence, kAsVarint},
    {"TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED", kSeqIncrementalStateCleared, kEnumValue},
    {"TracePacketDefaults.timestamp_clock_id", kDefaultTimestampClockId, kAsVarint},
    {"ClockSnapshot.clocks", kClocks, kAsBytes},
    {"ClockSnapshot.Clock.clock_id", kClockId, kAsVarint},
    {"ClockSnapshot.Clock.timestamp", kClockTimestamp, kAsVarint},
    {"BuiltinClock.BUILTIN_CLOCK_REALTIME", kClockRealtime, kEnumValue},
    {"BuiltinClock.BUILTIN_CLOCK_MONOTONIC", kClockMonotonic, kEnumValue},
    {"BuiltinClock.BUILTIN_CLOCK_BOOTTIME", kClockBoottime, kEnumValue},
    {"InternedData.event_names", kEventNames, kAsBytes},
    {"InternedData.debug_annotation_names", kDebugAnnotationNames, kAsBytes},
    {"InternedData.debug_annotation_string_values", kDebugAnnotationStringValues, kAsBytes},
    {"EventName.iid", kInternedIid, kAsVarint},
    {"EventName.name", kInternedName, kAsBytes},
    {"DebugAnnotationName.iid", kInternedIid, kAsVarint},
    {"DebugAnnotationName.name", kInternedName, kAsBytes},
    {"InternedString.iid", kInternedIid, kAsVarint},
    {"InternedString.str", kInternedName, kAsBytes},
    {"TrackDescriptor.uuid", kDescriptorUuid, kAsVarint},
    {"TrackDescriptor.name", kDescriptorName, kAsBytes},
    {"TrackDescriptor.process", kDescriptorProcess, kAsBytes},
    {"TrackDescriptor.parent_uuid", kDescriptorParentUuid, kAsVarint},
    {"TrackDescriptor.child_ordering", kChildOrdering, kAsVarint},
    {"TrackDescriptor.sibling_order_rank", kSiblingOrderRank, kAsVarint},
    {"TrackDescriptor.ChildTracksOrdering.EXPLICIT", kChildOrderingExplicit, kEnumValue},
    {"ProcessDescriptor.pid", kProcessPid, kAsVarint},
    {"ProcessDescriptor.process_name", kProcessName, kAsBytes},
    {"TrackEvent.debug_annotations", kDebugAnnotations, kAsBytes},
    {"TrackEvent.type", kType, kAsVarint},
    {"TrackEvent.name_iid", kNameIid, kAsVarint},
    {"TrackEvent.track_uuid", kTrackUuid, kAsVarint},
    {"TrackEvent.name", kEventName, kAsBytes},
    {"TrackEvent.flow_ids", kFlowIds, kAsFixed64},
    {"TrackEvent.terminating_flow_ids", kTerminatingFlowIds, kAsFixed64},
    {"TrackEvent.Type.TYPE_SLICE_BEGIN", kSliceBegin, kEnumValue},
    {"TrackEvent.Type.TYPE_SLICE_END", kSliceEnd, kEnumValue},
    {"TrackEvent.Type.TYPE_INSTANT", kInstant, kEnumValue},
    {"DebugAnnotation.name_iid", kAnnotationNameIid, kAsVarint},
    {"DebugAnnotation.bool_value", kBoolValue, kAsVarint},
    {"DebugAnnotation.uint_value", kUintValue, kAsVarint},
    {"DebugAnnotation.int_value", kIntValue, kAsVarint},
    {"DebugAnnotation.double_value", kDoubleValue, kAsFixed64},
    {"DebugAnnotation.string_value", kStringValue, kAsBytes},
    {"DebugAnnotation.name", kAnnotationName, kAsBytes},
    {"DebugAnnotation.dict_entries", kDictEntries, kAsBytes},
    {"DebugAnnotation.array_values", kArrayValues, kAsBytes},
    {"DebugAnnotation.string_value_iid", kStringValueIid, kAsVarint},
};

}  // namespace perfetto_fields
}  // namespace trt_trace
