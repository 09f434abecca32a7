// The output of the native writer thread: one interface for every trace format the thread writes, so that
// the thread (session/native_writer.h) drains, keeps the counters and handles failures, fork and the end
// alike for all of them. Two implementations: ChromeJsonTrace (session/chrome_json_trace.h) and
// PerfettoTrace (session/perfetto_trace.h); the session picks one at start (WriterSettings::format).
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

class TraceFormat {
 public:
  virtual ~TraceFormat() = default;

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
