#include "standin/standin_engine.h"

#include "common/posix_files.h"

#include <cstring>
#include <sstream>
#include <stdexcept>

namespace trt_standin {

namespace {

std::vector<std::string> split(const std::string& s, char delim) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == delim) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

std::string join(const std::vector<std::string>& v, char delim) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out.push_back(delim);
    out += v[i];
  }
  return out;
}

// %25 -> %, %3B -> ;, %7C -> | (the separators of the parameter text).
std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out.push_back(static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == ';') out += "%3B";
    else if (c == '|') out += "%7C";
    else out.push_back(c);
  }
  return out;
}

// The '|'-separated items of `text` (none where it is empty), each split at its first ':' and made by
// make(item, before, after); an item without one is refused, `form` (what an item is) in the message.
template <class T, class Make>
std::vector<T> parse_items(const std::string& text, const char* form, Make make) {
  std::vector<T> out;
  if (text.empty()) return out;
  for (const auto& item : split(text, '|')) {
    const auto colon = item.find(':');
    TORCH_CHECK(colon != std::string::npos, "stand-in engine: ", form, ", not '", item, "'");
    out.push_back(make(item, item.substr(0, colon), item.substr(colon + 1)));
  }
  return out;
}

std::vector<StandInLayer> parse_layers(const std::string& text) {
  constexpr const char* kForm = "a layer is <us>:<name>";
  return parse_items<StandInLayer>(text, kForm, [&](const std::string& item, const std::string& us,
                                                    const std::string& name) {
    TORCH_CHECK(!us.empty(), "stand-in engine: ", kForm, ", not '", item, "'");
    StandInLayer layer{unescape(name), std::stoll(us)};
    TORCH_CHECK(layer.us >= 0 && !layer.name.empty(), "stand-in engine: bad layer '", item, "'");
    return layer;
  });
}

std::vector<ProfileRange> parse_profiles(const std::string& text) {
  return parse_items<ProfileRange>(text, "a profile is <min>:<max>", [](const std::string& item, const std::string& min,
                                                                        const std::string& max) {
    ProfileRange range{std::stoll(min), std::stoll(max)};
    TORCH_CHECK(range.min >= 0 && range.min <= range.max, "stand-in engine: bad profile '", item, "'");
    return range;
  });
}

const char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

std::string base64_encode(const std::string& in) {
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kB64[(v >> s) & 63]);
  }
  const size_t rest = in.size() - i;
  if (rest > 0) {
    uint32_t v = uint8_t(in[i]) << 16;
    if (rest == 2) v |= uint8_t(in[i + 1]) << 8;
    out.push_back(kB64[(v >> 18) & 63]);
    out.push_back(kB64[(v >> 12) & 63]);
    out.push_back(rest == 2 ? kB64[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    const char* p = std::strchr(kB64, c);
    if (c == '=' || c == '\0' || p == nullptr) break;
    v = (v << 6) | static_cast<uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((v >> bits) & 0xff));
    }
  }
  return out;
}

EngineParams EngineParams::parse(const std::string& text) {
  EngineParams p;
  for (const auto& kv : split(text, ';')) {
    if (kv.empty()) continue;
    const auto eq = kv.find('=');
    TORCH_CHECK(eq != std::string::npos, "stand-in engine: bad parameter '", kv, "'");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "scale") p.scale = std::stod(v);
    else if (k == "bias") p.bias = std::stod(v);
    else if (k == "activation") p.activation = v;
    else if (k == "num_inputs") p.num_inputs = std::stoll(v);
    else if (k == "num_outputs") p.num_outputs = std::stoll(v);
    else if (k == "repeat") p.repeat = std::stoll(v);
    else if (k == "host_us") p.host_us = std::stoll(v);
    else if (k == "workspace_bytes") p.workspace_bytes = std::stoll(v);
    else if (k == "fail_every") p.fail_every = std::stoll(v);
    else if (k == "dispatch_contiguous") p.dispatch_contiguous = std::stoll(v);
    else if (k == "layers") p.layers = parse_layers(v);
    else if (k == "profiles") p.profiles = parse_profiles(v);
    else TORCH_CHECK(false, "stand-in engine: unknown parameter '", k, "'");
  }
  TORCH_CHECK(p.activation == "relu" || p.activation == "tanh" || p.activation == "none",
              "stand-in engine: activation must be relu, tanh or none");
  TORCH_CHECK(p.num_inputs >= 1 && p.num_outputs >= 1 && p.repeat >= 1, "stand-in engine: counts must be >= 1");
  return p;
}

std::string EngineParams::serialize() const {
  std::ostringstream ss;
  ss.precision(17);
  ss << "scale=" << scale << ";bias=" << bias << ";activation=" << activation << ";num_inputs=" << num_inputs
     << ";num_outputs=" << num_outputs << ";repeat=" << repeat << ";host_us=" << host_us
     << ";workspace_bytes=" << workspace_bytes << ";fail_every=" << fail_every;
  if (dispatch_contiguous != 0) ss << ";dispatch_contiguous=" << dispatch_contiguous;
  if (!layers.empty()) {
    ss << ";layers=";
    for (size_t i = 0; i < layers.size(); ++i) ss << (i ? "|" : "") << layers[i].us << ":" << escape(layers[i].name);
  }
  if (!profiles.empty()) {
    ss << ";profiles=";
    for (size_t i = 0; i < profiles.size(); ++i) ss << (i ? "|" : "") << profiles[i].min << ":" << profiles[i].max;
  }
  return ss.str();
}

StandInEngine::StandInEngine(std::vector<std::string> serialized_info)
    : version(current_runtime_version()), info(std::move(serialized_info)) {
  const RuntimeTraits& rt = traits(version);
  TORCH_CHECK(static_cast<int64_t>(info.size()) >= rt.serialization_len, "stand-in engine: Torch-TensorRT ", rt.name,
              " reads ", rt.serialization_len, " serialized-info fields, got ", info.size());
  // What this engine serializes as: its version's fields, under its version's ABI.
  info.resize(rt.serialization_len);
  info[ABI_TARGET_IDX] = rt.abi_version;
  name = info[NAME_IDX].empty() ? "deserialized_trt" : info[NAME_IDX];
  params = EngineParams::parse(info[ENGINE_IDX]);
  device_index = std::stoll(split(info[DEVICE_IDX], kBindingDelim)[0]);
  dynamic_allocation = info[RESOURCE_ALLOCATION_STRATEGY_IDX] == "1";
  in_binding_names = split(info[INPUT_BINDING_NAMES_IDX], kBindingDelim);
  out_binding_names = split(info[OUTPUT_BINDING_NAMES_IDX], kBindingDelim);
  TORCH_CHECK((int64_t)in_binding_names.size() == params.num_inputs &&
                  (int64_t)out_binding_names.size() == params.num_outputs,
              "stand-in engine: binding names do not match num_inputs/num_outputs");
  TORCH_CHECK(params.layers.empty() || device_index < 0, "stand-in engine '", name,
              "': layers are modelled on CPU engines (the GPU proof of per-layer timing is tests/faketrt)");
  if (rt.aliased_io) parse_aliased_io(info[ALIASED_IO_IDX]);
  TORCH_CHECK(params.profiles.empty() || rt.optimization_profiles, "stand-in engine '", name,
              "': several optimization profiles are played from Torch-TensorRT 2.14");
  context_user_managed = dynamic_allocation;
  // 2.11 makes the execution context here; 2.13 and 2.14 at the first call that needs one.
  context_live = !rt.lazy_context;
  contexts_created = rt.lazy_context ? 0 : 1;
  profile_path_prefix = trt_trace::files::temp_directory();
#ifndef STANDIN_WITH_CUDA
  TORCH_CHECK(device_index < 0, "stand-in engine '", name,
              "' targets a CUDA device but this stand-in runtime was built without CUDA");
#else
  if (device_index >= 0 && rt.runs_on_caller_stream) {
    own_stream = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_index);
  }
#endif
}

// The runtime's records, "output@input@kind" joined with '%': a malformed one is skipped with a warning,
// as the runtime does; an unknown binding name is an error (the runtime validates every aliased output
// against the engine's bindings when it is made).
void StandInEngine::parse_aliased_io(const std::string& text) {
  if (text.empty()) return;
  const auto index_of = [](const std::vector<std::string>& names, const std::string& n) -> int64_t {
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i] == n) return static_cast<int64_t>(i);
    }
    return -1;
  };
  for (const auto& rec : split(text, kBindingDelim)) {
    const auto f1 = rec.find(kAliasFieldDelim);
    const auto f2 = f1 == std::string::npos ? std::string::npos : rec.find(kAliasFieldDelim, f1 + 1);
    if (f2 == std::string::npos) {
      TORCH_WARN("Skipping malformed aliased_io record: ", rec);
      continue;
    }
    const int64_t out = index_of(out_binding_names, rec.substr(0, f1));
    const int64_t in = index_of(in_binding_names, rec.substr(f1 + 1, f2 - f1 - 1));
    TORCH_CHECK(out >= 0 && in >= 0, "stand-in engine '", name, "': aliased output record '", rec,
                "' names a binding the engine does not have");
    aliased_outputs.emplace_back(out, in);
  }
}

std::optional<int64_t> StandInEngine::aliased_input_of(int64_t output) const {
  for (const auto& [out, in] : aliased_outputs) {
    if (out == output) return in;
  }
  return std::nullopt;
}

bool StandInEngine::profile_fits(int64_t profile, const std::vector<at::Tensor>& inputs) const {
  if (params.profiles.empty()) return true;
  const ProfileRange& r = params.profiles[static_cast<size_t>(profile)];
  for (const auto& t : inputs) {
    if (t.dim() == 0 || t.size(0) < r.min || t.size(0) > r.max) return false;
  }
  return true;
}

c10::intrusive_ptr<StandInEngine> StandInEngine::from_pickled(std::vector<std::string> serialized_info) {
  const RuntimeTraits& rt = traits(current_runtime_version());
  TORCH_CHECK(static_cast<int64_t>(serialized_info.size()) == rt.serialization_len,
              "Program to be deserialized targets an incompatible Torch-TensorRT ABI (", serialized_info.size(),
              " serialized fields; the Torch-TensorRT ", rt.name, " runtime reads ", rt.serialization_len, ")");
  TORCH_CHECK(serialized_info[ABI_TARGET_IDX] == rt.abi_version,
              "Program to be deserialized targets a different Torch-TensorRT ABI Version (",
              serialized_info[ABI_TARGET_IDX], ") than the Torch-TensorRT Runtime ABI Version (", rt.abi_version, ")");
  serialized_info[ENGINE_IDX] = base64_decode(serialized_info[ENGINE_IDX]);
  return c10::make_intrusive<StandInEngine>(std::move(serialized_info));
}

std::vector<std::string> StandInEngine::serialize() const {
  std::vector<std::string> out = info;
  out[ENGINE_IDX] = base64_encode(info[ENGINE_IDX]);
  return out;
}

c10::IValue StandInEngine::obj_flatten() const {
  // The real runtime's keys and order (serialized_metadata comes before requires_output_allocator
  // here, unlike in the index layout). A tuple, not a list: torch.export requires one.
  static const char* const kKeys[MAX_SERIALIZATION_LEN] = {
      "version", "name", "device_info", "serialized_engine", "in_binding_names", "out_binding_names",
      "hardware_compatible", "serialized_metadata", "requires_output_allocator", "target_platform",
      "resource_allocation_strategy", "requires_native_multidevice", "aliased_io"};
  static const int kFields[MAX_SERIALIZATION_LEN] = {
      ABI_TARGET_IDX, NAME_IDX, DEVICE_IDX, ENGINE_IDX, INPUT_BINDING_NAMES_IDX, OUTPUT_BINDING_NAMES_IDX,
      HW_COMPATIBLE_IDX, SERIALIZED_METADATA_IDX, REQUIRES_OUTPUT_ALLOCATOR_IDX, TARGET_PLATFORM_IDX,
      RESOURCE_ALLOCATION_STRATEGY_IDX, REQUIRES_NATIVE_MULTIDEVICE_IDX, ALIASED_IO_IDX};
  const std::vector<std::string> fields = serialize();
  std::vector<c10::IValue> pairs;
  pairs.reserve(fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    pairs.emplace_back(c10::ivalue::Tuple::create(std::string(kKeys[i]), fields[kFields[i]]));
  }
  return c10::ivalue::Tuple::create(std::move(pairs));
}

std::string StandInEngine::to_str() const {
  std::ostringstream ss;
  ss << "Torch-TensorRT TensorRT Engine:" << std::endl;
  ss << "  Name: " << name << std::endl;
  // 2.13 and later list the bindings only from a live execution context: none before the first call.
  if (!context_live) {
    ss << "  Inputs: <execution context not yet materialized>" << std::endl;
    ss << "  Outputs: <execution context not yet materialized>" << std::endl;
  } else {
    ss << "  Inputs: [" << std::endl;
    for (size_t i = 0; i < in_binding_names.size(); ++i) {
      ss << "    id: " << i << std::endl << "      name: " << in_binding_names[i] << std::endl;
    }
    ss << "  ]" << std::endl << "  Outputs: [" << std::endl;
    for (size_t o = 0; o < out_binding_names.size(); ++o) {
      ss << "    id: " << o << std::endl << "      name: " << out_binding_names[o] << std::endl;
    }
    ss << "  ]" << std::endl;
  }
  ss << "  Device: " << (device_index < 0 ? std::string("CPU (stand-in)") : "cuda:" + std::to_string(device_index))
     << std::endl;
  ss << "  Hardware Compatibility: " << (info[HW_COMPATIBLE_IDX] == "1" ? "Enabled" : "Disabled") << std::endl;
  ss << "  Target Platform: " << info[TARGET_PLATFORM_IDX] << std::endl;
  ss << "  Resource Allocation Strategy: " << (dynamic_allocation ? "Dynamic" : "Static") << std::endl;
  // 2.12 and later also say whether the engine needs native multi-device collectives.
  if (static_cast<int64_t>(info.size()) > REQUIRES_NATIVE_MULTIDEVICE_IDX) {
    ss << "  Multi-Device Engine: " << (info[REQUIRES_NATIVE_MULTIDEVICE_IDX] == "1" ? 1 : 0) << std::endl;
  }
  // 2.13 and later end with the runtime settings.
  if (traits(version).runtime_settings) {
    static const char* const kKernelStrategies[] = {"lazy", "eager", "none"};
    static const char* const kGraphStrategies[] = {"disabled", "whole_graph_capture"};
    ss << "RuntimeSettings{" << std::endl;
    ss << "  Dynamic Shapes Kernel Strategy: " << kKernelStrategies[kernel_strategy] << std::endl;
    ss << "  CUDA Graph Strategy: " << kGraphStrategies[cuda_graph_strategy] << std::endl;
    ss << "  Runtime Cache: "
       << (!runtime_cache ? "<engine-local, in-memory>"
                          : runtime_cache->path.empty() ? "<in-memory shared>" : runtime_cache->path.c_str())
       << std::endl;
    ss << "}";
  }
  return ss.str();
}

}  // namespace trt_standin
