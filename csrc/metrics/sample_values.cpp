#include "metrics/sample_values.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace trt_trace {
namespace metrics {
namespace {

void append_exponent(std::string& out, int exponent) {
  out += exponent < 0 ? "e-" : "e+";
  const int a = std::abs(exponent);
  if (a < 10) out += '0';
  out += std::to_string(a);
}

// One UTF-8 sequence starting at s[i] (RFC 3629: no overlong forms, no surrogates, at most
// U+10FFFF): its length, or 0 when s[i] starts none.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

void append_python_float_repr(std::string& out, double d) {
  if (std::isnan(d)) {
    out += "nan";
    return;
  }
  if (std::isinf(d)) {
    out += d < 0 ? "-inf" : "inf";
    return;
  }
  if (d == 0) {
    out += std::signbit(d) ? "-0.0" : "0.0";
    return;
  }
  // The shortest round-trip digits, as "[-]D[.DDD]e[+-]X" (Python's repr picks the same digits:
  // the shortest string that reads back as d, the nearest one where several are as short).
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  if (sci.front() == '-') {
    out += '-';
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int point = exponent + 1;  // digits[0:point] come before the decimal point
  const int nd = static_cast<int>(digits.size());
  if (point <= -4 || point > 16) {  // Python's repr switches to exponent notation here
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    append_exponent(out, exponent);
  } else if (point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-point), '0');
    out += digits;
  } else if (point >= nd) {
    out += digits;
    out.append(static_cast<size_t>(point - nd), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<size_t>(point));
    out += '.';
    out.append(digits, static_cast<size_t>(point), std::string::npos);
  }
}

void append_sample_value(std::string& out, double d) {
  if (std::isinf(d)) {
    out += d > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (std::isnan(d)) {
    out += "NaN";
    return;
  }
  std::string s;
  append_python_float_repr(s, d);
  const size_t dot = s.find('.');
  if (d > 0 && dot != std::string::npos && dot > 6) {
    // Go's formatting goes to exponents sooner than Python's: D.DDDDDD (trailing zeros and point
    // dropped) e+XX, the exponent being the digits before the point less one.
    std::string mantissa = s.substr(0, 1) + "." + s.substr(1, dot - 1) + s.substr(dot + 1);
    while (!mantissa.empty() && (mantissa.back() == '0' || mantissa.back() == '.')) mantissa.pop_back();
    out += mantissa;
    append_exponent(out, static_cast<int>(dot) - 1);
    return;
  }
  out += s;
}

void append_label_value(std::string& out, std::string_view value) {
  for (size_t i = 0; i < value.size();) {
    const char c = value[i];
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      const size_t n = utf8_sequence_length(value, i);
      if (n == 0) {
        out += "\xEF\xBF\xBD";  // U+FFFD for the byte that starts no sequence
        ++i;
        continue;
      }
      out.append(value.data() + i, n);
      i += n;
      continue;
    }
    ++i;
  }
}

void append_help_text(std::string& out, std::string_view text) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

}  // namespace metrics
}  // namespace trt_trace
