#include "format/json_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "common/json_text.h"

namespace trt_trace {
namespace json_value {
namespace {

using Kind = Value::Kind;

constexpr int kMaxDepth = 512;

struct Reader {
  const char* p;
  const char* end;

  void space() {
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) ++p;
  }
  bool literal(const char* word) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end - p) < n || std::memcmp(p, word, n) != 0) return false;
    p += n;
    return true;
  }
  bool hex4(uint32_t* v) {
    if (end - p < 4) return false;
    *v = 0;
    for (int i = 0; i < 4; ++i, ++p) {
      const char c = *p;
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (d < 0) return false;
      *v = *v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }
  static void utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool string(std::string* out) {
    if (p >= end || *p != '"') return false;
    ++p;
    while (p < end) {
      const char c = *p++;
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return false;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (p >= end) return false;
      const char e = *p++;
      switch (e) {
        case '"': case '\\': case '/': out->push_back(e); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          uint32_t cp;
          if (!hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair's first half: the second must follow
            uint32_t low;
            if (end - p < 2 || p[0] != '\\' || p[1] != 'u') return false;
            p += 2;
            if (!hex4(&low) || low < 0xDC00 || low >= 0xE000) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            return false;
          }
          utf8(*out, cp);
          break;
        }
        default: return false;
      }
    }
    return false;
  }
  bool number(Value* v) {
    const char* start = p;
    if (p < end && *p == '-') ++p;
    if (p >= end || *p < '0' || *p > '9') return false;
    if (*p == '0') {
      ++p;
    } else {
      while (p < end && *p >= '0' && *p <= '9') ++p;
    }
    bool real = false;
    if (p < end && *p == '.') {
      real = true;
      ++p;
      if (p >= end || *p < '0' || *p > '9') return false;
      while (p < end && *p >= '0' && *p <= '9') ++p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      real = true;
      ++p;
      if (p < end && (*p == '+' || *p == '-')) ++p;
      if (p >= end || *p < '0' || *p > '9') return false;
      while (p < end && *p >= '0' && *p <= '9') ++p;
    }
    const std::string text(start, p);
    if (!real) {
      int64_t i;
      if (std::from_chars(text.data(), text.data() + text.size(), i).ec == std::errc()) {
        *v = Value::of_int(i);
        return true;
      }
      uint64_t u;
      if (text[0] != '-' && std::from_chars(text.data(), text.data() + text.size(), u).ec == std::errc()) {
        *v = Value::of_uint(u);
        return true;
      }
    }
    *v = Value::of_double(std::strtod(text.c_str(), nullptr));
    return true;
  }
  // A container's items after its opening bracket (at p), each read by item(), comma-separated, to `close`.
  template <class Item>
  bool items(char close, Item&& item) {
    ++p;
    space();
    if (p < end && *p == close) {
      ++p;
      return true;
    }
    while (true) {
      if (!item()) return false;
      space();
      if (p >= end || (*p != ',' && *p != close)) return false;
      if (*p++ == close) return true;
    }
  }
  bool value(Value* v, int depth) {
    if (depth > kMaxDepth) return false;
    space();
    if (p >= end) return false;
    switch (*p) {
      case '{': {
        *v = Value::dict();
        return items('}', [&] {
          space();
          std::string key;
          if (!string(&key)) return false;
          space();
          if (p >= end || *p++ != ':') return false;
          Value item;
          if (!value(&item, depth + 1)) return false;
          v->add(std::move(key), std::move(item));
          return true;
        });
      }
      case '[': {
        *v = Value::list();
        return items(']', [&] {
          Value item;
          if (!value(&item, depth + 1)) return false;
          v->push(std::move(item));
          return true;
        });
      }
      case '"': {
        std::string s;
        if (!string(&s)) return false;
        *v = Value::of_string(std::move(s));
        return true;
      }
      case 't': *v = Value::of_bool(true); return literal("true");
      case 'f': *v = Value::of_bool(false); return literal("false");
      case 'n': *v = Value::null(); return literal("null");
      default: return number(v);
    }
  }
};

}  // namespace

void append_json_double(std::string& out, double d) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  // The shortest digits that read back to d, then laid out as orjson lays them out.
  char buf[40];
  const auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));  // [-]d[.ddd]e[+-]XX
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  const size_t e = sci.find('e');
  std::string digits(sci.substr(0, e));
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::atoi(std::string(sci.substr(e + 1)).c_str());
  const int len = static_cast<int>(digits.size());
  const int point = exp10 + 1;  // where the decimal point falls after the digits' first
  out += sign;
  if (0 <= exp10 && point <= 16) {
    if (point >= len) {  // an integer: digits, zeros, ".0"
      out += digits;
      out.append(static_cast<size_t>(point - len), '0');
      out += ".0";
    } else {
      out.append(digits, 0, static_cast<size_t>(point));
      out.push_back('.');
      out.append(digits, static_cast<size_t>(point), std::string::npos);
    }
  } else if (-5 < point && point <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-point), '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (len > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.push_back('e');
    if (exp10 > 0) out.push_back('+');
    out += std::to_string(exp10);
  }
}

void append_json(std::string& out, const Value& value) {
  switch (value.kind) {
    case Kind::kNull: out += "null"; return;
    case Kind::kBool: out += value.boolean ? "true" : "false"; return;
    case Kind::kInt: out += std::to_string(value.int_value); return;
    case Kind::kUint: out += std::to_string(value.uint_value); return;
    case Kind::kDouble: append_json_double(out, value.double_value); return;
    case Kind::kString: append_json_string(out, value.text); return;
    case Kind::kDict: {
      out.push_back('{');
      bool first = true;
      for (const auto& [key, item] : value.entries) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, key);
        out.push_back(':');
        append_json(out, item);
      }
      out.push_back('}');
      return;
    }
    case Kind::kList: {
      out.push_back('[');
      for (size_t i = 0; i < value.items.size(); ++i) {
        if (i) out.push_back(',');
        append_json(out, value.items[i]);
      }
      out.push_back(']');
      return;
    }
  }
}

std::string to_json(const Value& value) {
  std::string out;
  append_json(out, value);
  return out;
}

std::optional<Value> parse(std::string_view text) {
  Reader reader{text.data(), text.data() + text.size()};
  Value v;
  if (!reader.value(&v, 0)) return std::nullopt;
  reader.space();
  if (reader.p != reader.end) return std::nullopt;
  return v;
}

}  // namespace json_value
}  // namespace trt_trace
