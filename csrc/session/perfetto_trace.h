// A native Perfetto trace (protobuf TrackEvent) written from drained batches on the native writer's thread
// (one of its formats: session/trace_format.h). Byte for byte what the Python writer
// (trt_trace/writers/perfetto_trace.py) writes for the same records, names and
// clock readings: the same track book decisions (session/lane_book.h, the uuids following its track
// indices), the same rare packets (format/perfetto_track_packets.h) and slices (format/perfetto_slices.h),
// the same file handling (session/trace_file.h, with no separator and no closing bracket: a Perfetto trace
// is a run of packets). The layout of the trace (sequence, uuids, ranks, interned ids) is the Python
// module's docstring's; tests/test_writer_bytes.py holds the two writers to the same bytes.
//
// Every part starts with a clock snapshot, the sequence's interned names, the process and its groups, the
// start metadata instant stamped at the part's first record, and every track seen so far; the end is a
// second clock snapshot and the end metadata instant, stamped at the last record's end.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/record.h"
#include "format/perfetto_slices.h"
#include "session/lane_book.h"
#include "session/trace_file.h"
#include "session/trace_format.h"

namespace trt_trace {
namespace session {

struct PerfettoStart {
  int64_t pid = 0;
  std::string process_name;       // the process track's name (valid UTF-8 is kept as it is)
  std::string start_annotations;  // the start metadata instant's debug annotations, encoded by Python
  int64_t start_ns = 0;           // the start metadata's monotonic_ns (0: none), stamps a part with no record
  bool flows = true;              // launch flows (GPU timing on)
  // (boottime, monotonic, realtime) ns for a clock snapshot; empty: read the clocks (tests pin them).
  std::function<std::array<uint64_t, 3>()> clocks;
};

class PerfettoTrace : public TraceFormat {
 public:
  PerfettoTrace(TraceFileOptions options, PerfettoStart start, NameSource names);

  // The debug annotations of a metadata instant.
  std::string encode_metadata(const json_value::Value& dict) const override;

 protected:
  // A clock snapshot and the end metadata instant (annotations `end.record`), stamped at the earlier of
  // end.monotonic_ns and the last record's end (the timeline ends with the calls).
  std::string closing(const TraceEnd& end) override;
  // The start metadata's monotonic_ns, else the end's.
  int64_t empty_part_ns(const TraceEnd& end) const override;

 private:
  void write_calls(const Record* recs, size_t n) override;
  void write_layers(const LayerRecord* recs, size_t n) override;
  // Inference slices (docs/inference.md) on one "inference · <thread>" track per calling thread, under the
  // process (uuid kInferenceUuidBase + n for the n-th thread seen).
  void write_inferences(const InferenceRecord* recs, size_t n) override;
  std::string part_start(int64_t first_ns);
  void clock_snapshot(std::string& out) const;
  const std::string& engine_name(uint32_t engine_id);
  // The descriptors of a new lane track (and of its engine's track where that is new too), also kept for
  // every later part's start.
  void descriptors(const Track& track, std::string* out);
  // The uuid of each record's track (after the book placed the batch).
  template <typename Kind>  // Record or LayerRecord
  void track_uuids(const Kind* recs, size_t n, bool layers);
  uint8_t* body(size_t bytes);

  PerfettoStart start_;
  NameSource names_;
  LaneBook book_;
  Placement placed_;
  std::string start_tracks_;  // interned names, the process and its groups: what every part starts with
  std::string tracks_;        // every track descriptor (and interned layer names) so far
  int64_t last_end_ns_ = 0;
  std::vector<std::string> engine_names_, layer_names_;
  std::string engine_fallback_;
  std::vector<int64_t> uuids_;
  std::vector<perfetto_slices::SliceOrder> order_;
  std::vector<uint32_t> layer_order_;
  std::vector<uint8_t> body_;  // the formatted packets, reused (only grows)
  std::unordered_map<uint32_t, uint64_t> inference_uuids_;  // calling thread -> its inference track's uuid
  std::string inference_body_;
};

}  // namespace session
}  // namespace trt_trace
