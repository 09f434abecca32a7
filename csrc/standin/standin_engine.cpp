#include "standin/standin_engine.h"

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
  return ss.str();
}

StandInEngine::StandInEngine(std::vector<std::string> serialized_info) : info(std::move(serialized_info)) {
  TORCH_CHECK(info.size() == SERIALIZATION_LEN, "Program to be deserialized targets an incompatible Torch-TensorRT ABI",
              " (expected ", SERIALIZATION_LEN, " serialized fields, got ", info.size(), ")");
  TORCH_CHECK(info[ABI_TARGET_IDX] == kAbiVersion, "Program to be deserialized targets a different Torch-TensorRT ABI",
              " Version (", info[ABI_TARGET_IDX], ") than the Torch-TensorRT Runtime ABI Version (", kAbiVersion, ")");
  name = info[NAME_IDX].empty() ? "deserialized_trt" : info[NAME_IDX];
  params = EngineParams::parse(info[ENGINE_IDX]);
  device_index = std::stoll(split(info[DEVICE_IDX], kBindingDelim)[0]);
  dynamic_allocation = info[RESOURCE_ALLOCATION_STRATEGY_IDX] == "1";
  in_binding_names = split(info[INPUT_BINDING_NAMES_IDX], kBindingDelim);
  out_binding_names = split(info[OUTPUT_BINDING_NAMES_IDX], kBindingDelim);
  TORCH_CHECK((int64_t)in_binding_names.size() == params.num_inputs &&
                  (int64_t)out_binding_names.size() == params.num_outputs,
              "stand-in engine: binding names do not match num_inputs/num_outputs");
#ifndef STANDIN_WITH_CUDA
  TORCH_CHECK(device_index < 0, "stand-in engine '", name,
              "' targets a CUDA device but this stand-in runtime was built without CUDA");
#endif
}

std::vector<std::string> StandInEngine::serialize() const {
  std::vector<std::string> out = info;
  out[ENGINE_IDX] = base64_encode(info[ENGINE_IDX]);
  return out;
}

FlattenedState StandInEngine::obj_flatten() const {
  return FlattenedState(Pair("version", info[ABI_TARGET_IDX]), Pair("name", info[NAME_IDX]),
                        Pair("device_info", info[DEVICE_IDX]), Pair("serialized_engine", base64_encode(info[ENGINE_IDX])),
                        Pair("in_binding_names", info[INPUT_BINDING_NAMES_IDX]),
                        Pair("out_binding_names", info[OUTPUT_BINDING_NAMES_IDX]),
                        Pair("hardware_compatible", info[HW_COMPATIBLE_IDX]),
                        Pair("requires_output_allocator", info[REQUIRES_OUTPUT_ALLOCATOR_IDX]),
                        Pair("serialized_metadata", info[SERIALIZED_METADATA_IDX]),
                        Pair("target_platform", info[TARGET_PLATFORM_IDX]),
                        Pair("resource_allocation_strategy", info[RESOURCE_ALLOCATION_STRATEGY_IDX]),
                        Pair("requires_native_multidevice", info[REQUIRES_NATIVE_MULTIDEVICE_IDX]));
}

std::string StandInEngine::to_str() const {
  std::ostringstream ss;
  ss << "Torch-TensorRT TensorRT Engine:" << std::endl;
  ss << "  Name: " << name << std::endl;
  ss << "  Inputs: [" << std::endl;
  for (size_t i = 0; i < in_binding_names.size(); ++i) {
    ss << "    id: " << i << std::endl << "      name: " << in_binding_names[i] << std::endl;
  }
  ss << "  ]" << std::endl << "  Outputs: [" << std::endl;
  for (size_t o = 0; o < out_binding_names.size(); ++o) {
    ss << "    id: " << o << std::endl << "      name: " << out_binding_names[o] << std::endl;
  }
  ss << "  ]" << std::endl;
  ss << "  Device: " << (device_index < 0 ? std::string("CPU (stand-in)") : "cuda:" + std::to_string(device_index))
     << std::endl;
  ss << "  Hardware Compatibility: " << (info[HW_COMPATIBLE_IDX] == "1" ? "Enabled" : "Disabled") << std::endl;
  ss << "  Target Platform: " << info[TARGET_PLATFORM_IDX] << std::endl;
  ss << "  Resource Allocation Strategy: " << (dynamic_allocation ? "Dynamic" : "Static") << std::endl;
  return ss.str();
}

}  // namespace trt_standin
