// The fast path of the Chrome JSON reader: trt_trace's own events, one per line in the writer's
// fixed layout (format/chrome_json_events.h), parsed straight into Slice structs, about 20 times
// faster than building a Python dict per event. Every other line (metadata, another tool's events,
// numbers in another notation, a line cut by a kill) is handed back by position to the general
// path (trt_trace/io/readers/chrome_json.py, orjson), which gives the same result for these lines.
#if defined(__SSE2__)
#include <emmintrin.h>  // SSE2: part of x86-64 itself
#endif

#include <cstring>
#include <utility>

#include "readers/read_types.h"

namespace trt_trace {
namespace {

#define TT_INLINE inline __attribute__((always_inline))

template <typename T>
TT_INLINE T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Whether the 8 bytes of c (little endian) are all ASCII digits, and their value (SWAR: no loop).
TT_INLINE bool eight_digits(uint64_t c) {
  return ((c & 0xF0F0F0F0F0F0F0F0ull) | (((c + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) >> 4)) ==
         0x3333333333333333ull;
}
TT_INLINE uint64_t eight_digits_value(uint64_t c) {
  c -= 0x3030303030303030ull;
  c = c * 10 + (c >> 8);  // pairs of digits
  c = (((c & 0x000000FF000000FFull) * (100 + (1000000ull << 32))) +
       (((c >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32)))) >> 32;
  return c;
}

// a[0, N) == b[0, N) for a length known at compile time: 8 bytes at a time, no call to memcmp.
template <size_t N>
TT_INLINE bool same(const char* a, const char* b) {
  if constexpr (N >= 8) {
    uint64_t diff = 0;
    for (size_t i = 0; i + 8 <= N; i += 8) diff |= load<uint64_t>(a + i) ^ load<uint64_t>(b + i);
    if constexpr (N % 8 != 0) diff |= load<uint64_t>(a + N - 8) ^ load<uint64_t>(b + N - 8);  // overlapping
    return diff == 0;
  } else if constexpr (N >= 4) {
    return ((load<uint32_t>(a) ^ load<uint32_t>(b)) | (load<uint32_t>(a + N - 4) ^ load<uint32_t>(b + N - 4))) == 0;
  } else if constexpr (N >= 2) {
    return ((load<uint16_t>(a) ^ load<uint16_t>(b)) | (load<uint16_t>(a + N - 2) ^ load<uint16_t>(b + N - 2))) == 0;
  } else {
    return N == 0 || a[0] == b[0];
  }
}

struct Cursor {
  const char* p;
  const char* end;

  // Literals are compared at their compile-time length: the compiler turns each into a few loads
  // and compares, not a call to memcmp.
  template <size_t N>
  TT_INLINE bool lit(const char (&s)[N]) {
    if (static_cast<size_t>(end - p) < N - 1 || !same<N - 1>(p, s)) return false;
    p += N - 1;
    return true;
  }
  // A JSON integer without sign or leading zeros, below 2^64 (at most 19 digits: no overflow).
  TT_INLINE bool u64(uint64_t& v) {
    const char* q = p;
    if (q == end || static_cast<unsigned>(*q - '0') > 9) return false;
    if (*q == '0' && q + 1 < end && static_cast<unsigned>(q[1] - '0') <= 9) return false;
    uint64_t x = 0;
    while (end - q >= 8) {  // 8 digits at a time where 8 follow (timestamps)
      const uint64_t c = load<uint64_t>(q);
      if (!eight_digits(c)) break;
      x = x * 100000000ull + eight_digits_value(c);
      q += 8;
    }
    while (q < end && static_cast<unsigned>(*q - '0') <= 9) {
      x = x * 10 + static_cast<uint64_t>(*q - '0');
      ++q;
    }
    if (q - p > 19) return false;  // 2^64 and more: not ours (and x may have wrapped)
    v = x;
    p = q;
    return true;
  }
  TT_INLINE bool u32(uint32_t& v) {
    uint64_t x;
    if (!u64(x) || x > 0xffffffffull) return false;
    v = static_cast<uint32_t>(x);
    return true;
  }
  // Microseconds as the writer writes them: -?digits.ddd, exactly three decimals: exact ns.
  TT_INLINE bool us(int64_t& ns) {
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
  TT_INLINE bool string(const char*& at, size_t& len) {
    if (p == end || *p != '"') return false;
    const char* q = p + 1;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1f);
#endif
    while (true) {
#if defined(__SSE2__)
      while (end - q >= 16) {  // 16 bytes at a time to the next quote, backslash or control character
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
        const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                         _mm_cmpeq_epi8(_mm_max_epu8(x, control), control));
        const int mask = _mm_movemask_epi8(hit);
        if (mask == 0) {
          q += 16;
          continue;
        }
        q += __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
#endif
      if (q == end) return false;
      const unsigned char ch = static_cast<unsigned char>(*q);
      if (ch == '"') break;
      if (ch < 0x20) return false;
      if (ch == '\\') {
        if (++q == end || *q == '\n') return false;  // an escape never takes a line's newline
      }
      ++q;
    }
    at = p;
    len = static_cast<size_t>(q + 1 - p);
    p = q + 1;
    return true;
  }
};

// Each phase's name with its closing quote (kPhaseNames), as same<>() compares it: made at compile time.
constexpr size_t name_length(const char* s) {
  size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
struct QuotedName {
  char text[48];  // the name, its closing quote, then zeros (same<>() may read 8 bytes at a time)
};
template <int P>
constexpr QuotedName quoted_name() {
  QuotedName q{};
  constexpr size_t n = name_length(kPhaseNames[P]);
  static_assert(n + 1 <= sizeof(q.text), "a phase name fits");
  for (size_t i = 0; i < n; ++i) q.text[i] = kPhaseNames[P][i];
  q.text[n] = '"';
  return q;
}
template <int P>
inline constexpr QuotedName kQuotedName = quoted_name<P>();

template <int... P>
TT_INLINE int phase_named(const char* p, size_t left, size_t& n, std::integer_sequence<int, P...>) {
  int phase = -1;
  // One compare of the first letter per phase (constants), then the whole name where it matches.
  (void)((kPhaseNames[P][0] == p[0] && left >= name_length(kPhaseNames[P]) + 1 &&
          same<name_length(kPhaseNames[P]) + 1>(p, kQuotedName<P>.text) &&
          (phase = P, n = name_length(kPhaseNames[P]), true)) ||
         ...);
  return phase;
}

// The phase named at c.p (kPhaseNames, as trace_format.PHASE_NAMES, then its closing quote): moves
// c past the name (to the quote) and returns the phase, -1 if none.
TT_INLINE int phase_at(Cursor& c) {
  if (c.p == c.end) return -1;
  size_t n = 0;
  const int phase = phase_named(c.p, static_cast<size_t>(c.end - c.p), n,
                                std::make_integer_sequence<int, kNumPublicPhases>{});
  c.p += n;
  return phase;
}

// The rest of a line after an event: an optional comma, then nothing but blanks up to the newline
// (or the buffer's end). Returns where the newline is (end: none), nullptr if anything else follows.
inline const char* line_end_after(const char* p, const char* end) {
  if (p < end && *p == ',') ++p;
  while (p < end && (*p == ' ' || *p == '\r' || *p == '\t')) ++p;
  return p == end || *p == '\n' ? p : nullptr;
}

// Each parser reads one event from c.p and returns where it ends (nullptr: not ours). The cursor may
// run to the buffer's end: nothing they accept holds a newline, so what they read lies in one line.
const char* parse_slice(Cursor c, const char* base, Slice& s) {
  std::memset(&s, 0, sizeof(s));
  if (!c.lit(R"({"ph":"X","cat":"trt_trace","name":")")) return nullptr;
  // The phase's name and its closing quote, by its first letter (kPhaseNames): no search per event.
  const int phase = phase_at(c);
  if (phase < 0) return nullptr;
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
    return nullptr;
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
    if (!c.u32(device) || device >= kNoDevice) return nullptr;
    r.device = static_cast<uint16_t>(device);
  }
  // The writer writes a stream for GPU spans and only for them: anything else is not its line.
  if (is_gpu_span(r.phase) != c.lit(R"(,"stream":)")) return nullptr;
  if (is_gpu_span(r.phase) && !c.u32(r.stream)) return nullptr;
  if (c.lit(R"(,"error":true)")) r.flags |= kFlagError;
  if (c.lit(R"(,"nested":true)")) r.flags |= kFlagNested;
  if (c.lit(R"(,"captured":true)")) r.flags |= kFlagCaptured;
  if (c.lit(R"(,"engine_stream":true)")) r.flags |= kFlagEngineStream;
  if (!c.lit("}}")) return nullptr;
  s.pid = pid;
  s.tid = tid;
  s.name_off = static_cast<uint32_t>(name - base);
  s.name_len = static_cast<uint32_t>(name_len);
  s.kind = kSliceX;
  s.has_device = r.device != kNoDevice;
  return c.p;
}

const char* parse_flow(Cursor c, Slice& s) {
  bool end;
  if (c.lit("{\"ph\":\"s\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":")) {
    end = false;
  } else if (c.lit("{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"trt_trace\",\"name\":\"launch\",\"id\":")) {
    end = true;
  } else {
    return nullptr;
  }
  uint64_t id;
  int64_t ts;
  uint32_t pid, tid;
  if (!(c.u64(id) && c.lit(R"(,"ts":)") && c.us(ts) && c.lit(R"(,"pid":)") && c.u32(pid) && c.lit(R"(,"tid":)") &&
        c.u32(tid) && c.lit("}"))) {
    return nullptr;
  }
  std::memset(&s, 0, sizeof(s));
  s.rec.begin_ns = s.rec.end_ns = ts;
  s.rec.call_id = id;
  s.rec.device = kNoDevice;
  s.pid = pid;
  s.tid = tid;
  s.kind = end ? kFlowEnd : kFlowStart;
  return c.p;
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
  const char* const end = buf + len;
  while (pos < len) {
    if (ns == slices_cap || no == odd_cap) break;
    const char* a = buf + pos;
    // Our events first, read up to the buffer's end: the newline is found by the parse, not searched for.
    const char* ev_end = nullptr;
    Slice& s = slices[ns];
    if (len - pos > 8 && a[0] == '{' && a[1] == '"') {
      if (a[7] == 'X') {
        ev_end = trt_trace::parse_slice(trt_trace::Cursor{a, end}, buf, s);
      } else if (a[7] == 's' || a[7] == 'f') {
        ev_end = trt_trace::parse_flow(trt_trace::Cursor{a, end}, s);
      }
    }
    const char* nl = ev_end ? trt_trace::line_end_after(ev_end, end) : nullptr;
    if (nl != nullptr) {
      if (nl == end && !final) break;  // the line may go on in the next block
      ++ns;
      pos = (nl - buf) + (nl < end ? 1 : 0);
      continue;
    }
    nl = static_cast<const char*>(std::memchr(a, '\n', static_cast<size_t>(len - pos)));
    if (nl == nullptr && !final) break;
    const char* b = nl ? nl : end;
    const int64_t next = (b - buf) + (nl ? 1 : 0);
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
