// The text of one Chrome JSON event as trt_trace writes it: a slice (`X`) of a record, and a launch
// flow end (`s` / `f`). One definition for the writer (ops/chrome_json_format.cpp, through torch)
// and the torch-free reader library (readers/, `trt-trace merge` re-encoding the events it moves):
// the readers' fast path parses exactly this layout back (readers/json_lines.cpp).
//
// No torch, no allocation: the caller sizes the buffer for the worst case (kMaxEventBytes plus the
// engine name's literal and the pid's digits) and appends through a cursor.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/record.h"

namespace trt_trace {

// The longest event's fixed text plus 12 numbers of <= 21 characters, plus a flow event.
constexpr size_t kMaxEventBytes = 640;

// A cursor into a buffer sized for the worst case up front: no capacity checks per append.
struct JsonOut {
  char* p;
  void lit(const char* s, size_t n) {
    std::memcpy(p, s, n);
    p += n;
  }
  template <size_t N>
  void lit(const char (&s)[N]) {
    lit(s, N - 1);
  }
  void str(const std::string& s) { lit(s.data(), s.size()); }
  void num(uint64_t v) { p = std::to_chars(p, p + 20, v).ptr; }  // no locale, no format parsing
  // ns -> microseconds with exactly three decimals (Perfetto reads them back to the ns).
  void us(int64_t ns) {
    uint64_t v;
    if (ns < 0) {
      *p++ = '-';
      v = static_cast<uint64_t>(0) - static_cast<uint64_t>(ns);
    } else {
      v = static_cast<uint64_t>(ns);
    }
    num(v / 1000);
    const auto frac = static_cast<unsigned>(v % 1000);
    p[0] = '.';
    p[1] = static_cast<char>('0' + frac / 100);
    p[2] = static_cast<char>('0' + frac / 10 % 10);
    p[3] = static_cast<char>('0' + frac % 10);
    p += 4;
  }
};

// An X event's place and time, after its name: `,"ts":…,"dur":…,"pid":…,"tid":…`.
template <typename Kind>  // Record, LayerRecord, InferenceRecord: their begin_ns and end_ns
inline void append_times(JsonOut& out, const Kind& r, uint64_t tid, const char* pid, size_t pid_len) {
  out.lit(R"(,"ts":)");
  out.us(r.begin_ns);
  out.lit(R"(,"dur":)");
  out.us(r.end_ns - r.begin_ns);
  out.lit(R"(,"pid":)");
  out.lit(pid, pid_len);
  out.lit(R"(,"tid":)");
  out.num(tid);
}

// An X event's part from after its name to its engine's name: `,"ts":…,"dur":…,"pid":…,"tid":…,"args":{"engine":`.
template <typename Kind>  // Record or LayerRecord
inline void append_span(JsonOut& out, const Kind& r, uint64_t tid, const char* pid, size_t pid_len) {
  append_times(out, r, tid, pid, pid_len);
  out.lit(R"(,"args":{"engine":)");
}

// The args after the engine's name: `,"engine_id":…,"call_id":…`.
template <typename Kind>  // Record or LayerRecord: their engine_id and call_id
inline void append_ids(JsonOut& out, const Kind& r) {
  out.lit(R"(,"engine_id":)");
  out.num(r.engine_id);
  out.lit(R"(,"call_id":)");
  out.num(r.call_id);
}

// {"ph":"X",...} of a record on track `tid` of process `pid` (its digits), engine name given as a
// JSON string literal (quotes included).
inline void append_slice_event(JsonOut& out, const Record& r, uint64_t tid, const char* pid, size_t pid_len,
                               const char* engine, size_t engine_len) {
  out.lit(R"({"ph":"X","cat":"trt_trace","name":")");
  const char* name = kPhaseNames[r.phase];
  out.lit(name, std::strlen(name));
  out.lit(R"(")");
  append_span(out, r, tid, pid, pid_len);
  out.lit(engine, engine_len);
  append_ids(out, r);
  out.lit(R"(,"thread":)");
  out.num(r.thread_id);
  if (r.device != kNoDevice) {
    out.lit(R"(,"device":)");
    out.num(r.device);
  }
  if (is_gpu_span(r.phase)) {
    out.lit(R"(,"stream":)");
    out.num(r.stream);
  }
  if (r.flags & kFlagError) out.lit(R"(,"error":true)");
  if (r.flags & kFlagNested) out.lit(R"(,"nested":true)");
  if (r.flags & kFlagCaptured) out.lit(R"(,"captured":true)");
  if (r.flags & kFlagEngineStream) out.lit(R"(,"engine_stream":true)");
  out.lit("}}");
}

// {"ph":"X","cat":"trt_trace.layer",...} of a layer record (Phase::kLayer) on track `tid`: the layer's and the
// engine's names given as JSON string literals. At most kMaxLayerEventBytes plus the names (twice the layer's)
// and the pid's digits.
constexpr size_t kMaxLayerEventBytes = 360;
inline void append_layer_event(JsonOut& out, const LayerRecord& r, uint64_t tid, const char* pid, size_t pid_len,
                               const std::string& engine, const std::string& layer) {
  out.lit(R"({"ph":"X","cat":"trt_trace.layer","name":)");
  out.str(layer);
  append_span(out, r, tid, pid, pid_len);
  out.str(engine);
  append_ids(out, r);
  out.lit(R"(,"layer":)");
  out.str(layer);
  out.lit(R"(,"thread":)");
  out.num(r.thread_id);
  if (r.device != kNoDevice) {
    out.lit(R"(,"device":)");
    out.num(r.device);
  }
  out.lit("}}");
}

// A launch flow's start (`s`, in the enqueue slice) or end (`f` with "bp":"e", in the GPU slice).
inline void append_flow_event(JsonOut& out, bool end, uint64_t id, int64_t ts_ns, const char* pid, size_t pid_len,
                              uint64_t tid) {
  if (end) {
    out.lit("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":");
  } else {
    out.lit("{\"ph\":\"s\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":");
  }
  out.num(id);
  out.lit(R"(,"ts":)");
  out.us(ts_ns);
  out.lit(R"(,"pid":)");
  out.lit(pid, pid_len);
  out.lit(R"(,"tid":)");
  out.num(tid);
  out.lit("}");
}

// Where a record's flow ends go: 1 ns inside its slice (see ops/chrome_json_format.cpp).
inline int64_t flow_ts(const Record& r, bool end) {
  const int64_t inside = r.end_ns > r.begin_ns ? 1 : 0;
  return end ? r.end_ns - inside : r.begin_ns + inside;
}

}  // namespace trt_trace
