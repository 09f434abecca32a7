// The packets of a native Perfetto trace that are not slices: the clock snapshot, the sequence's start
// (interned names), track and process descriptors, interned layer names and the metadata instants, with
// the debug annotations of a JSON-like value. Byte for byte what trt_trace/io/writers/perfetto_trace.py
// writes for the same arguments (_clock_snapshot_packet, _sequence_start_packet, _track_packet,
// the process descriptor of begin(), _metadata_packet, _layer_names_packet, frame), so that a writer
// that needs no Python (issue 37: the drain, formatting and the file on a native thread) writes the
// same files; tests/test_perfetto_track_packets.py compares the two over many inputs.
//
// Every function appends one framed packet (a `Trace.packet` field: tag 0x0A, varint length, the
// TracePacket), i.e. bytes that can be appended to a trace file as they are. Fields are written in
// field-number order, as protobuf serializers write them. Strings are bytes, made valid UTF-8 as
// format/utf8_text.h says (what Python's _text() makes of them). These packets are written a few times
// per file: they allocate freely; the per-record slices are format/perfetto_slices.h's.
//
// No torch: csrc/format is below every layer that uses it (tools/check_layout.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trt_trace {
namespace perfetto_packets {

// ---- framing ------------------------------------------------------------------------------------

// Appends `packet` (an encoded TracePacket) as one Trace.packet field: perfetto_trace.frame().
void frame(std::string& out, std::string_view packet);

// ---- the start of a sequence -------------------------------------------------------------------

// A ClockSnapshot (BOOTTIME, MONOTONIC, REALTIME, in that order) on sequence `seq`: _clock_snapshot_packet().
void clock_snapshot(std::string& out, uint32_t seq, uint64_t boottime_ns, uint64_t monotonic_ns, uint64_t realtime_ns);
// The same with the three clocks read now, back to back (monotonic, boottime, realtime, as Python reads them).
void clock_snapshot(std::string& out, uint32_t seq);

// The packet that starts sequence `seq` (first_packet_on_sequence, SEQ_INCREMENTAL_STATE_CLEARED,
// MONOTONIC as the default timestamp clock) and interns the event names `phase_names` (iid = index + 1)
// and `metadata_event_name` (iid = phase_names.size() + 1), and the debug annotation names
// `annotation_names` (iid = index + 1): _sequence_start_packet() with PHASE_NAMES, METADATA_EVENT and
// ANNOTATIONS.
void sequence_start(std::string& out, uint32_t seq, const std::vector<std::string>& phase_names,
                    std::string_view metadata_event_name, const std::vector<std::string>& annotation_names);

// ---- tracks -------------------------------------------------------------------------------------

// A TrackDescriptor named `name` under `parent_uuid`, placed among its siblings by `rank`;
// has_children: its own children are ordered explicitly (by their ranks). engine_iid: also interns
// `name` as a debug annotation string with that iid (an engine's track: iid = engine id + 1, what its
// slices' `engine` annotation refers to). _track_packet(uuid, name, parent, rank, has_children,
// engine_id) with engine_iid = engine_id + 1.
void track_descriptor(std::string& out, uint32_t seq, uint64_t uuid, std::string_view name, uint64_t parent_uuid,
                      int32_t rank, bool has_children, std::optional<uint64_t> engine_iid = std::nullopt);

// The process's TrackDescriptor (pid, name; children ordered explicitly): the one begin() writes.
void process_descriptor(std::string& out, uint32_t seq, uint64_t uuid, int32_t pid, std::string_view process_name);

// Interns layer names: the "layer" annotation name (iid `layer_annotation_iid`), then for each id in
// `ids` the name names.at(id) as an event name and as a debug annotation string, both iid
// layer_iid_base + id: _layer_names_packet(ids, names). std::out_of_range for an id past `names`.
void layer_names(std::string& out, uint32_t seq, const std::vector<uint32_t>& ids,
                 const std::vector<std::string>& names, uint64_t layer_iid_base, uint64_t layer_annotation_iid);

// ---- metadata -----------------------------------------------------------------------------------

// A JSON-like value, as the metadata instants' debug annotations hold it (perfetto_trace.fill_annotation):
// null, bool, integers, double, string, dict (ordered entries) and list.
struct Value {
  enum class Kind : uint8_t { kNull, kBool, kInt, kUint, kDouble, kString, kDict, kList };
  using Entries = std::vector<std::pair<std::string, Value>>;

  Kind kind = Kind::kNull;
  bool boolean = false;
  int64_t int_value = 0;
  uint64_t uint_value = 0;
  double double_value = 0;
  std::string text;      // kString: bytes, made UTF-8 when written
  Entries entries;       // kDict, in order; keys are bytes as `text`
  std::vector<Value> items;  // kList

  static Value null() { return Value{}; }
  static Value of_bool(bool v);
  // Integers take int_value where they fit in int64 and uint_value above, whatever C++ type they come
  // from: Python's rule for an int of that value.
  static Value of_int(int64_t v);
  static Value of_uint(uint64_t v);
  static Value of_double(double v);
  static Value of_string(std::string v);
  static Value dict() { return with_kind(Kind::kDict); }
  static Value list() { return with_kind(Kind::kList); }
  // Adds a dict entry / a list item; returns *this to chain.
  Value& add(std::string key, Value value);
  Value& push(Value item);

 private:
  static Value with_kind(Kind k);
};

// Whether a value is written (perfetto_trace._kept): not null, and a dict or list only with something
// kept in it (the trace processor cannot hold a null, and an empty container would read back as nothing).
bool kept(const Value& value);

// The TrackEvent.debug_annotations fields (each: tag, length, DebugAnnotation) of the kept entries of a
// metadata dict, named by their keys, lists and dicts nested: what _metadata_packet() puts in its event.
// This is the `annotations` argument of metadata_instant().
std::string debug_annotations(const Value::Entries& metadata);

// debug_annotations() of the end record of a part that a split trace goes on from:
// {"ended": "split", "next_part": next_part, "part": part, "events": events} (trace_file.TraceFile.write).
std::string split_end_annotations(std::string_view next_part, int64_t part, uint64_t events);

// An INSTANT TrackEvent at `ts` on track `track_uuid`, its name interned as `name_iid`, carrying
// `annotations`: encoded TrackEvent.debug_annotations fields (debug_annotations() above, or the bytes of
// Python's encoding: perfetto_trace.metadata_annotations()). _metadata_packet(ts, metadata) is this
// with METADATA_UUID, METADATA_NAME_IID and debug_annotations(metadata).
void metadata_instant(std::string& out, uint32_t seq, uint64_t ts, uint64_t track_uuid, uint64_t name_iid,
                      std::string_view annotations);

// ---- inferences (docs/inference.md) -------------------------------------------------------------

// An inference's SLICE_BEGIN at `begin_ns` (named `name`, not interned: a few per batch) and its SLICE_END
// at `end_ns` on track `track_uuid`. The begin's annotations: "kind" (named in full: no interned name),
// then call_id, thread and, where it raised, error = true (interned names call_id_iid, thread_iid,
// error_iid). What perfetto_trace.PerfettoTraceWriter._inference_packets() writes.
void inference_slice(std::string& out, uint32_t seq, uint64_t begin_ns, uint64_t end_ns, uint64_t track_uuid,
                     std::string_view name, std::string_view kind, uint64_t call_id, uint64_t thread, bool error,
                     uint64_t call_id_iid, uint64_t thread_iid, uint64_t error_iid);

}  // namespace perfetto_packets
}  // namespace trt_trace
