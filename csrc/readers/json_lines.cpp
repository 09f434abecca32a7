// The fast path of the Chrome JSON reader: trt_trace's own events, one per line in the writer's
// fixed layout (format/chrome_json_events.h), parsed straight into Slice structs, about 20 times
// faster than building a Python dict per event. Every other line (metadata, another tool's events,
// numbers in another notation, a line cut by a kill) is handed back by position to the general
// path (trt_trace/readers/chrome_json.py, orjson), which gives the same result for these lines.
#include <cstring>

#include "readers/read_types.h"

namespace trt_trace {
namespace {

struct Cursor {
  const char* p;
  const char* end;

  bool lit(const char* s, size_t n) {
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, s, n) != 0) return false;
    p += n;
    return true;
  }
  template <size_t N>
  bool lit(const char (&s)[N]) {
    return lit(s, N - 1);
  }
  // A JSON integer without sign or leading zeros, below 2^64 (at most 19 digits: no overflow).
  bool u64(uint64_t& v) {
    const char* q = p;
    if (q == end || *q < '0' || *q > '9') return false;
    if (*q == '0' && q + 1 < end && q[1] >= '0' && q[1] <= '9') return false;
    uint64_t x = 0;
    int digits = 0;
    while (q < end && *q >= '0' && *q <= '9') {
      if (++digits > 19) return false;
      x = x * 10 + static_cast<uint64_t>(*q - '0');
      ++q;
    }
    v = x;
    p = q;
    return true;
  }
  bool u32(uint32_t& v) {
    uint64_t x;
    if (!u64(x) || x > 0xffffffffull) return false;
    v = static_cast<uint32_t>(x);
    return true;
  }
  // Microseconds as the writer writes them: -?digits.ddd, exactly three decimals: exact ns.
  bool us(int64_t& ns) {
    bool neg = false;
    if (p < end && *p == '-') {
      neg = true;
      ++p;
    }
    uint64_t whole;
    if (!u64(whole) || whole > 9'000'000'000'000'000ull / 1000) return false;
    if (end - p < 4 || p[0] != '.') return false;
    uint64_t frac = 0;
    for (int i = 1; i <= 3; ++i) {
      if (p[i] < '0' || p[i] > '9') return false;
      frac = frac * 10 + static_cast<uint64_t>(p[i] - '0');
    }
    p += 4;
    if (p < end && ((*p >= '0' && *p <= '9') || *p == 'e' || *p == 'E')) return false;  // more digits: not ours
    const auto v = static_cast<int64_t>(whole * 1000 + frac);
    ns = neg ? -v : v;
    return true;
  }
  // A JSON string literal (quotes included) with no control characters; escapes are kept as they are.
  bool string(const char*& at, size_t& len) {
    if (p == end || *p != '"') return false;
    const char* q = p + 1;
    while (q < end && *q != '"') {
      const unsigned char ch = static_cast<unsigned char>(*q);
      if (ch < 0x20) return false;
      if (ch == '\\') {
        if (++q == end) return false;
      }
      ++q;
    }
    if (q == end) return false;
    at = p;
    len = static_cast<size_t>(q + 1 - p);
    p = q + 1;
    return true;
  }
};

// The rest of a line after an event: an optional comma, then nothing but blanks.
bool line_ends(Cursor& c) {
  if (c.p < c.end && *c.p == ',') ++c.p;
  while (c.p < c.end && (*c.p == ' ' || *c.p == '\r' || *c.p == '\t')) ++c.p;
  return c.p == c.end;
}

bool parse_slice(Cursor c, const char* base, Slice& s) {
  std::memset(&s, 0, sizeof(s));
  if (!c.lit(R"({"ph":"X","cat":"trt_trace","name":")")) return false;
  // The phase's name, by its first letter and length (kPhaseNames).
  int phase = -1;
  const char* q = static_cast<const char*>(std::memchr(c.p, '"', static_cast<size_t>(c.end - c.p)));
  if (q == nullptr) return false;
  const size_t n = static_cast<size_t>(q - c.p);
  for (int i = 0; i <= kLastPublicPhase; ++i) {
    if (kPhaseNames[i][0] == c.p[0] && std::strlen(kPhaseNames[i]) == n && std::memcmp(c.p, kPhaseNames[i], n) == 0) {
      phase = i;
      c.p = q;
      break;
    }
  }
  if (phase < 0) return false;
  Record& r = s.rec;
  int64_t ts, dur;
  uint64_t call_id;
  uint32_t pid, tid, engine_id, thread;
  const char* name;
  size_t name_len;
  if (!(c.lit(R"(","ts":)") && c.us(ts) && c.lit(R"(,"dur":)") && c.us(dur) && c.lit(R"(,"pid":)") && c.u32(pid) &&
        c.lit(R"(,"tid":)") && c.u32(tid) && c.lit(R"(,"args":{"engine":)") && c.string(name, name_len) &&
        c.lit(R"(,"engine_id":)") && c.u32(engine_id) && c.lit(R"(,"call_id":)") && c.u64(call_id) &&
        c.lit(R"(,"thread":)") && c.u32(thread))) {
    return false;
  }
  r.begin_ns = ts;
  r.end_ns = ts + dur;
  r.call_id = call_id;
  r.engine_id = engine_id;
  r.thread_id = thread;
  r.phase = static_cast<uint8_t>(phase);
  r.flags = 0;
  r.device = kNoDevice;
  r.stream = 0;
  if (c.lit(R"(,"device":)")) {
    uint32_t device;
    if (!c.u32(device) || device >= kNoDevice) return false;
    r.device = static_cast<uint16_t>(device);
  }
  // The writer writes a stream for GPU spans and only for them: anything else is not its line.
  if (is_gpu_span(r.phase) != c.lit(R"(,"stream":)")) return false;
  if (is_gpu_span(r.phase) && !c.u32(r.stream)) return false;
  if (c.lit(R"(,"error":true)")) r.flags |= kFlagError;
  if (c.lit(R"(,"nested":true)")) r.flags |= kFlagNested;
  if (c.lit(R"(,"captured":true)")) r.flags |= kFlagCaptured;
  if (c.lit(R"(,"engine_stream":true)")) r.flags |= kFlagEngineStream;
  if (!c.lit("}}") || !line_ends(c)) return false;
  s.pid = pid;
  s.tid = tid;
  s.name_off = static_cast<uint32_t>(name - base);
  s.name_len = static_cast<uint32_t>(name_len);
  s.kind = kSliceX;
  s.has_device = r.device != kNoDevice;
  return true;
}

bool parse_flow(Cursor c, Slice& s) {
  bool end;
  if (c.lit("{\"ph\":\"s\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":")) {
    end = false;
  } else if (c.lit("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":")) {
    end = true;
  } else {
    return false;
  }
  uint64_t id;
  int64_t ts;
  uint32_t pid, tid;
  if (!(c.u64(id) && c.lit(R"(,"ts":)") && c.us(ts) && c.lit(R"(,"pid":)") && c.u32(pid) && c.lit(R"(,"tid":)") &&
        c.u32(tid) && c.lit("}") && line_ends(c))) {
    return false;
  }
  std::memset(&s, 0, sizeof(s));
  s.rec.begin_ns = s.rec.end_ns = ts;
  s.rec.call_id = id;
  s.rec.device = kNoDevice;
  s.pid = pid;
  s.tid = tid;
  s.kind = end ? kFlowEnd : kFlowStart;
  return true;
}

// Lines that carry no event: the array's brackets and blank lines.
bool structural(const char* a, const char* b) {
  while (a < b && (*a == ' ' || *a == '\t' || *a == '\r')) ++a;
  while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r')) --b;
  return a == b || (b - a == 1 && (*a == '[' || *a == ']'));
}

}  // namespace
}  // namespace trt_trace

using trt_trace::Slice;

// Parses the whole lines of buf[0, len) (and, with final != 0, a last line without its newline):
// our events into slices, every other non-structural line into odd as (offset, length, the number
// of slices before it: where it goes in file order). Stops early when either output is full. Returns the bytes consumed (whole lines); the
// counts go to *n_slices and *n_odd.
TT_API int64_t tt_json_parse(const char* buf, int64_t len, int32_t final, Slice* slices, int64_t slices_cap,
                             int64_t* odd, int64_t odd_cap, int64_t* n_slices, int64_t* n_odd) {
  int64_t pos = 0, ns = 0, no = 0;
  while (pos < len) {
    if (ns == slices_cap || no == odd_cap) break;
    const char* a = buf + pos;
    const char* nl = static_cast<const char*>(std::memchr(a, '\n', static_cast<size_t>(len - pos)));
    if (nl == nullptr && !final) break;
    const char* b = nl ? nl : buf + len;
    const int64_t next = (b - buf) + (nl ? 1 : 0);
    trt_trace::Cursor c{a, b};
    Slice& s = slices[ns];
    if (b - a > 6 && a[0] == '{' && a[1] == '"' && a[2] == 'p' && a[3] == 'h' && a[7] == 'X') {
      if (trt_trace::parse_slice(c, buf, s)) {
        ++ns;
        pos = next;
        continue;
      }
    } else if (b - a > 6 && a[0] == '{' && (a[7] == 's' || a[7] == 'f')) {
      if (trt_trace::parse_flow(c, s)) {
        ++ns;
        pos = next;
        continue;
      }
    }
    if (!trt_trace::structural(a, b)) {
      odd[3 * no] = pos;
      odd[3 * no + 1] = b - a;
      odd[3 * no + 2] = ns;
      ++no;
    }
    pos = next;
  }
  *n_slices = ns;
  *n_odd = no;
  return pos;
}
