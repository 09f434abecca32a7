// A JSON-like value (format/perfetto_track_packets.h's Value) as JSON text, and JSON text read back into
// one: the flight recorder's dumps (session/native_writer.h) build their metadata on the native thread,
// which must write it in either format, and the per-layer report it embeds comes as JSON text.
//
// Written as orjson writes it (the Python side's encoder of the same metadata): no spaces, keys in order,
// strings as common/json_text.h escapes them, a double in the shortest form that reads back to it (orjson's
// layout: `2.0`, `0.6`, `0.00001`, `1e+16`, `1.5e-7`), a NaN or infinity as null. Read: RFC 8259 JSON; numbers with
// a fraction or exponent are doubles, others int64 (uint64 above it), as orjson.loads gives them.
//
// No torch: csrc/format is below every layer that uses it (tools/check_layout.py).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "format/perfetto_track_packets.h"

namespace trt_trace {
namespace json_value {

using perfetto_packets::Value;

void append_json(std::string& out, const Value& value);
std::string to_json(const Value& value);
// `d` as orjson writes a float.
void append_json_double(std::string& out, double d);

// The value of a whole JSON text; nullopt where it is not one (bad syntax, trailing bytes, nesting past 512).
std::optional<Value> parse(std::string_view text);

}  // namespace json_value
}  // namespace trt_trace
