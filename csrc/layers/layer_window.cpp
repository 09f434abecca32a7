#include "layers/layer_window.h"

#include <torch/csrc/profiler/orchestration/observer.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "buffer/thread_rings.h"
#include "common/json_text.h"
#include "common/posix_files.h"
#include "common/record.h"
#include "engines/engine_registry.h"
#include "layers/layer_names.h"
#include "layers/layer_switch.h"
#include "layers/private_folder.h"
#include "layers/runtime_profiling.h"

#ifdef TRT_TRACE_WITH_CUDA
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace trt_trace {
namespace layers {

std::atomic<int64_t> g_calls_per_engine{0};

namespace {


constexpr const char* kLayerTraceSuffix = "_engine_execution_profile.trace";
// How long the call that opens a window waits for calls of the engine that bypassed the gate.
constexpr auto kQuietWait = std::chrono::seconds(2);

std::atomic<uint64_t> g_generation{0};  // bumped at every arming: every engine's window starts afresh
std::atomic<uint64_t> g_session{0};     // bumped at a session's arming: the report starts afresh

// Why a profiled call of an engine in its window ran as usual instead.
enum Skip : int { kNested, kTorchProfiler, kCapturing, kBusy, kNumSkips };
constexpr const char* kSkipNames[kNumSkips] = {"nested", "torch_profiler", "capturing", "busy"};

}  // namespace

struct LayerEngine {
  std::atomic<int32_t> inflight{0};            // calls running past the gate (the window was over)
  std::atomic<uint64_t> done_generation{0};    // == g_generation: the window is over, no gate
  std::timed_mutex gate;
  // -- under `gate` --
  uint64_t generation = 0;
  enum Stage : uint8_t { kFirstCall, kProfiling, kDone } stage = kFirstCall;
  int64_t remaining = 0;
  bool open = false;              // the runtime's profiling is on for this engine
  // While open: the engine object, weakly (a window never keeps an engine the program let go of; a
  // dead engine's profiler and context went with it).
  std::optional<c10::weak_intrusive_ptr<c10::ivalue::Object>> engine;
  std::string folder;             // the engine's private folder while open
  std::string old_prefix;         // profile_path_prefix as found
  EngineFacts facts;
  bool self_profiled = false;     // run from Python: its caller profiles its calls (layer_window.h)
  // The report (for this session).
  uint64_t session = 0;
  bool reached = false;           // the switch saw a call of it this session
  int64_t profiled = 0, failed = 0, unreadable = 0, not_recorded = 0;
  std::array<int64_t, kNumSkips> skipped{};
  std::string note;
  bool info_asked = false;
  std::string layer_info;
};

namespace {

// Engine id -> LayerEngine, two levels of 1024, made on first use and never freed (a call may
// still hold one while the switch goes off).
constexpr uint32_t kChunk = 1024;
using Chunk = std::array<std::atomic<LayerEngine*>, kChunk>;
std::array<std::atomic<Chunk*>, kChunk> g_table{};
std::mutex g_table_mutex;

LayerEngine* engine_state(uint32_t id) {
  const uint32_t hi = id / kChunk, lo = id % kChunk;
  if (id == 0 || hi >= kChunk) return nullptr;
  Chunk* chunk = g_table[hi].load(std::memory_order_acquire);
  LayerEngine* e = chunk != nullptr ? (*chunk)[lo].load(std::memory_order_acquire) : nullptr;
  if (C10_LIKELY(e != nullptr)) return e;
  std::lock_guard<std::mutex> lock(g_table_mutex);
  chunk = g_table[hi].load(std::memory_order_acquire);
  if (chunk == nullptr) {
    chunk = new Chunk();
    for (auto& slot : *chunk) slot.store(nullptr, std::memory_order_relaxed);
    g_table[hi].store(chunk, std::memory_order_release);
  }
  e = (*chunk)[lo].load(std::memory_order_acquire);
  if (e == nullptr) {
    e = new LayerEngine();
    (*chunk)[lo].store(e, std::memory_order_release);
  }
  return e;
}

template <typename F>
void for_each_engine(F&& f) {
  for (uint32_t hi = 0; hi < kChunk; ++hi) {
    Chunk* chunk = g_table[hi].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    for (uint32_t lo = 0; lo < kChunk; ++lo) {
      LayerEngine* e = (*chunk)[lo].load(std::memory_order_acquire);
      if (e != nullptr) f(hi * kChunk + lo, *e);
    }
  }
}

void warn(const std::string& line) {
  std::fprintf(stderr, "trt_trace: %s\n", line.c_str());
  std::fflush(stderr);
}

std::string first_line(const std::exception& e) {
  std::string s = e.what();
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

void reset_report_if_new_session(LayerEngine& e) {
  const uint64_t session = g_session.load(std::memory_order_acquire);
  if (e.session == session) return;
  const bool asked = e.info_asked;
  std::string info = std::move(e.layer_info);
  e.session = session;
  e.reached = false;
  e.profiled = e.failed = e.unreadable = e.not_recorded = 0;
  e.skipped = {};
  e.note.clear();
  e.info_asked = asked;  // the engine's layer information does not change
  e.layer_info = std::move(info);
}

// What keeps this call from being profiled now (kNumSkips: nothing). torch_profiler: whether a recording
// torch.profiler keeps it (the C++ runtime's RecordProfile steps fail under one; a self-profiled call's do not).
Skip hazard(uint16_t device, bool torch_profiler) {
  using torch::profiler::impl::ProfilerStateBase;
  if (torch_profiler &&
      (ProfilerStateBase::get(/*global=*/false) != nullptr || ProfilerStateBase::get(/*global=*/true) != nullptr)) {
    return kTorchProfiler;
  }
#ifdef TRT_TRACE_WITH_CUDA
  if (device != kNoDevice) {
    try {
      const c10::cuda::CUDAStream stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device));
      cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
      if (cudaStreamIsCapturing(stream.stream(), &status) != cudaSuccess) {
        cudaGetLastError();
      } else if (status != cudaStreamCaptureStatusNone) {
        return kCapturing;
      }
    } catch (const std::exception&) {
    }
  }
#else
  (void)device;
#endif
  return kNumSkips;
}

// The layer trace files the runtime wrote into `folder` (one per engine name; one engine here).
std::vector<std::string> layer_traces(const std::string& folder) {
  std::vector<std::string> out;
  for (const std::string& name : files::names_in(folder)) {
    if (name.size() > std::strlen(kLayerTraceSuffix) &&
        name.compare(name.size() - std::strlen(kLayerTraceSuffix), std::string::npos, kLayerTraceSuffix) == 0) {
      out.push_back(files::join(folder, name));
    }
  }
  return out;
}

// The engine of an open window, if it is still alive (an undefined IValue if not).
c10::IValue live_engine(const LayerEngine& e) {
  if (!e.engine.has_value()) return c10::IValue();
  c10::intrusive_ptr<c10::ivalue::Object> obj = e.engine->lock();
  return obj ? c10::IValue(std::move(obj)) : c10::IValue();
}

// Ends the engine's window for this generation: its calls go past the gate from now on.
void finish(LayerEngine& e, uint64_t generation, const std::string& note) {
  e.stage = LayerEngine::kDone;
  if (!note.empty() && e.note.empty()) e.note = note;
  e.done_generation.store(generation, std::memory_order_seq_cst);
}

// Turns the runtime's profiling off again and puts back what the window changed. Never throws.
void close_window(LayerEngine& e, uint32_t engine_id) noexcept {
  if (!e.open) return;
  if (e.self_profiled) {  // its caller took its profiler off after each call: nothing left on the engine
    e.open = false;
    return;
  }
  const c10::IValue engine = live_engine(e);
  e.engine.reset();
  e.open = false;
  if (engine.isNone()) {  // the program let go of the engine: its profiling went with it
    remove_engine_folder(engine_id);
    e.folder.clear();
    return;
  }
  try {
    call_method(engine, "disable_profiling");
  } catch (const std::exception& ex) {
    const std::string why = "disable_profiling() raised: " + first_line(ex);
    if (e.note.empty()) e.note = why + "; its calls may stay profiled (synchronous)";
    warn("layers: engine " + EngineRegistry::instance().name(engine_id) + ": " + why);
  }
  // 2.11 re-creates the context with the static strategy whatever the engine's; a Dynamic engine
  // gets its user-managed context back by switching the strategy off and on (2.13: both lazy).
  if (e.facts.dynamic) {
    try {
      call_method(engine, "use_dynamically_allocated_resources", {c10::IValue(false)});
      call_method(engine, "use_dynamically_allocated_resources", {c10::IValue(true)});
    } catch (const std::exception&) {
    }
  }
  try {
    set_property(engine, "profile_path_prefix", c10::IValue(e.old_prefix));
  } catch (const std::exception&) {
  }
  remove_engine_folder(engine_id);
  e.folder.clear();
}

// Opens the engine's window: checks, its private folder as the runtime's prefix. False: never
// profiled (why says so).
bool open_window(LayerEngine& e, uint32_t engine_id, const c10::IValue& engine, std::string* why) {
  if (!has_method(engine, "enable_profiling") || !has_method(engine, "disable_profiling") ||
      !has_property(engine, "profile_path_prefix")) {
    *why = "its runtime has no enable_profiling / disable_profiling / profile_path_prefix (Torch-TensorRT's own "
           "per-layer profiling)";
    return false;
  }
  e.facts = engine_facts(engine);
  if (e.facts.native_multidevice) {
    *why = "it needs native multi-device collectives: the runtime's disable_profiling() drops the execution context "
           "its communicator is bound to";
    return false;
  }
  std::string error;
  std::string folder = engine_folder(engine_id, &error);
  if (folder.empty()) {
    *why = "no private folder for the runtime's profile files: " + error;
    return false;
  }
  try {
    e.old_prefix = get_string_property(engine, "profile_path_prefix");
    set_property(engine, "profile_path_prefix", c10::IValue(folder));
  } catch (const std::exception& ex) {
    remove_engine_folder(engine_id);
    *why = "its profile_path_prefix cannot be set: " + first_line(ex);
    return false;
  }
  if (!e.info_asked && has_method(engine, "get_engine_layer_info")) {
    e.info_asked = true;
    try {
      const c10::IValue info = call_method(engine, "get_engine_layer_info");
      if (info.isString()) e.layer_info = info.toStringRef();
    } catch (const std::exception&) {
    }
  }
  e.engine.emplace(engine.toObject());
  e.folder = std::move(folder);
  e.open = true;
  return true;
}

// Before a profiled call of `engine`: a fresh profiler (its sums are this call's alone), no stale
// layer trace.
bool prepare_call(LayerEngine& e, const c10::IValue& engine, std::string* why) {
  for (const std::string& p : layer_traces(e.folder)) files::remove_file(p);
  try {
    call_method(engine, "enable_profiling");
  } catch (const std::exception& ex) {
    *why = "enable_profiling() raised: " + first_line(ex);
    return false;
  }
  return true;
}

// A profiled call's layers (name, ns, in order) into this thread's ring, end to end from its enqueue phase.
void write_layers(LayerEngine& e, uint32_t engine_id, const ProfiledCall& call, const std::vector<TracedLayer>& traced) {
  if (traced.empty()) return;  // nothing reported (e.g. a CUDA graph replay): no layer, no record
  std::vector<uint32_t> ids;
  LayerNames::instance().intern(engine_id, traced, &ids);
  if (!call.recorded) {
    ++e.not_recorded;
    return;
  }
  const ThreadRings::Writer w = ThreadRings::instance().writer();
  uint64_t at = 0;
  if (w.ring == nullptr || !w.ring->claim(traced.size(), traced.size(), 0, &at)) {
    ++e.not_recorded;  // (the ring counted the drop)
    return;
  }
  int64_t t = call.enqueue_begin_ns;
  for (size_t i = 0; i < traced.size(); ++i) {
    const int64_t end = t + traced[i].ns;
    w.ring->slot(at + i).layer = layer_record(t, end, call.call_id, engine_id, w.thread_id, call.device, ids[i]);
    t = end;
  }
  w.ring->publish(at + traced.size());
}

// After a profiled call that returned: its layers from the runtime's file, into this thread's ring.
void record_layers(LayerEngine& e, uint32_t engine_id, const ProfiledCall& call) {
  const auto files = layer_traces(e.folder);
  std::string text;
  if (files.size() == 1) {
    std::ifstream in(files[0], std::ios::binary);
    std::ostringstream buf;
    buf << in.rdbuf();
    text = buf.str();
  }
  std::vector<TracedLayer> traced;
  if (files.size() != 1 || !parse_layer_trace(text, &traced)) {
    ++e.unreadable;
    if (e.note.empty()) e.note = "the runtime wrote no readable layer trace for a profiled call";
    return;
  }
  write_layers(e, engine_id, call, traced);
}

// given: a self-profiled call's layers (nullptr: read the runtime's file).
void after_profiled(LayerEngine& e, uint32_t engine_id, uint64_t generation, const ProfiledCall& call,
                    bool error, const std::vector<TracedLayer>* given) noexcept {
  --e.remaining;
  try {
    if (error) {
      ++e.failed;  // the runtime wrote no layer trace for it
    } else if (given != nullptr) {
      ++e.profiled;
      write_layers(e, engine_id, call, *given);
    } else {
      ++e.profiled;
      record_layers(e, engine_id, call);
    }
  } catch (const std::exception& ex) {
    ++e.unreadable;
    if (e.note.empty()) e.note = "reading a profiled call's layers raised: " + first_line(ex);
  }
  if (e.remaining <= 0) {
    close_window(e, engine_id);
    finish(e, generation, "");
  }
}

// Waits until no call of the engine runs past the gate (they began after the last window closed).
bool wait_quiet(LayerEngine& e) {
  const auto until = std::chrono::steady_clock::now() + kQuietWait;
  while (e.inflight.load(std::memory_order_seq_cst) != 0) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return true;
}

// A call that passed the gate's lock (`lock`, held): whether it is profiled. engine: nullptr for a self-profiled
// call (layer_window.h). Every call that is not runs as
// usual: with the gate still held while the engine's window is not over, or counted in `inflight` past
// the released gate (*counted) once it is.
bool enter_gate(LayerEngine& e, uint32_t engine_id, const c10::IValue* engine, bool nested, uint16_t device,
                std::unique_lock<std::timed_mutex>& lock, uint64_t* generation_out, bool* counted) {
  const uint64_t generation = g_generation.load(std::memory_order_seq_cst);
  *generation_out = generation;
  const int64_t n = g_calls_per_engine.load(std::memory_order_seq_cst);
  reset_report_if_new_session(e);
  if (n > 0 && e.generation != generation) {  // the switch was set (again): this engine's window starts
    close_window(e, engine_id);  // one still open from before runs no further profiled call
    e.generation = generation;
    e.stage = LayerEngine::kFirstCall;
    e.remaining = n;
  }
  if (n <= 0 || e.stage == LayerEngine::kDone) {  // switched off, or the window is over: past the gate
    e.inflight.fetch_add(1, std::memory_order_seq_cst);
    *counted = true;
    lock.unlock();
    return false;
  }
  e.reached = true;
  if (e.stage == LayerEngine::kFirstCall || nested) {
    if (nested) {
      ++e.skipped[kNested];
    } else {
      e.stage = LayerEngine::kProfiling;
    }
    return false;
  }
  // The window: this call is to be profiled, unless something keeps it from that now.
  const Skip skip = hazard(device, /*torch_profiler=*/engine != nullptr);
  if (skip != kNumSkips) {
    close_window(e, engine_id);  // the runtime would profile it too
    ++e.skipped[skip];
    return false;
  }
  if (cudagraphs_mode() == 1) {
    close_window(e, engine_id);
    finish(e, generation, "the runtime's CUDA graph mode replays the engine without TensorRT's enqueue (no layer is "
                          "reported), and turning profiling off would leave the graph on a freed context");
    return false;
  }
  if (!e.open) {
    if (!wait_quiet(e)) {
      ++e.skipped[kBusy];
      return false;
    }
    std::string why;
    if (engine == nullptr) {
      e.open = true;  // its caller sets its profiler per call: nothing to open here
    } else if (!open_window(e, engine_id, *engine, &why)) {
      finish(e, generation, why);
      return false;
    }
  }
  if (engine == nullptr) return true;
  std::string why;
  if (!prepare_call(e, *engine, &why)) {
    close_window(e, engine_id);
    finish(e, generation, why);
    return false;
  }
  return true;
}

}  // namespace

LayerCall::LayerCall(uint32_t engine_id, const c10::IValue& engine, bool nested, uint16_t device)
    : engine_id_(engine_id) {
  e_ = engine_state(engine_id);
  if (e_ == nullptr) return;  // no engine id (not an engine object), or past a million engines: as usual
  // Counted first, then the generation read: a window that opens after this call read an old
  // generation waits for it (layer_window.h).
  e_->inflight.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t generation = g_generation.load(std::memory_order_seq_cst);
  if (e_->done_generation.load(std::memory_order_seq_cst) == generation) {
    counted_ = true;  // the window is over: no gate
    return;
  }
  e_->inflight.fetch_sub(1, std::memory_order_release);
  lock_ = std::unique_lock<std::timed_mutex>(e_->gate);
  profiled_ = enter_gate(*e_, engine_id, &engine, nested, device, lock_, &generation_, &counted_);
}

LayerCall::LayerCall(uint32_t engine_id, bool nested, uint16_t device) : engine_id_(engine_id) {
  e_ = engine_state(engine_id);
  if (e_ == nullptr) return;
  e_->inflight.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t generation = g_generation.load(std::memory_order_seq_cst);
  if (e_->done_generation.load(std::memory_order_seq_cst) == generation) {
    counted_ = true;
    return;
  }
  e_->inflight.fetch_sub(1, std::memory_order_release);
  lock_ = std::unique_lock<std::timed_mutex>(e_->gate);
  e_->self_profiled = true;
  profiled_ = enter_gate(*e_, engine_id, nullptr, nested, device, lock_, &generation_, &counted_);
}

LayerCall::~LayerCall() {
  if (counted_) e_->inflight.fetch_sub(1, std::memory_order_release);
}

void LayerCall::finished(const ProfiledCall& call, bool error) noexcept {
  if (profiled_) after_profiled(*e_, engine_id_, generation_, call, error, nullptr);
}

void LayerCall::finished(const ProfiledCall& call, bool error, const std::vector<TracedLayer>& layers) noexcept {
  if (profiled_) after_profiled(*e_, engine_id_, generation_, call, error, &layers);
}

void LayerCall::not_profiled(const std::string& why) noexcept {
  if (!profiled_) return;
  profiled_ = false;
  try {
    close_window(*e_, engine_id_);
    finish(*e_, generation_, why);
  } catch (...) {  // out of memory for the note: the window still ends
    finish(*e_, generation_, "");
  }
}

bool LayerCall::wants_layer_information() const noexcept { return profiled_ && !e_->info_asked; }

void LayerCall::layer_information(std::string json) noexcept {
  if (!profiled_ || e_->info_asked) return;
  e_->info_asked = true;
  e_->layer_info = std::move(json);
}

void new_session_report() { g_session.fetch_add(1, std::memory_order_acq_rel); }

void set_calls_per_engine(int64_t n, double wait_s) {
  if (n < 0) n = 0;
  if (n > 0) {
    g_generation.fetch_add(1, std::memory_order_seq_cst);
    g_calls_per_engine.store(n, std::memory_order_seq_cst);
    return;
  }
  g_calls_per_engine.store(0, std::memory_order_seq_cst);
  const auto wait = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(wait_s));
  for_each_engine([&](uint32_t engine_id, LayerEngine& e) {
    std::unique_lock<std::timed_mutex> lock(e.gate, std::defer_lock);
    if (!lock.try_lock_for(wait)) {
      warn("layers: engine " + EngineRegistry::instance().name(engine_id) + ": a call of it did not end within " +
           std::to_string(static_cast<int>(wait_s)) + " s, so its per-layer profiling could not be turned off");
      return;
    }
    if (!e.open) return;
    if (e.session == g_session.load(std::memory_order_acquire) && e.note.empty() && e.remaining > 0) {
      e.note = "the switch went off (or the session ended) " + std::to_string(e.remaining) +
               " call(s) before its window was over";
    }
    close_window(e, engine_id);
  });
  remove_private_folder();
}

int64_t calls_per_engine() { return g_calls_per_engine.load(std::memory_order_relaxed); }

std::string report_json() {
  const uint64_t session = g_session.load(std::memory_order_acquire);
  std::ostringstream out;
  out << "{\"calls_per_engine\": " << g_calls_per_engine.load() << ", \"engines\": [";
  bool first = true;
  for_each_engine([&](uint32_t engine_id, LayerEngine& e) {
    std::unique_lock<std::timed_mutex> lock(e.gate, std::defer_lock);
    if (!lock.try_lock_for(std::chrono::seconds(1))) return;
    if (e.session != session || !e.reached) return;
    out << (first ? "" : ", ") << "{\"engine_id\": " << engine_id
        << ", \"engine\": " << json_string(EngineRegistry::instance().name(engine_id))
        << ", \"profiled_calls\": " << e.profiled << ", \"failed_calls\": " << e.failed
        << ", \"unreadable_calls\": " << e.unreadable << ", \"not_recorded_calls\": " << e.not_recorded
        << ", \"skipped\": {";
    for (int k = 0; k < kNumSkips; ++k) out << (k ? ", " : "") << "\"" << kSkipNames[k] << "\": " << e.skipped[k];
    out << "}, \"note\": " << json_string(e.note) << ", \"layers\": [";
    const auto names = LayerNames::instance().engine_layers(engine_id);
    for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << json_string(names[i]);
    out << "], \"layer_information\": " << json_string(e.layer_info) << "}";
    first = false;
  });
  out << "]}";
  return out.str();
}

void after_fork_in_child() noexcept {
  forget_private_folder_after_fork();
  LayerNames::instance().after_fork_in_child();
  new (&g_table_mutex) std::mutex();
  for_each_engine([](uint32_t, LayerEngine& e) {
    new (&e.gate) std::timed_mutex();  // a parent thread may have held it at the fork
    e.inflight.store(0, std::memory_order_relaxed);
    if (!e.open) return;
    const c10::IValue engine = live_engine(e);
    e.engine.reset();
    e.open = false;
    e.stage = LayerEngine::kDone;
    e.done_generation.store(e.generation, std::memory_order_relaxed);
    if (e.note.empty()) e.note = "the process forked inside its window";
    if (engine.isNone()) return;
    // The child's copy of an engine in an open window: never into the parent's folder again.
    // disable_profiling() synchronises CUDA, which a forked child cannot use: a CUDA engine keeps
    // profiling (it cannot run here anyway) with a prefix where nothing can be written.
    try {
      set_property(engine, "profile_path_prefix", c10::IValue(std::string("/nonexistent/trt_trace-forked-child")));
    } catch (const std::exception&) {
    }
    try {
      call_method(engine, "disable_profiling");
      set_property(engine, "profile_path_prefix", c10::IValue(e.old_prefix));  // off: the user's prefix back
    } catch (const std::exception&) {
    }
  });
}

}  // namespace layers
}  // namespace trt_trace
