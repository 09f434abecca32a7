// An inference (Phase::kInference, docs/inference.md) as the trace shows it, for the native writer: its
// track (one per calling thread, named "inference · <thread>", placed before every engine's) and its
// Chrome JSON slice. Byte for byte what the Python writer writes (trt_trace/io/writers/chrome_json.py,
// trt_trace/io/tracks.py inference_track_id).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/record.h"
#include "format/chrome_json_events.h"

namespace trt_trace {

constexpr const char* kInferenceCategory = "trt_trace.inference";  // never an engine call to a reader
constexpr const char* kInferenceName = "inference";
// The largest event's text besides the pid's digits: the fixed text and four numbers.
constexpr size_t kMaxInferenceEventBytes = 320;

// The JSON tid of the n-th calling thread seen (from 0): below the first engine's (1000), so that the
// Perfetto UI (tracks by tid) lists the inferences first; past 999 threads, in the overflow range of
// engine id 0, which no engine has (trt_trace/io/tracks.py).
inline uint64_t inference_track_tid(uint64_t n) {
  return n < 999 ? n + 1 : (static_cast<uint64_t>(1) << 31) + (n - 999);
}

inline std::string inference_track_name(uint32_t thread_id) {
  return std::string(kInferenceName) + " \xc2\xb7 " + std::to_string(thread_id);
}

inline const char* inference_kind_name(uint32_t kind) {
  return kind == 1 ? "aoti" : kind == 2 ? "module" : "other";
}

// {"ph":"X","cat":"trt_trace.inference","name":"inference",...} of an inference record on track `tid`.
inline void append_inference_event(JsonOut& out, const InferenceRecord& r, uint64_t tid, const char* pid, size_t pid_len) {
  out.lit(R"({"ph":"X","cat":"trt_trace.inference","name":"inference")");
  append_times(out, r, tid, pid, pid_len);
  out.lit(R"(,"args":{"kind":")");
  const char* kind = inference_kind_name(r.kind);
  out.lit(kind, std::char_traits<char>::length(kind));
  out.lit(R"(","call_id":)");
  out.num(r.call_id);
  out.lit(R"(,"thread":)");
  out.num(r.thread_id);
  if (r.flags & kFlagError) out.lit(R"(,"error":true)");
  out.lit("}}");
}

}  // namespace trt_trace
