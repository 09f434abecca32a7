#include "layers/runtime_profiling.h"

#include "common/posix_files.h"

#include <ATen/core/class_type.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function.h>

#include <cmath>
#include <cstdlib>

namespace trt_trace {
namespace layers {

namespace {

torch::jit::Function* method_of(const c10::IValue& engine, const char* name) {
  if (!engine.isObject()) return nullptr;
  return engine.toObjectRef().type()->findMethod(name);
}

std::optional<c10::ClassType::Property> property_of(const c10::IValue& engine, const char* name) {
  if (!engine.isObject()) return std::nullopt;
  return engine.toObjectRef().type()->getProperty(name);
}

// The text after `key` on the line that holds it ("" when no line does).
std::string_view value_after(std::string_view text, std::string_view key) {
  const size_t at = text.find(key);
  if (at == std::string_view::npos) return {};
  const size_t begin = at + key.size();
  const size_t end = text.find('\n', begin);
  std::string_view v = text.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin);
  while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.remove_suffix(1);
  return v;
}

bool parse_number(std::string_view text, double* out) {
  const std::string s(text);  // (a layer file's few numbers: not a hot path)
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end != s.c_str() && std::isfinite(*out);
}

}  // namespace

bool has_method(const c10::IValue& engine, const char* name) { return method_of(engine, name) != nullptr; }

bool has_property(const c10::IValue& engine, const char* name) {
  const auto p = property_of(engine, name);
  return p.has_value() && p->getter != nullptr && p->setter != nullptr;
}

c10::IValue call_method(const c10::IValue& engine, const char* name, std::vector<c10::IValue> args) {
  torch::jit::Function* fn = method_of(engine, name);
  TORCH_CHECK(fn != nullptr, "the engine has no method ", name);
  std::vector<c10::IValue> stack{engine};
  for (auto& a : args) stack.push_back(std::move(a));
  fn->run(stack);
  return stack.empty() ? c10::IValue() : stack.back();
}

std::string get_string_property(const c10::IValue& engine, const char* name) {
  const auto p = property_of(engine, name);
  TORCH_CHECK(p.has_value() && p->getter != nullptr, "the engine has no property ", name);
  std::vector<c10::IValue> stack{engine};
  p->getter->run(stack);
  TORCH_CHECK(!stack.empty() && stack.back().isString(), "the engine's ", name, " is not a string");
  return stack.back().toStringRef();
}

void set_property(const c10::IValue& engine, const char* name, c10::IValue value) {
  const auto p = property_of(engine, name);
  TORCH_CHECK(p.has_value() && p->setter != nullptr, "the engine has no settable property ", name);
  std::vector<c10::IValue> stack{engine, std::move(value)};
  p->setter->run(stack);
}

EngineFacts engine_facts(const c10::IValue& engine) {
  EngineFacts facts;
  std::string text;
  try {
    const c10::IValue s = call_method(engine, "__str__");
    if (s.isString()) text = s.toStringRef();
  } catch (const std::exception&) {
    return facts;
  }
  facts.dynamic = value_after(text, "Resource Allocation Strategy: ") == "Dynamic";
  const std::string_view multi = value_after(text, "Multi-Device Engine: ");
  facts.native_multidevice = multi == "1" || multi == "true" || multi == "True";
  return facts;
}

std::string layer_trace_path(const std::string& folder, const std::string& engine_name) {
  return files::join(folder, engine_name + "_engine_execution_profile.trace");
}

bool parse_layer_trace(std::string_view text, std::vector<TracedLayer>* out) {
  out->clear();
  size_t pos = 0;
  const std::string_view kName = "\"name\": \"";
  bool have_name = false;
  std::string_view name;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (line.substr(0, kName.size()) == kName) {
      std::string_view rest = line.substr(kName.size());
      if (rest.size() < 2 || rest.substr(rest.size() - 2) != "\",") return false;
      name = rest.substr(0, rest.size() - 2);
      have_name = true;
      continue;
    }
    // perfetto: "dur" in microseconds; trex: "timeMs" (the layer's total) in milliseconds.
    double scale = 0;
    std::string_view number;
    if (line.substr(0, 7) == "\"dur\": ") {
      scale = 1e3;
      number = line.substr(7);
    } else if (line.substr(0, 10) == "\"timeMs\": ") {
      scale = 1e6;
      number = line.substr(10);
    } else {
      continue;
    }
    if (!number.empty() && number.back() == ',') number.remove_suffix(1);
    double value = 0;
    if (!have_name || !parse_number(number, &value) || value < 0) return false;
    out->push_back(TracedLayer{name, std::llround(value * scale)});
    have_name = false;
  }
  return true;
}

int64_t cudagraphs_mode() {
  // Looked up each time: the runtime may load after trt_trace (a few calls per window).
  const std::optional<c10::OperatorHandle> op =
      c10::Dispatcher::singleton().findSchema({"tensorrt::get_cudagraphs_mode", ""});
  if (!op.has_value()) return -1;
  try {
    std::vector<c10::IValue> stack;
    op->callBoxed(&stack);
    return stack.empty() || !stack.back().isInt() ? -1 : stack.back().toInt();
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace layers
}  // namespace trt_trace
