// `trt-trace merge` and `trt-trace slice` re-encode the events they keep with the writer's own
// encoder (format/chrome_json_events.h): slices parsed by either fast path come out as the JSON
// writer would have written them, moved to the merged file's pid, clock and flow ids.
#include <algorithm>
#include <vector>

#include "format/chrome_json_events.h"
#include "readers/read_types.h"

using trt_trace::JsonOut;
using trt_trace::Slice;

// Writes the kept slices (keep[i] != 0; keep may be null) as comma-separated events into out.
// Engine names: a JSON slice's own literal in buf (name_off/name_len), else engines[engine_id]
// (literals at engine_off[i]..engine_off[i + 1] of engine_blob; engine 0's where out of range).
// Perfetto slices carry their launch flows as flags (kFlagFlowOut / kFlagFlowIn): they are written
// as the JSON writer writes flows. shift_ns moves every timestamp, flow_id_add every flow id.
// Returns the bytes written, or -(bytes needed) where cap is too small (nothing written).
TT_API int64_t tt_json_encode(const Slice* s, int64_t n, const uint8_t* keep, const char* buf, const char* pid,
                              int64_t pid_len, int64_t shift_ns, uint64_t flow_id_add, const char* engine_blob,
                              const int64_t* engine_off, int64_t n_engines, char* out, int64_t cap) {
  int64_t longest = 2;
  for (int64_t i = 0; i + 1 <= n_engines; ++i) longest = std::max(longest, engine_off[i + 1] - engine_off[i]);
  int64_t need = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (keep && !keep[i]) continue;
    need += static_cast<int64_t>(trt_trace::kMaxEventBytes) * 2 + 2 * pid_len + std::max<int64_t>(longest, s[i].name_len);
  }
  if (need > cap) return -need;
  JsonOut o{out};
  bool first = true;
  auto sep = [&] {
    if (!first) o.lit(",\n");
    first = false;
  };
  for (int64_t i = 0; i < n; ++i) {
    if (keep && !keep[i]) continue;
    const Slice& x = s[i];
    if (x.kind == trt_trace::kSliceX) {
      trt_trace::Record r = x.rec;
      r.begin_ns += shift_ns;
      r.end_ns += shift_ns;
      const uint8_t flow_bits = r.flags & (trt_trace::kFlagFlowOut | trt_trace::kFlagFlowIn);
      r.flags &= static_cast<uint8_t>(~(trt_trace::kFlagFlowOut | trt_trace::kFlagFlowIn));
      const char* name;
      size_t name_len;
      if (x.name_len) {
        name = buf + x.name_off;
        name_len = x.name_len;
      } else {
        const int64_t e = x.rec.engine_id < static_cast<uint64_t>(n_engines) ? x.rec.engine_id : 0;
        name = engine_blob + engine_off[e];
        name_len = static_cast<size_t>(engine_off[e + 1] - engine_off[e]);
      }
      sep();
      trt_trace::append_slice_event(o, r, x.tid, pid, static_cast<size_t>(pid_len), name, name_len);
      for (const bool end : {false, true}) {
        if (flow_bits & (end ? trt_trace::kFlagFlowIn : trt_trace::kFlagFlowOut)) {
          sep();
          trt_trace::append_flow_event(o, end, r.call_id + flow_id_add, trt_trace::flow_ts(r, end), pid,
                                       static_cast<size_t>(pid_len), x.tid);
        }
      }
    } else {
      sep();
      trt_trace::append_flow_event(o, x.kind == trt_trace::kFlowEnd, x.rec.call_id + flow_id_add,
                                   x.rec.begin_ns + shift_ns, pid, static_cast<size_t>(pid_len), x.tid);
    }
  }
  return o.p - out;
}
