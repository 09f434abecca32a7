#include "format/utf8_text.h"

#include <cstdint>

namespace trt_trace {
namespace {

// The length of the well-formed UTF-8 sequence that starts at s[0] (Unicode's table 3-7, the one
// Python's strict decoder applies: no overlong forms, no surrogates, nothing past U+10FFFF), or 0.
size_t sequence_length(const unsigned char* s, size_t left) {
  const unsigned c = s[0];
  if (c < 0x80) return 1;
  const auto in = [&](size_t i, unsigned lo, unsigned hi) { return i < left && s[i] >= lo && s[i] <= hi; };
  if (c >= 0xC2 && c <= 0xDF) return in(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    return in(1, lo, hi) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF) ? 4 : 0;
  }
  return 0;  // a continuation byte, C0, C1, F5..FF
}

}  // namespace

void append_utf8_text(std::string& out, std::string_view bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    // Runs of ASCII and whole sequences are copied as they are.
    size_t run = i;
    size_t len = 0;
    while (run < n && (len = sequence_length(s + run, n - run)) != 0) run += len;
    out.append(bytes.data() + i, run - i);
    if (run == n) break;
    // One byte outside any sequence: Python's surrogateescape decodes it as U+DC00 + byte (the maximal
    // subpart rule makes no difference: the bytes of an error are escaped one by one either way, and a
    // continuation byte never starts a sequence), which backslashreplace writes as \udcXX.
    static constexpr char kHex[] = "0123456789abcdef";
    const unsigned char b = s[run];
    const char escaped[6] = {'\\', 'u', 'd', 'c', kHex[b >> 4], kHex[b & 0xF]};
    out.append(escaped, sizeof escaped);
    i = run + 1;
  }
}

}  // namespace trt_trace
