// The output of the native writer thread: one interface for every trace format the thread writes, so that
// the thread (session/native_writer.h) drains, keeps the counters and handles failures, fork and the end
// alike for all of them. Each format is registered by the file that implements it (a
// TRT_TRACE_REGISTER_FORMAT line there: its name and how it is made from a FormatStart), as Chrome JSON
// (session/chrome_json_trace.cpp) and Perfetto (session/perfetto_trace.cpp) are; the session picks one by
// name at start (WriterSettings::format), and nothing else names a format.
//
// A format owns its file (session/trace_file.h: parts, size limit, lazy creation, cut-back after a failed
// write, the one-writer-per-path lock), formats each drained batch onto it and encodes the file's own
// records: what every part starts with, the end record of a part the trace goes on from, the closing.
// The end record's contents come from Python, already encoded in the format's own terms (TraceEnd).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/record.h"
#include "format/json_value.h"
#include "session/trace_file.h"

namespace trt_trace {
namespace session {

// Where names come from: the engine registry and the layer names in a session; given lists in tests.
struct NameSource {
  std::function<std::vector<std::string>()> engines;  // by engine id (index 0: "")
  std::function<std::vector<std::string>()> layers;   // by layer id (a LayerRecord's name_id)
};

// The end of a trace, as the session encodes it.
struct TraceEnd {
  std::string record;        // Chrome JSON: the end record's args object; Perfetto: its debug annotations
  int64_t monotonic_ns = 0;  // when the session ended (0: now); Perfetto stamps its end instant with it
};

// What a format is made from: the session's file, names and start metadata.
struct FormatStart {
  TraceFileOptions file;
  // The start metadata as Python encoded it for this format (trt_trace/runtime/native_trace.py): Chrome JSON,
  // the array's first events (process name, start metadata) comma-separated, or in flight mode the metadata
  // object alone; Perfetto, the start metadata instant's debug annotations; any other format, the metadata
  // object as JSON text.
  std::string head;
  std::string process_name;  // the process's name, valid UTF-8
  int64_t start_ns = 0;      // the start metadata's monotonic_ns (0: none)
  int64_t pid = 0;
  bool gpu_flows = true;     // launch flows (GPU timing on)
  // A flight dump (session/native_writer.h): its `flight` entry, which the format adds to the start
  // metadata; null for a session's own file.
  const json_value::Value* flight = nullptr;
  NameSource names;
};

class TraceFormat;
using FormatMaker = std::unique_ptr<TraceFormat> (*)(FormatStart start);
// Registers a format under `name` (TRT_TRACE_FORMAT's value, as trt_trace/io/formats.py registers it);
// true, for the static initialiser of TRT_TRACE_REGISTER_FORMAT.
bool register_format(const char* name, FormatMaker make);
// The format `name` made from `start` (it opens its file unless lazy, and may throw); nullptr where none
// has that name.
std::unique_ptr<TraceFormat> make_format(const std::string& name, FormatStart start);
bool format_known(const std::string& name);
std::vector<std::string> format_names();  // in name order
#define TRT_TRACE_REGISTER_FORMAT(name, make) \
  [[maybe_unused]] static const bool kTrtTraceFormatRegistered = ::trt_trace::session::register_format(name, make)

// The earliest begin and the latest end of a batch's records (n > 0), and its highest engine id.
template <typename Kind>  // Record, LayerRecord, InferenceRecord
int64_t first_begin(const Kind* recs, size_t n) {
  int64_t first = recs[0].begin_ns;
  for (size_t i = 1; i < n; ++i) first = first < recs[i].begin_ns ? first : recs[i].begin_ns;
  return first;
}
template <typename Kind>
int64_t last_end(const Kind* recs, size_t n) {
  int64_t last = recs[0].end_ns;
  for (size_t i = 1; i < n; ++i) last = last > recs[i].end_ns ? last : recs[i].end_ns;
  return last;
}
template <typename Kind>
uint32_t top_engine(const Kind* recs, size_t n) {
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = top > recs[i].engine_id ? top : recs[i].engine_id;
  return top;
}

class TraceFormat {
 public:
  virtual ~TraceFormat() = default;

  // A metadata dict as this format's end record holds it (TraceEnd::record): JSON text, debug annotations, ...
  virtual std::string encode_metadata(const json_value::Value& dict) const = 0;

  // One drained batch (throws WriteFailed; the file then keeps what it had): its calls, then its layer
  // records, then its inferences (both on tracks of their own), each part handed to the format in one piece.
  void write(const Record* recs, size_t n);

  // Ends the trace with its end record (throws WriteFailed: the disk filled at the end).
  void finish(const TraceEnd& end) { file_->finish(closing(end), empty_part_ns(end)); }
  // After a failed write: cuts back to the last whole batch and ends with the end record; false where
  // that cannot be done (the file then has no end).
  bool finish_after_failure(const TraceEnd& end) { return file_->finish_after_failure(closing(end)); }

  TraceFile& file() { return *file_; }

 protected:
  // A batch's calls and phases (GPU spans included), and its per-layer records; each part is non-empty.
  virtual void write_calls(const Record* recs, size_t n) = 0;
  virtual void write_layers(const LayerRecord* recs, size_t n) = 0;
  // A batch's inferences (Phase::kInference, docs/inference.md), non-empty.
  virtual void write_inferences(const InferenceRecord* recs, size_t n) = 0;
  // The end of the last part: the end record (and whatever else the format closes a trace with).
  virtual std::string closing(const TraceEnd& end) = 0;
  // The first timestamp of a part that got no batch (a non-lazy file of a session that ran no engine).
  virtual int64_t empty_part_ns(const TraceEnd& end) const = 0;

  std::unique_ptr<TraceFile> file_;

 private:
  std::vector<Record> calls_;
  std::vector<LayerRecord> layers_;  // a batch that holds layer or inference records, split (reused)
  std::vector<InferenceRecord> inferences_;
};

}  // namespace session
}  // namespace trt_trace
