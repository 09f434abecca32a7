// The text of one value in Prometheus' text format, as prometheus_client writes it, so that the
// native endpoint's output is the Python client's byte for byte (tests/test_metrics_text.py): a
// sample's number (Python's repr of the float, with Go's earlier switch to exponents), a label
// value (backslash, newline and quote escaped; invalid UTF-8 replaced) and a HELP text.
#pragma once

#include <string>
#include <string_view>

namespace trt_trace {
namespace metrics {

// Python's repr(float(d)): the shortest digits that read back as d, fixed notation for decimal
// exponents -4..16 (with ".0" on whole numbers), else d.ddde+XX.
void append_python_float_repr(std::string& out, double d);

// prometheus_client's floatToGoString: the repr, but a positive value with more than six digits
// before the point goes to exponent notation ("1.234567e+06"); +Inf, -Inf, NaN.
void append_sample_value(std::string& out, double d);

// A label value between its quotes: \ -> \\, newline -> \n, " -> \"; a byte sequence that is not
// UTF-8 becomes U+FFFD (the text format is UTF-8, and an engine name comes from the engine's own
// text), so one odd name never makes the whole scrape unreadable.
void append_label_value(std::string& out, std::string_view value);

// A HELP text: \ -> \\, newline -> \n.
void append_help_text(std::string& out, std::string_view text);

}  // namespace metrics
}  // namespace trt_trace
