// A fake TensorRT 10.15 runtime (libnvinfer.so.10) for running the real
// Torch-TensorRT 2.11 runtime library on a GPU without TensorRT.
//
// It implements the runtime's three C entry points' worth of objects
// (faketrt_abi.h) over engine "plans" of this project's own text format
// (tests/faketrt/faketrt.py writes them):
//
//   faketrt-plan 1
//   name=<engine name>
//   input=<name>:<dtype>:<d0>x<d1>...     (one line per input, -1: any size)
//   output=<name>:<from input name>       (shape and dtype of that input)
//   copy=1          each output is a device copy of its input
//   gpu_ns=<ns>     then a kernel that spins this long on the GPU (each launch stamps its own
//                   first and last %globaltimer reading: faketrt_spin_stamps)
//   host_ns=<ns>    host time spent inside enqueueV3 (a launch cost)
//   fail_every=<n>  every n-th call of the engine fails (logs an error):
//   fail_stage=enqueue|infer_shapes   ... in enqueueV3 (returns false) or in inferShapes
//                   (reports the outputs' shapes as not inferable)
//   workspace=<bytes>  the device memory the engine asks for
//   time_work=1     CUDA events around the engine's own work (faketrt_work_ns)
//   layer=<ns>:<name>  one line per layer, in execution order: a kernel that spins <ns> on the
//                   GPU, reported to a profiler under <name> (the rest of the line, as TensorRT
//                   reports layer names: any text but a newline). With layers, gpu_ns is unused
//                   and the outputs' copies are no layer; without, the profiler hears of two
//                   layers, "faketrt_copy" (the copies) and "faketrt_spin" (the gpu_ns kernel).
//
// Profiling as TensorRT does it (IExecutionContext, IProfiler): with a profiler set, every enqueue
// times each layer with CUDA events on its stream; while getEnqueueEmitsProfile() is true (the
// default) enqueueV3 waits for them and calls IProfiler::reportLayerTime(name, ms) once per layer,
// in order, before it returns; after setEnqueueEmitsProfile(false) it returns at once and
// reportToProfiler() reports the last enqueue (false: no profiler, or that enqueue was captured
// into a CUDA graph). The inspector answers getEngineInformation / getLayerInformation with the
// layer names (TensorRT's kLAYER_NAMES_ONLY verbosity, as Torch-TensorRT builds engines).
//
// Everything it does not implement aborts with the interface and slot number.
// Test helpers (faketrt_*) are exported beside TensorRT's C entry points; those only the Python
// bindings link (the builder's) stop the process with their name if called.
#include <cuda_runtime_api.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "faketrt_abi.h"
#include "slot_check.h"

#define FAKETRT_EXPORT extern "C" __attribute__((visibility("default")))

namespace faketrt {

void not_implemented(const char* interface, int slot) noexcept {
  std::fprintf(stderr, "faketrt: %s slot %d is not implemented\n", interface, slot);
  std::fflush(stderr);
  std::abort();
}

namespace {

Logger* g_logger = nullptr;

void log(int32_t severity, const std::string& msg) {
  if (g_logger != nullptr) g_logger->log(severity, msg.c_str());
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Each launch's own first and last %globaltimer reading (its length as the kernel itself saw it, with
// no profiler involved), slot by slot; slots are handed out on the host (g_next_stamp_slot), -1: none.
constexpr int64_t kStampSlots = 1 << 17;
__device__ unsigned long long g_spin_stamps[2 * kStampSlots];

__device__ __forceinline__ void spin_for(uint64_t ns, int64_t slot) {
  uint64_t start, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - start < ns);
  if (slot >= 0) {
    g_spin_stamps[2 * slot] = start;
    g_spin_stamps[2 * slot + 1] = t;
  }
}

// The engines' work. fixed_cost_probe is the same code under another name: launched with ns = 0
// outside any engine call it measures the cost a profiler sees around the spin itself (the grid's
// launch on the SM and its exit), which the stamps above cannot see.
__global__ void spin_kernel(uint64_t ns, int64_t slot) { spin_for(ns, slot); }
__global__ void fixed_cost_probe(uint64_t ns, int64_t slot) { spin_for(ns, slot); }

struct TensorDesc {
  std::string name;
  bool input = true;
  int32_t dtype = kFloat;
  Dims64 dims{};
  int from = -1;  // output: index of the input it copies
};

struct Layer {
  std::string name;
  int64_t gpu_ns = 0;
};

struct Plan {
  std::string text;
  std::vector<Layer> layers;
  std::string name = "faketrt_engine";
  std::vector<TensorDesc> io;
  int64_t gpu_ns = 0, host_ns = 0, fail_every = 0, workspace = 0;
  bool copy = true, time_work = false;
  bool fail_in_infer_shapes = false;
  int find(const char* name) const {
    for (size_t i = 0; i < io.size(); ++i)
      if (io[i].name == name) return static_cast<int>(i);
    return -1;
  }
};

int32_t dtype_of(const std::string& s) {
  static const std::map<std::string, int32_t> m{{"float32", kFloat}, {"float16", kHalf}, {"int8", kInt8},
                                                {"int32", kInt32},   {"bool", kBool},    {"uint8", kUInt8},
                                                {"bfloat16", kBf16}, {"int64", kInt64}};
  auto it = m.find(s);
  return it == m.end() ? -1 : it->second;
}

int64_t element_size(int32_t dtype) {
  switch (dtype) {
    case kFloat: case kInt32: return 4;
    case kHalf: case kBf16: return 2;
    case kInt64: return 8;
    default: return 1;
  }
}

bool parse_plan(const char* data, size_t size, Plan* plan, std::string* err) {
  plan->text.assign(data, size);
  size_t pos = 0;
  int line_no = 0;
  std::map<std::string, std::string> output_from;
  std::vector<std::string> order;
  while (pos < plan->text.size()) {
    size_t end = plan->text.find('\n', pos);
    if (end == std::string::npos) end = plan->text.size();
    const std::string line = plan->text.substr(pos, end - pos);
    pos = end + 1;
    if (line_no++ == 0) {
      if (line != "faketrt-plan 1") return *err = "not a faketrt plan (first line: " + line.substr(0, 40) + ")", false;
      continue;
    }
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return *err = "plan line without '=': " + line, false;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "name") {
      plan->name = value;
    } else if (key == "input") {
      TensorDesc t;
      const size_t a = value.find(':'), b = value.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) return *err = "bad input: " + value, false;
      t.name = value.substr(0, a);
      t.dtype = dtype_of(value.substr(a + 1, b - a - 1));
      if (t.dtype < 0) return *err = "bad dtype: " + value, false;
      std::string dims = value.substr(b + 1);
      t.dims.nbDims = 0;
      size_t p = 0;
      while (!dims.empty() && p <= dims.size() && t.dims.nbDims < 8) {
        size_t x = dims.find('x', p);
        if (x == std::string::npos) x = dims.size();
        t.dims.d[t.dims.nbDims++] = std::strtoll(dims.substr(p, x - p).c_str(), nullptr, 10);
        p = x + 1;
      }
      plan->io.push_back(t);
    } else if (key == "output") {
      const size_t a = value.find(':');
      if (a == std::string::npos) return *err = "bad output: " + value, false;
      TensorDesc t;
      t.name = value.substr(0, a);
      t.input = false;
      output_from[t.name] = value.substr(a + 1);
      plan->io.push_back(t);
    } else if (key == "gpu_ns") {
      plan->gpu_ns = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key == "host_ns") {
      plan->host_ns = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key == "fail_every") {
      plan->fail_every = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key == "fail_stage") {
      if (value != "enqueue" && value != "infer_shapes") return *err = "bad fail_stage: " + value, false;
      plan->fail_in_infer_shapes = value == "infer_shapes";
    } else if (key == "workspace") {
      plan->workspace = std::strtoll(value.c_str(), nullptr, 10);
    } else if (key == "copy") {
      plan->copy = value == "1";
    } else if (key == "time_work") {
      plan->time_work = value == "1";
    } else if (key == "layer") {
      const size_t colon = value.find(':');
      if (colon == std::string::npos || colon == 0) return *err = "bad layer (want <ns>:<name>): " + value, false;
      plan->layers.push_back(Layer{value.substr(colon + 1), std::strtoll(value.substr(0, colon).c_str(), nullptr, 10)});
    } else {
      return *err = "unknown plan key: " + key, false;
    }
  }
  for (TensorDesc& t : plan->io) {
    if (t.input) continue;
    const int src = plan->find(output_from[t.name].c_str());
    if (src < 0 || !plan->io[src].input) return *err = "output " + t.name + ": no input " + output_from[t.name], false;
    t.from = src;
    t.dtype = plan->io[src].dtype;
    t.dims = plan->io[src].dims;
  }
  return true;
}

// Per-engine counters and the engine's own GPU work timings, read by the test helpers.
struct EngineRecord {
  int64_t enqueues = 0, failed = 0, profiler_reports = 0, allocator_calls = 0, device_memory_sets = 0,
          captured = 0;
  int64_t profiled_enqueues = 0;  // enqueues with a profiler set (each layer timed)
  int64_t waited_enqueues = 0;    // enqueues that waited for the GPU before returning (emitting a profile)
  int64_t layer_reports = 0;      // reportLayerTime calls
  int64_t static_memory_sets = 0;  // device memory bound to a context that owns its own (TensorRT: an error)
  std::vector<int64_t> layer_ns;  // each reported layer's time in ns, in report order (faketrt_layer_ns)
  uint64_t last_stream = 0;
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> pending;  // work start, end (in enqueue order)
  std::vector<int64_t> done_ns;
  std::vector<int64_t> stamp_slots;  // the g_spin_stamps slot of each spin launched, in launch order
};
std::mutex g_records_mutex;
int64_t g_next_stamp_slot = 0;  // guarded by g_records_mutex
std::map<std::string, EngineRecord>& records() {
  static auto* m = new std::map<std::string, EngineRecord>();
  return *m;
}

// A stamp slot for one launch of `engine` (-1 when all are used), recorded in launch order.
int64_t take_stamp_slot(const std::string& engine) {
  std::lock_guard<std::mutex> lock(g_records_mutex);
  if (g_next_stamp_slot >= kStampSlots) return -1;
  records()[engine].stamp_slots.push_back(g_next_stamp_slot);
  return g_next_stamp_slot++;
}

class HostMemoryFake final : public HostMemoryImpl {
 public:
  explicit HostMemoryFake(std::string bytes) : bytes_(std::move(bytes)) {}
  void* data() const noexcept override { return const_cast<char*>(bytes_.data()); }
  size_t size() const noexcept override { return bytes_.size(); }
  int32_t type() const noexcept override { return kUInt8; }

 private:
  std::string bytes_;
};

// A JSON string literal (quotes included) of `s`.
std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  return out + "\"";
}

// The names the profiler hears, in order.
std::vector<std::string> layer_names(const Plan& plan) {
  if (plan.layers.empty()) return {"faketrt_copy", "faketrt_spin"};
  std::vector<std::string> out;
  for (const Layer& l : plan.layers) out.push_back(l.name);
  return out;
}

// TensorRT's inspector at kLAYER_NAMES_ONLY: the engine as {"Layers": [names], "Bindings": [names]}
// (kJSON) or one layer name per line (kONELINE); one layer as its JSON string or its name.
class InspectorFake final : public InspectorImpl {
 public:
  explicit InspectorFake(const Plan& plan) : names_(layer_names(plan)) {
    json_ = "{\"Layers\": [";
    for (size_t i = 0; i < names_.size(); ++i) json_ += (i ? ", " : "") + json_string(names_[i]);
    json_ += "], \"Bindings\": [";
    for (size_t i = 0; i < plan.io.size(); ++i) json_ += (i ? ", " : "") + json_string(plan.io[i].name);
    json_ += "]}";
    for (const auto& n : names_) {
      one_line_ += n + "\n";
      layer_json_.push_back(json_string(n));
    }
  }
  bool setExecutionContext(const PublicObject* context) noexcept override {
    context_ = context;
    return true;
  }
  const PublicObject* getExecutionContext() const noexcept override { return context_; }
  const char* getLayerInformation(int32_t layer, int32_t format) const noexcept override {
    if (layer < 0 || layer >= static_cast<int32_t>(names_.size())) return nullptr;
    return format == kJson ? layer_json_[layer].c_str() : names_[layer].c_str();
  }
  const char* getEngineInformation(int32_t format) const noexcept override {
    return format == kJson ? json_.c_str() : one_line_.c_str();
  }

 private:
  std::vector<std::string> names_;
  std::string json_, one_line_;
  std::vector<std::string> layer_json_;
  const PublicObject* context_ = nullptr;
};

class ContextFake final : public ContextImpl {
 public:
  // strategy: nvinfer1::ExecutionContextAllocationStrategy (0 static: the context owns its device
  // memory; 2 user-managed: the caller binds it with setDeviceMemory before each enqueue).
  ContextFake(const PublicObject* engine, const Plan* plan, int32_t strategy)
      : engine_(engine), plan_(plan), strategy_(strategy) {
    shapes_.resize(plan->io.size());
    addresses_.resize(plan->io.size(), nullptr);
    allocators_.resize(plan->io.size(), nullptr);
    for (size_t i = 0; i < plan->io.size(); ++i) shapes_[i] = plan->io[i].dims;
    set_.resize(plan->io.size(), false);
  }
  ~ContextFake() override { drop_profile(); }
  void setProfiler(Profiler* profiler) noexcept override {
    profiler_ = profiler;
    if (profiler == nullptr) drop_profile();  // nothing left to report to
  }
  Profiler* getProfiler() const noexcept override { return profiler_; }
  void setEnqueueEmitsProfile(bool emits) noexcept override { emits_ = emits; }
  bool getEnqueueEmitsProfile() const noexcept override { return emits_; }
  bool reportToProfiler() const noexcept override;
  const PublicObject& getEngine() const noexcept override { return *engine_; }
  void setName(const char* name) noexcept override { name_ = name ? name : ""; }
  const char* getName() const noexcept override { return name_.c_str(); }
  void setDeviceMemory(void* memory) noexcept override { set_device_memory(memory); }
  void setDeviceMemoryV2(void* memory, int64_t) noexcept override { set_device_memory(memory); }

  bool setInputShape(const char* name, const Dims64& dims) noexcept override {
    const int i = plan_->find(name);
    if (i < 0 || !plan_->io[i].input || dims.nbDims != plan_->io[i].dims.nbDims) {
      log(kError, std::string("faketrt: setInputShape: bad tensor or rank: ") + name);
      return false;
    }
    for (int k = 0; k < dims.nbDims; ++k) {
      const int64_t want = plan_->io[i].dims.d[k];
      if (want >= 0 && dims.d[k] != want) {
        log(kError, std::string("faketrt: setInputShape: dimension mismatch for ") + name);
        return false;
      }
    }
    shapes_[i] = dims;
    set_[i] = true;
    return true;
  }
  Dims64 getTensorShape(const char* name) const noexcept override {
    const int i = plan_->find(name);
    if (i < 0) return Dims64{-1, {}};
    return plan_->io[i].input ? shapes_[i] : shapes_[plan_->io[i].from];
  }
  bool setTensorAddress(const char* name, void* data) noexcept override {
    const int i = plan_->find(name);
    if (i < 0) return false;
    addresses_[i] = data;
    return true;
  }
  const void* getTensorAddress(const char* name) const noexcept override {
    const int i = plan_->find(name);
    return i < 0 ? nullptr : addresses_[i];
  }
  int32_t inferShapes(int32_t nb_max_names, const char** names) noexcept override {
    int32_t missing = 0;
    ++infer_calls_;
    if (plan_->fail_in_infer_shapes && plan_->fail_every > 0 && infer_calls_ % plan_->fail_every == 0) {
      log(kError, "faketrt: inferShapes of " + plan_->name + " failed on request");
      std::lock_guard<std::mutex> lock(g_records_mutex);
      ++records()[plan_->name].failed;
      return 1;
    }
    for (size_t i = 0; i < plan_->io.size(); ++i) {
      if (!plan_->io[i].input || set_[i]) continue;
      if (names != nullptr && missing < nb_max_names) names[missing] = plan_->io[i].name.c_str();
      ++missing;
    }
    return missing;
  }
  bool setOutputAllocator(const char* name, OutputAllocator* allocator) noexcept override {
    const int i = plan_->find(name);
    if (i < 0 || plan_->io[i].input) return false;
    allocators_[i] = allocator;
    return true;
  }
  OutputAllocator* getOutputAllocator(const char* name) const noexcept override {
    const int i = plan_->find(name);
    return i < 0 ? nullptr : allocators_[i];
  }
  bool enqueueV3(void* stream_ptr) noexcept override;

 private:
  void set_device_memory(void* memory) {
    device_memory_ = memory;
    if (strategy_ == 0) log(kError, "faketrt: setDeviceMemory on a context created with its own (static) device memory");
    std::lock_guard<std::mutex> lock(g_records_mutex);
    ++records()[plan_->name].device_memory_sets;
    records()[plan_->name].static_memory_sets += strategy_ == 0;
  }
  int64_t bytes_of(int i) const {
    const Dims64& d = shapes_[plan_->io[i].from >= 0 ? plan_->io[i].from : i];
    int64_t n = element_size(plan_->io[i].dtype);
    for (int k = 0; k < d.nbDims; ++k) n *= d.d[k];
    return n;
  }

  // The last profiled enqueue's layer events, until reported: stage k ran from events[k] to events[k + 1].
  struct Profile {
    std::vector<std::string> names;
    std::vector<cudaEvent_t> events;
    bool captured = false;  // that enqueue was captured into a CUDA graph: nothing ran, nothing to report
  };
  void drop_profile() const noexcept {
    for (cudaEvent_t e : profile_.events) cudaEventDestroy(e);
    profile_.events.clear();
    profile_.names.clear();
  }
  // Waits for the last profiled enqueue's events and reports each layer once, in order.
  void report_profile() const noexcept;

  const PublicObject* engine_;
  const Plan* plan_;
  std::string name_;
  Profiler* profiler_ = nullptr;
  bool emits_ = true;  // TensorRT's default: enqueueV3 reports (and so waits) when a profiler is set
  int32_t strategy_ = 0;
  mutable Profile profile_;
  void* device_memory_ = nullptr;
  std::vector<Dims64> shapes_;
  std::vector<bool> set_;
  std::vector<void*> addresses_;
  std::vector<OutputAllocator*> allocators_;
  int64_t enqueues_ = 0;
  int64_t infer_calls_ = 0;
};

bool ContextFake::enqueueV3(void* stream_ptr) noexcept {
  auto stream = static_cast<cudaStream_t>(stream_ptr);
  const Plan& plan = *plan_;
  ++enqueues_;
  const bool fail = !plan.fail_in_infer_shapes && plan.fail_every > 0 && enqueues_ % plan.fail_every == 0;
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    EngineRecord& r = records()[plan.name];
    ++r.enqueues;
    r.failed += fail;
    r.last_stream = reinterpret_cast<uint64_t>(stream);
  }
  if (fail) {
    log(kError, "faketrt: enqueueV3 of " + plan.name + " failed on request (fail_every=" +
                    std::to_string(plan.fail_every) + ")");
    return false;
  }
  if (plan.host_ns > 0) {
    const int64_t until = now_ns() + plan.host_ns;
    while (now_ns() < until) {
    }
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(stream, &capture);
  const bool capturing = capture != cudaStreamCaptureStatusNone;
  const bool profiled = profiler_ != nullptr;
  const bool timed = plan.time_work && !capturing;
  // The work's own span (faketrt_work_ns): start, end.
  cudaEvent_t work[2] = {nullptr, nullptr};
  if (timed) {
    for (auto& e : work) cudaEventCreate(&e);
    cudaEventRecord(work[0], stream);
  }
  // A profiled enqueue times each stage with events between them, as TensorRT times layers.
  drop_profile();
  const bool layered = !plan.layers.empty();
  const auto stage_event = [&]() {
    if (!profiled || capturing) return;
    cudaEvent_t e = nullptr;
    cudaEventCreate(&e);
    cudaEventRecord(e, stream);
    profile_.events.push_back(e);
  };
  if (profiled) {
    profile_.names = layer_names(plan);
    profile_.captured = capturing;
  }
  if (!layered) stage_event();  // "faketrt_copy" starts here
  for (size_t o = 0; o < plan.io.size(); ++o) {
    const TensorDesc& t = plan.io[o];
    if (t.input) continue;
    const int64_t bytes = bytes_of(static_cast<int>(o));
    void* dst = addresses_[o];
    if (allocators_[o] != nullptr) {
      dst = allocators_[o]->reallocateOutputAsync(t.name.c_str(), addresses_[o], static_cast<uint64_t>(bytes), 256,
                                                   stream);
      addresses_[o] = dst;
      std::lock_guard<std::mutex> lock(g_records_mutex);
      ++records()[plan.name].allocator_calls;
    }
    if (dst == nullptr || addresses_[t.from] == nullptr) {
      log(kError, "faketrt: enqueueV3: no address for " + t.name);
      drop_profile();
      return false;
    }
    if (plan.copy && bytes > 0) cudaMemcpyAsync(dst, addresses_[t.from], bytes, cudaMemcpyDeviceToDevice, stream);
    if (allocators_[o] != nullptr) allocators_[o]->notifyShape(t.name.c_str(), shapes_[t.from]);
  }
  stage_event();  // layered: the first layer starts here; else "faketrt_copy" ends, "faketrt_spin" starts
  if (layered) {
    for (const Layer& l : plan.layers) {
      if (l.gpu_ns > 0) spin_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(l.gpu_ns), -1);
      stage_event();
    }
  } else {
    if (plan.gpu_ns > 0) {
      // A captured launch replays with the slot it was captured with: no stamps for graphs.
      const int64_t slot = capturing ? -1 : take_stamp_slot(plan.name);
      spin_kernel<<<1, 1, 0, stream>>>(static_cast<uint64_t>(plan.gpu_ns), slot);
    }
    stage_event();
  }
  const cudaError_t launched = cudaGetLastError();
  if (launched != cudaSuccess) {
    log(kError, std::string("faketrt: enqueueV3: ") + cudaGetErrorString(launched));
    drop_profile();
    return false;
  }
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    EngineRecord& r = records()[plan.name];
    r.captured += capturing;
    r.profiled_enqueues += profiled;
  }
  if (timed) {
    cudaEventRecord(work[1], stream);
    std::lock_guard<std::mutex> lock(g_records_mutex);
    records()[plan.name].pending.emplace_back(work[0], work[1]);
  }
  // Emitting the profile from the enqueue makes it synchronous: it waits for the layers' events.
  if (profiled && emits_ && !capturing) {
    report_profile();
    std::lock_guard<std::mutex> lock(g_records_mutex);
    ++records()[plan.name].waited_enqueues;
  }
  return true;
}

void ContextFake::report_profile() const noexcept {
  if (profiler_ == nullptr || profile_.events.size() != profile_.names.size() + 1) {
    drop_profile();
    return;
  }
  cudaEventSynchronize(profile_.events.back());
  std::vector<int64_t> ns;
  for (size_t k = 0; k < profile_.names.size(); ++k) {
    float ms = 0;
    cudaEventElapsedTime(&ms, profile_.events[k], profile_.events[k + 1]);
    profiler_->reportLayerTime(profile_.names[k].c_str(), ms);
    ns.push_back(static_cast<int64_t>(static_cast<double>(ms) * 1e6));
  }
  {
    std::lock_guard<std::mutex> lock(g_records_mutex);
    EngineRecord& r = records()[plan_->name];
    ++r.profiler_reports;
    r.layer_reports += static_cast<int64_t>(ns.size());
    r.layer_ns.insert(r.layer_ns.end(), ns.begin(), ns.end());
  }
  drop_profile();
}

bool ContextFake::reportToProfiler() const noexcept {
  if (profiler_ == nullptr || profile_.captured) return false;  // TensorRT: nothing to report to / from
  if (!profile_.events.empty()) report_profile();  // already reported by an emitting enqueue: nothing left
  return true;
}

class EngineFake final : public EngineImpl {
 public:
  explicit EngineFake(Plan plan) : plan_(std::move(plan)) {}
  void set_self(const PublicObject* self) { self_ = self; }
  int32_t getNbLayers() const noexcept override { return static_cast<int32_t>(layer_names(plan_).size()); }
  PublicObject* serialize() const noexcept override { return new PublicObject(new HostMemoryFake(plan_.text)); }
  PublicObject* createExecutionContext(int32_t strategy) noexcept override {
    return new PublicObject(new ContextFake(self_, &plan_, strategy));
  }
  const char* getName() const noexcept override { return plan_.name.c_str(); }
  PublicObject* createEngineInspector() const noexcept override { return new PublicObject(new InspectorFake(plan_)); }
  Dims64 getTensorShape(const char* name) const noexcept override {
    const int i = plan_.find(name);
    return i < 0 ? Dims64{-1, {}} : plan_.io[i].dims;
  }
  int32_t getTensorDataType(const char* name) const noexcept override {
    const int i = plan_.find(name);
    return i < 0 ? kFloat : plan_.io[i].dtype;
  }
  bool isShapeInferenceIO(const char*) const noexcept override { return false; }
  int32_t getTensorIOMode(const char* name) const noexcept override {
    const int i = plan_.find(name);
    return i < 0 ? kIONone : (plan_.io[i].input ? kIOInput : kIOOutput);
  }
  int32_t getNbIOTensors() const noexcept override { return static_cast<int32_t>(plan_.io.size()); }
  const char* getIOTensorName(int32_t index) const noexcept override {
    return index >= 0 && index < getNbIOTensors() ? plan_.io[index].name.c_str() : nullptr;
  }
  int64_t getStreamableWeightsSize() const noexcept override { return 0; }
  int64_t getDeviceMemorySizeV2() const noexcept override { return plan_.workspace; }

 private:
  Plan plan_;
  const PublicObject* self_ = nullptr;
};

class RuntimeFake final : public RuntimeImpl {
 public:
  PublicObject* deserializeCudaEngine(const void* blob, size_t size) noexcept override {
    Plan plan;
    std::string err;
    if (blob == nullptr || !parse_plan(static_cast<const char*>(blob), size, &plan, &err)) {
      log(kError, "faketrt: deserializeCudaEngine: " + err);
      return nullptr;
    }
    auto* impl = new EngineFake(std::move(plan));
    auto* pub = new PublicObject(impl);
    impl->set_self(pub);
    return pub;
  }
};

class PluginRegistryFake final : public PluginRegistry {
 public:
  bool registerCreator(void*, const char*) noexcept override { return true; }
  void* const* getPluginCreatorList(int32_t* count) noexcept override {
    if (count != nullptr) *count = 0;
    return nullptr;
  }
};

__attribute__((constructor)) void check_slots_at_load() {
  if (check_slots(stderr) != 0) {
    std::fprintf(stderr, "faketrt: vtable slots do not match TensorRT 10.15's; refusing to run\n");
    std::abort();
  }
}

}  // namespace
}  // namespace faketrt

// ---- TensorRT's C entry points -------------------------------------------------------------

FAKETRT_EXPORT void* createInferRuntime_INTERNAL(void* logger, int32_t /*version*/) {
  faketrt::g_logger = static_cast<faketrt::Logger*>(logger);
  return new faketrt::PublicObject(new faketrt::RuntimeFake());
}

FAKETRT_EXPORT void* getPluginRegistry() {
  static auto* registry = new faketrt::PluginRegistryFake();
  return registry;
}

// ---- Entry points only the Python bindings link against ----------------------------------------
// tensorrt_cu13_bindings 10.15 links these, and Python loads an extension with every symbol
// resolved at once, so `import tensorrt` needs them to exist. The bindings call them only when
// Python builds a Builder or Refitter (pybind constructors) or asks for a builder plugin registry;
// `import torch_tensorrt` and running engines do neither. The fake has no builder: calling one
// stops the process with its name, like an unimplemented slot.

namespace faketrt {
[[noreturn]] void no_builder(const char* entry) noexcept {
  std::fprintf(stderr, "faketrt: %s is not implemented (the fake runs engines; it builds none)\n", entry);
  std::fflush(stderr);
  std::abort();
}
}  // namespace faketrt

FAKETRT_EXPORT void* createInferBuilder_INTERNAL(void* /*logger*/, int32_t /*version*/) {
  faketrt::no_builder("createInferBuilder_INTERNAL");
}

FAKETRT_EXPORT void* createInferRefitter_INTERNAL(void* /*engine*/, void* /*logger*/, int32_t /*version*/) {
  faketrt::no_builder("createInferRefitter_INTERNAL");
}

// The registry a builder of the given engine capability uses: the fake's one registry (it holds
// no plugins whatever the capability).
FAKETRT_EXPORT void* getBuilderPluginRegistry(int32_t /*engine_capability*/) { return getPluginRegistry(); }

// TensorRT's library version, encoded major * 10000 + minor * 100 + patch: 10.15.1, the version
// Torch-TensorRT 2.11 is built against (its runtime passes the same number, 101501, as the
// `version` of createInferRuntime_INTERNAL). Nothing in 2.11 or the bindings imports it; the real
// library exports it, and a caller that looks it up by name gets the version the fake stands for.
FAKETRT_EXPORT int32_t getInferLibVersion() { return 10 * 10000 + 15 * 100 + 1; }

// ---- Test helpers ----------------------------------------------------------------------------

// The engine's own GPU work (copy + spin, CUDA events on the stream enqueueV3 got) per enqueue
// since the last call, in order; waits for pending work. Returns how many were written.
FAKETRT_EXPORT int32_t faketrt_work_ns(const char* engine, int64_t* out, int32_t max) {
  std::lock_guard<std::mutex> lock(faketrt::g_records_mutex);
  faketrt::EngineRecord& r = faketrt::records()[engine];
  for (auto& [a, b] : r.pending) {
    float ms = 0;
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    r.done_ns.push_back(static_cast<int64_t>(static_cast<double>(ms) * 1e6));
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  r.pending.clear();
  const int32_t n = std::min<int32_t>(max, static_cast<int32_t>(r.done_ns.size()));
  std::copy(r.done_ns.begin(), r.done_ns.begin() + n, out);
  r.done_ns.erase(r.done_ns.begin(), r.done_ns.begin() + n);
  return n;
}

// Each spin of `engine` since the last call, in launch order: its first and last %globaltimer reading
// (ns), two values per launch. Waits for the device. Returns how many values were written.
FAKETRT_EXPORT int32_t faketrt_spin_stamps(const char* engine, int64_t* out, int32_t max) {
  cudaDeviceSynchronize();
  std::lock_guard<std::mutex> lock(faketrt::g_records_mutex);
  faketrt::EngineRecord& r = faketrt::records()[engine];
  std::vector<unsigned long long> all(static_cast<size_t>(2 * faketrt::g_next_stamp_slot));
  if (!all.empty() && cudaMemcpyFromSymbol(all.data(), faketrt::g_spin_stamps, all.size() * sizeof(all[0])) !=
                          cudaSuccess)
    return -1;
  int32_t n = 0;
  size_t used = 0;
  for (; used < r.stamp_slots.size() && n + 2 <= max; ++used) {
    out[n++] = static_cast<int64_t>(all[2 * r.stamp_slots[used]]);
    out[n++] = static_cast<int64_t>(all[2 * r.stamp_slots[used] + 1]);
  }
  r.stamp_slots.erase(r.stamp_slots.begin(), r.stamp_slots.begin() + static_cast<std::ptrdiff_t>(used));
  return n;
}

// `count` launches of fixed_cost_probe spinning `ns` on the current device's legacy default stream,
// one after another, stamped under the name "fixed_cost_probe" (read back by faketrt_spin_stamps).
// Returns 0, or the CUDA error.
FAKETRT_EXPORT int32_t faketrt_fixed_cost_probe(int64_t ns, int32_t count) {
  for (int32_t i = 0; i < count; ++i) {
    const int64_t slot = faketrt::take_stamp_slot("fixed_cost_probe");
    faketrt::fixed_cost_probe<<<1, 1, 0, nullptr>>>(static_cast<uint64_t>(ns), slot);
  }
  return static_cast<int32_t>(cudaDeviceSynchronize());
}

// Counters of an engine: enqueues, failed, profiler reports (enqueues reported), output-allocator
// calls, device memory sets, captured enqueues, the last stream enqueueV3 got, profiled enqueues,
// enqueues that waited for the GPU, reportLayerTime calls, device memory bound to a static context.
// Returns how many were written.
FAKETRT_EXPORT int32_t faketrt_stats(const char* engine, int64_t* out, int32_t max) {
  std::lock_guard<std::mutex> lock(faketrt::g_records_mutex);
  const faketrt::EngineRecord& r = faketrt::records()[engine];
  const int64_t v[] = {r.enqueues, r.failed, r.profiler_reports, r.allocator_calls, r.device_memory_sets,
                       r.captured, static_cast<int64_t>(r.last_stream), r.profiled_enqueues, r.waited_enqueues,
                       r.layer_reports, r.static_memory_sets};
  const int32_t n = std::min<int32_t>(max, static_cast<int32_t>(sizeof v / sizeof v[0]));
  std::copy(v, v + n, out);
  return n;
}

// Each layer time reported to a profiler since the last call, in ns, in report order (layer by
// layer, enqueue by enqueue): what TensorRT measured. Returns how many were written.
FAKETRT_EXPORT int32_t faketrt_layer_ns(const char* engine, int64_t* out, int32_t max) {
  std::lock_guard<std::mutex> lock(faketrt::g_records_mutex);
  std::vector<int64_t>& v = faketrt::records()[engine].layer_ns;
  const int32_t n = std::min<int32_t>(max, static_cast<int32_t>(v.size()));
  std::copy(v.begin(), v.begin() + n, out);
  v.erase(v.begin(), v.begin() + n);
  return n;
}
