// A Chrome trace JSON file written from drained batches on the native writer's thread (one of its
// formats: session/trace_format.h): the track book
// places each batch (session/lane_book.h), the events are formatted (format/chrome_json_events.h) and
// the batch is appended to the file (session/trace_file.h). Byte for byte what the Python writer
// (trt_trace/io/writers/chrome_json.py) writes for the same records: the array opened by the process's
// metadata (encoded by Python at start) and every track's name events, a batch's new tracks' name
// events before its events, a batch's layer records (TRT_TRACE_LAYERS) after its other records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/record.h"
#include "session/lane_book.h"
#include "session/trace_file.h"
#include "session/trace_format.h"

namespace trt_trace {
namespace session {

class ChromeJsonTrace : public TraceFormat {
 public:
  // process_head: the process's metadata events, comma-separated, without brackets.
  ChromeJsonTrace(TraceFileOptions options, std::string process_head, int64_t pid, bool flows, NameSource names);

  // {"ph":"M","name":"trt_trace_metadata",...,"args":<args_json>}: the end record's event.
  std::string metadata_event(const std::string& args_json) const;
  // JSON text (the event's args).
  std::string encode_metadata(const json_value::Value& dict) const override;

 protected:
  // The end record's event, its args `end.record`.
  std::string closing(const TraceEnd& end) override { return metadata_event(end.record); }
  // A JSON part's start does not depend on a timestamp.
  int64_t empty_part_ns(const TraceEnd&) const override { return 0; }

 private:
  void write_calls(const Record* recs, size_t n) override;
  void write_layers(const LayerRecord* recs, size_t n) override;
  void write_inferences(const InferenceRecord* recs, size_t n) override;
  const std::string& engine_name(uint32_t engine_id);
  void refresh_engine_json(uint32_t top_engine_id);
  void refresh_layer_names(const LayerRecord* recs, size_t n);
  // thread_name and thread_sort_index events of a new track (also kept for the next part's start).
  void track_events(uint64_t tid, const std::string& name, std::string* meta);
  // body_ holds at least `bytes` (it only grows).
  void grow_body(size_t bytes);

  std::string process_head_;
  std::string pid_;
  bool flows_;
  NameSource names_;
  LaneBook book_;
  Placement placed_;
  std::vector<std::string> engine_names_, engine_json_, layer_names_, layer_json_;
  std::string engine_fallback_;
  std::string track_meta_;  // every track's name events so far, comma-separated
  std::unordered_map<uint32_t, uint64_t> inference_tids_;  // calling thread -> its inference track's tid
  std::vector<char> body_;              // the formatted events, reused
};

}  // namespace session
}  // namespace trt_trace
