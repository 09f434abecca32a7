// A tracing session's state and its two entries from Python: one start, one stop.
//
//   idle ──start()──► recording ──stop()──► stopping ──(file ended)──► idle
//
// The flight recorder is a mode of `recording` (the writer keeps a window instead of writing a file).
// start() does, in order and under one lock: the settings checked whole against kSettings (nothing is
// applied if one is out of range), a ring reserved, the settings as found kept, recording off and
// the rings emptied of older sessions' records, drop counts and the layer report reset, the settings
// applied, the writer started (a file that cannot be opened puts the settings back: still idle), then
// a new recording epoch and the tracing switch on. stop() turns recording off and the switch back as
// found, stops the writer (its final drain waits for GPU spans), puts the settings back as found and
// ends the file with an end record built here (or, in flight mode, writes the exit dump if asked).
//
// Invalid transitions are one line each (std::logic_error, no state changed): start while a session
// records (or stops: start() waits for the stop to end, then starts), stop or a settings change while
// idle. A fork in any state: the child's copy of the session, recording or stopping, is dropped by
// forked_child() (Python's fork handler calls it), leaving the child idle; the parent goes on as it was.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "session/native_writer.h"

namespace trt_trace {
namespace session {

// -- the settings a session hands C++ -------------------------------------------------------------
// The one definition of the C++ side: names, kinds and ranges, in the order of config.Settings' fields.
// Python hands them over by name (a dict: no order to keep), parse_settings checks them all before any
// is applied. trt_trace/runtime/config.py's rows carry the same (`native=`, `bounds=`, the field's type):
// tests/test_configuration.py fails where the two disagree (_settings_table).
enum class SettingKind : uint8_t { kSwitch, kCount };

struct SettingDef {
  const char* name;
  SettingKind kind;
  int64_t min;
  int64_t max;
};

constexpr int64_t kMaxRingRecords = int64_t{1} << 30;  // per thread: 40 GiB of records
constexpr int64_t kMaxEvery = int64_t{1} << 20;         // gpu_sampling.h kMaxGpuEvery (checked in the .cpp)
constexpr int64_t kMaxLayerCalls = int64_t{1} << 20;    // calls per engine profiled layer by layer

inline constexpr SettingDef kSettings[] = {
    {"buffer_capacity", SettingKind::kCount, 1, kMaxRingRecords},
    {"gpu_timing", SettingKind::kSwitch, 0, 1},
    {"gpu_every", SettingKind::kCount, 1, kMaxEvery},
    {"nvtx", SettingKind::kSwitch, 0, 1},
    {"engine_stream_spans", SettingKind::kSwitch, 0, 1},
    {"caller_wait_every", SettingKind::kCount, 1, kMaxEvery},
    {"layers", SettingKind::kCount, 0, kMaxLayerCalls},
};
constexpr size_t kNumSettings = sizeof(kSettings) / sizeof(kSettings[0]);
using SettingValues = std::array<int64_t, kNumSettings>;

// Named values -> values in kSettings' order; every setting present, none unknown, each in its range,
// else std::invalid_argument with one line naming the setting and its range.
SettingValues parse_settings(const std::map<std::string, int64_t>& named);
// The settings as they are now, by name.
std::map<std::string, int64_t> current_settings();

// -- the state machine ------------------------------------------------------------------------------
enum class State : uint8_t { kIdle, kRecording, kStopping };
const char* state_name(State s);

struct SessionStart {
  SettingValues settings{};
  WriterSettings writer;  // writer.gpu_flows is set here: GPU timing asked for and available
  bool take_sigusr1 = false;  // flight mode: SIGUSR1 dumps the window (native_writer.h take_sigusr1)
};

struct Started {
  bool gpu_available = false;   // GPU timing compiled in
  bool nvtx_available = false;  // NVTX compiled in
};

// Why start() did not start (std::runtime_error's subclasses, each one line).
struct RingUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

Started start(const SessionStart& s);

struct Stopped {
  std::string failure;       // why writing the file (or the exit dump) failed; empty: it did not
  bool end_written = false;  // after a failure: whether the file still got its end record
  FlightDump exit_dump;      // flight mode with exit_dump: the dump written at the stop (number 0: none)
};

// keep_counting: the tracing switch stays on (served metrics count calls) whatever it was at start.
// exit_dump: flight mode, the window is dumped as the session ends.
Stopped stop(bool keep_counting, bool exit_dump);

// Per-layer timing from now on (recording only): `n` calls per engine, 0 off; the end record reports it.
void set_layers(int64_t n);

State state();
bool flight_mode();

// In a forked child (after fork, from Python's handler): the parent's writer, drain lock, pending GPU
// spans and layer folder are forgotten; a session the parent was recording is dropped (recording and
// the switch off, the settings as the parent's session found them). The child is idle.
void forked_child();

}  // namespace session
}  // namespace trt_trace
