#include "session/session_control.h"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <new>

#include "buffer/thread_rings.h"
#include "drainer/drain.h"
#include "hook/engine_stream_trace.h"
#include "hook/gpu_events.h"
#include "hook/tracing_state.h"
#include "integrations/nvtx_ranges.h"
#include "layers/layer_window.h"
#include "stats/gpu_sampling.h"

namespace trt_trace {
namespace session {

static_assert(kMaxEvery == gpu::kMaxGpuEvery, "gpu_every and caller_wait_every: the sampling's own bound");

namespace {

constexpr bool same(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}

// A row of kSettings by its name (a name not in the table does not compile).
constexpr size_t row(const char* name) {
  for (size_t i = 0; i < kNumSettings; ++i) {
    if (same(kSettings[i].name, name)) return i;
  }
  throw std::logic_error("no such setting");
}

constexpr size_t kBuffer = row("buffer_capacity"), kGpu = row("gpu_timing"), kGpuEvery = row("gpu_every"),
                 kNvtx = row("nvtx"), kEngineStream = row("engine_stream_spans"),
                 kCallerWait = row("caller_wait_every"), kLayers = row("layers");

// The one lock of the session's state: held through a whole start(), stop() or set_layers(), so that they
// run one at a time. The state and the mode are also atomic, so that state() reads them without waiting
// for a stop to end.
std::mutex g_mutex;
std::atomic<State> g_state{State::kIdle};
std::atomic<bool> g_flight{false};
SettingValues g_found{};     // the settings as start() found them (stop() puts them back)
bool g_switch_found = false;  // the tracing switch as start() found it
bool g_layers_used = false;   // per-layer timing on at some point of this session

// Not held across fork(): a fork waiting for a stop (which waits for GPU spans and the disk) could wait
// for a long time, and other locks' fork handlers would order against it. The child's copy of the lock may
// have been held by a parent thread that is not in the child: made afresh there; forked_child() then
// drops whatever session state the copy holds (recording or stopping).
void child_after_fork() { new (&g_mutex) std::mutex(); }

const bool g_fork_handler = [] {
  pthread_atfork(nullptr, nullptr, child_after_fork);
  return true;
}();

SettingValues read_settings() {
  SettingValues v{};
  v[kBuffer] = static_cast<int64_t>(ThreadRings::instance().capacity());
  v[kGpu] = gpu::enabled() ? 1 : 0;  // the switch itself, also in a CPU-only build
  v[kGpuEvery] = gpu::sample_every();
  v[kEngineStream] = gpu::engine_stream_spans() ? 1 : 0;
  v[kCallerWait] = gpu::caller_wait_every();
  v[kNvtx] = nvtx::enabled() ? 1 : 0;
  v[kLayers] = layers::calls_per_engine();
  return v;
}

// Every value is in range (parse_settings): none of these can refuse it.
Started apply(const SettingValues& v) {
  ThreadRings::instance().set_capacity(static_cast<size_t>(v[kBuffer]));
  Started available;
  available.gpu_available = gpu::set_enabled(v[kGpu] != 0);
  gpu::set_sample_every(v[kGpuEvery]);
  gpu::engine_stream_spans.set(v[kEngineStream] != 0);
  gpu::set_caller_wait_every(v[kCallerWait]);
  available.nvtx_available = nvtx::set_enabled(v[kNvtx] != 0);
  // Per-layer timing (layers/layer_window.h): a new window per engine, or off with every window closed.
  layers::set_calls_per_engine(v[kLayers]);
  return available;
}

// Per-layer timing is a session's alone: it goes off when the session stops, also in a forked child,
// which finds its parent's on (the engines back to normal calls, the private folder removed).
void put_back_found() {
  SettingValues found = g_found;
  found[kLayers] = 0;
  apply(found);
}

[[noreturn]] void refuse(const std::string& what) { throw std::logic_error(what); }

}  // namespace

const char* state_name(State s) {
  switch (s) {
    case State::kIdle: return "idle";
    case State::kRecording: return "recording";
    case State::kStopping: return "stopping";
  }
  return "?";
}

SettingValues parse_settings(const std::map<std::string, int64_t>& named) {
  SettingValues v{};
  for (const auto& [name, value] : named) {
    bool known = false;
    for (const SettingDef& d : kSettings) known |= name == d.name;
    if (!known) throw std::invalid_argument("unknown setting '" + name + "'");
  }
  for (size_t i = 0; i < kNumSettings; ++i) {
    const SettingDef& d = kSettings[i];
    const auto it = named.find(d.name);
    if (it == named.end()) throw std::invalid_argument(std::string("setting '") + d.name + "' missing");
    if (it->second < d.min || it->second > d.max) {
      throw std::invalid_argument(std::string("setting '") + d.name + "' must be from " + std::to_string(d.min) +
                                  " to " + std::to_string(d.max) + ", not " + std::to_string(it->second));
    }
    v[i] = it->second;
  }
  return v;
}

std::map<std::string, int64_t> current_settings() {
  const SettingValues v = read_settings();
  std::map<std::string, int64_t> out;
  for (size_t i = 0; i < kNumSettings; ++i) out[kSettings[i].name] = v[i];
  return out;
}

Started start(const SessionStart& s) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state != State::kIdle) {
    refuse(std::string("a session is already ") + state_name(g_state.load()) + "; stop it first");
  }
  const SettingValues& v = s.settings;
  // Now, not silently at a thread's first call.
  if (!ThreadRings::instance().reserve(static_cast<size_t>(v[kBuffer]))) {
    throw RingUnavailable("a ring of " + std::to_string(v[kBuffer]) + " records cannot be allocated");
  }
  g_found = read_settings();
  g_switch_found = tracing_enabled();
  // Only this session's calls reach its file: whatever the rings still hold (the tail of an earlier
  // session, a call that outlived it) is dropped before recording starts afresh.
  set_recording(false);
  drain_writer_now(true, true);
  ThreadRings::instance().reset_counts();
  layers::new_session_report();
  const Started available = apply(v);
  WriterSettings w = s.writer;
  w.gpu_flows = available.gpu_available && v[kGpu] != 0;  // no GPU slice to point at otherwise
  try {
    start_writer(w);
  } catch (...) {  // the file cannot be opened: nothing started
    apply(g_found);
    throw;
  }
  g_layers_used = v[kLayers] > 0;
  if (g_layers_used) report_layers(v[kLayers]);
  g_flight = w.flight.on;
  if (w.flight.on && s.take_sigusr1) take_sigusr1();
  set_recording(true);
  set_tracing(true);
  g_state = State::kRecording;
  return available;
}

Stopped stop(bool keep_counting, bool exit_dump) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state != State::kRecording) refuse("no session is recording; start one first");
  g_state = State::kStopping;
  set_recording(false);
  set_tracing(g_switch_found || keep_counting);  // switching tracing off releases every engine reference
  stop_writer();  // its final drain waits for GPU spans
  // After the last drain: per-layer timing goes off with it (every engine back to normal calls, the
  // runtime's private folder removed) before the end record reports the windows.
  Stopped out;
  try {
    put_back_found();
    SessionEnd end = end_session(exit_dump);
    out.failure = std::move(end.failure);
    out.end_written = end.end_written;
    out.exit_dump = std::move(end.exit_dump);
  } catch (...) {  // (out of memory): the session is over all the same
    g_state = State::kIdle;
    g_flight = false;
    throw;
  }
  g_state = State::kIdle;
  g_flight = false;
  return out;
}

void set_layers(int64_t n) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_state != State::kRecording) refuse("no session is recording: per-layer timing records into a session");
  SettingValues v = read_settings();
  v[kLayers] = n;
  std::map<std::string, int64_t> named;
  for (size_t i = 0; i < kNumSettings; ++i) named[kSettings[i].name] = v[i];
  apply(parse_settings(named));  // the range check; every engine's window starts afresh
  g_layers_used |= n > 0;
  if (g_layers_used) report_layers(n);
}

State state() { return g_state.load(); }

bool flight_mode() { return g_flight.load(); }

void forked_child() {
  std::lock_guard<std::mutex> lock(g_mutex);
  abandon_writer();
  drainer::after_fork_in_child();
  layers::after_fork_in_child();
  if (g_state == State::kIdle) return;
  set_recording(false);
  set_tracing(false);
  put_back_found();  // the parent's session is not the child's
  g_state = State::kIdle;
  g_flight = false;
}

}  // namespace session
}  // namespace trt_trace
