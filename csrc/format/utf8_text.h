// Text that a protobuf `string` field may hold, from bytes that may not be UTF-8: what Python's
// perfetto_trace._text() makes of the same bytes decoded with "surrogateescape" (how Python decodes
// argv, file names and environment bytes). Valid UTF-8 passes unchanged; every byte outside a
// well-formed sequence becomes the six characters `\udcXX` (XX its value in lowercase hex), as
// `str.encode("utf-8", "backslashreplace")` writes the surrogate U+DCXX that stands for it.
//
// Names the native side holds as bytes (engine names from the runtime, layer names from its profile
// files, file names) thus read the same as when Python wrote them. A surrogate sent as its three UTF-8
// bytes (ED A0..BF xx, which strict UTF-8 refuses) counts as three invalid bytes, as in Python's decoder.
#pragma once

#include <string>
#include <string_view>

namespace trt_trace {

// Appends `bytes` as text (see above).
void append_utf8_text(std::string& out, std::string_view bytes);

inline std::string utf8_text(std::string_view bytes) {
  std::string out;
  append_utf8_text(out, bytes);
  return out;
}

}  // namespace trt_trace
