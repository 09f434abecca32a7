// torch.ops.trt_trace.* of a session (session/session_control.h: one op starts it, one stops it) and of its
// native writer (session/native_writer.h): control only. Python starts a session with its settings and the
// start metadata (already encoded), stops it (the end record is built natively) and reads the writer's
// status; no per-event data crosses here. OS errors reach Python as one line starting "[Errno N]"
// (trt_trace/runtime/native_trace.py turns it into its words).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "common/record.h"
#include "hook/gpu_events.h"
#include "session/chrome_json_trace.h"
#include "session/native_writer.h"
#include "session/perfetto_trace.h"
#include "session/session_control.h"

namespace trt_trace {
namespace {

using session::WriteFailed;

// Encoded bytes (a JSON text, protobuf fields) as Python hands them over: a uint8 tensor.
std::string tensor_bytes(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu() && t.dtype() == at::kByte && t.dim() == 1, what, ": a 1-D CPU uint8 tensor expected");
  const at::Tensor c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), static_cast<size_t>(c.numel()));
}

// A format the native writer has (session/trace_format.h: each registered by its own file).
const std::string& trace_format(const std::string& format) {
  if (!session::format_known(format)) {
    std::string known;
    for (const std::string& name : session::format_names()) known += (known.empty() ? "" : " or ") + name;
    TORCH_CHECK(false, "trt_trace writer: unknown format ", format, " (", known, ")");
  }
  return format;
}

// -- the session: one start, one stop (session/session_control.h) ----------------------------------

// Why _session_start did not start, as trt_trace/runtime/session.py tells them apart (message: one line).
enum StartRefused : int64_t { kStarted = 0, kNotIdle = 1, kBadSettings = 2, kNoRing = 3, kCannotWrite = 4 };

// settings: by name, as config.Settings.native() gives them (session_control.h kSettings: every one, in
// range); the rest: the writer's settings (session::WriterSettings). Returns (refused, message,
// GPU timing compiled in, NVTX compiled in).
std::tuple<int64_t, std::string, bool, bool> session_start(
    const c10::Dict<std::string, int64_t>& settings, const std::string& path, const std::string& format, bool lazy,
    int64_t max_bytes, bool split, int64_t pid, const at::Tensor& head, const std::string& process_name,
    int64_t start_ns, double flight_s, int64_t flight_memory_bytes, bool take_sigusr1) {
  session::SessionStart s;
  s.take_sigusr1 = take_sigusr1;
  std::map<std::string, int64_t> named;
  for (const auto& item : settings) named[item.key()] = item.value();
  try {
    s.settings = session::parse_settings(named);
  } catch (const std::invalid_argument& e) {
    return {kBadSettings, e.what(), false, false};
  }
  s.writer.file = session::TraceFileOptions{path, lazy, max_bytes, split, pid};
  s.writer.format = trace_format(format);
  s.writer.head = tensor_bytes(head, "session_start");
  s.writer.process_name = process_name;
  s.writer.start_ns = start_ns;
  s.writer.pid = pid;
  s.writer.flight = session::FlightSettings{flight_s > 0, flight_s, flight_memory_bytes};
  try {
    const session::Started started = session::start(s);
    return {kStarted, "", started.gpu_available, started.nvtx_available};
  } catch (const std::logic_error& e) {
    return {kNotIdle, e.what(), false, false};
  } catch (const session::RingUnavailable& e) {
    return {kNoRing, e.what(), false, false};
  } catch (const WriteFailed& e) {
    return {kCannotWrite, e.shown, false, false};
  }
}

// (failure, end written after a failure, the exit dump: paths, calls, held_s, capped). Idle: one line.
std::tuple<std::string, bool, std::vector<std::string>, int64_t, double, bool> session_stop(bool keep_counting,
                                                                                          bool exit_dump) {
  try {
    session::Stopped s = session::stop(keep_counting, exit_dump);
    return {s.failure, s.end_written, s.exit_dump.paths, s.exit_dump.calls, s.exit_dump.held_s, s.exit_dump.capped};
  } catch (const std::logic_error& e) {
    TORCH_CHECK(false, "trt_trace: ", e.what());
  }
}

void session_set_layers(int64_t n) {
  try {
    session::set_layers(n);
  } catch (const std::logic_error& e) {  // std::invalid_argument (the range) included
    TORCH_CHECK(false, "trt_trace: ", e.what());
  }
}

// The settings table (session_control.h kSettings), for the test against config.py's rows: names,
// kinds (0 a switch, 1 a count), least and most values.
std::tuple<std::vector<std::string>, std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>>
settings_table() {
  std::vector<std::string> names;
  std::vector<int64_t> kinds, mins, maxs;
  for (const session::SettingDef& d : session::kSettings) {
    names.emplace_back(d.name);
    kinds.push_back(d.kind == session::SettingKind::kSwitch ? 0 : 1);
    mins.push_back(d.min);
    maxs.push_back(d.max);
  }
  return {names, kinds, mins, maxs};
}

c10::Dict<std::string, int64_t> native_settings() {
  c10::Dict<std::string, int64_t> out;
  for (const auto& [name, value] : session::current_settings()) out.insert(name, value);
  return out;
}

// (counts, paths, error, in_use); counts: records_drained, events_written, events_not_written,
// bytes_written, max_bytes, wakes, created, failed, running, records_held, records_let_go, dumps.
std::tuple<std::vector<int64_t>, std::vector<std::string>, std::string, std::string> writer_status() {
  const session::WriterStatus s = session::writer_status();
  return {{s.records_drained, s.events_written, s.events_not_written, s.bytes_written, s.max_bytes, s.wakes,
           s.created, s.failed, s.running, s.records_held, s.records_let_go, s.dumps},
          s.paths,
          s.error,
          s.in_use};
}

// A flight dump now: (paths, number, calls, held_s, capped, events_not_written, line).
std::tuple<std::vector<std::string>, int64_t, int64_t, double, bool, int64_t, std::string> writer_flight_dump(
    const std::string& trigger, int64_t now_ns) {
  try {
    const session::FlightDump d = session::dump_flight(trigger, now_ns);
    return {d.paths, d.number, d.calls, d.held_s, d.capped, d.events_not_written, d.line};
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "trt_trace writer: ", e.shown);
  } catch (const std::logic_error& e) {
    TORCH_CHECK(false, "trt_trace writer: ", e.what());
  }
}

void writer_flight_add(const at::Tensor& records, int64_t now_ns) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "writer_flight_add: records must be contiguous uint8 of whole records");
  try {
    session::flight_add(reinterpret_cast<const Record*>(records.data_ptr<uint8_t>()),
                        static_cast<size_t>(records.numel() / static_cast<int64_t>(sizeof(Record))), now_ns);
  } catch (const std::logic_error& e) {
    TORCH_CHECK(false, "trt_trace writer: ", e.what());
  }
}

// A whole JSON trace written from given records in batches of `batch`, with given names: the
// native writer's formatting and file handling without a session (tests/fixed_trace.py holds its
// bytes to the Python writer's). Returns (events written, events not written, the files).
std::tuple<int64_t, int64_t, std::vector<std::string>> json_trace_from_records(
    const std::string& path, const at::Tensor& records, int64_t batch, int64_t pid, bool gpu_flows,
    const std::string& process_head, const std::vector<std::string>& engine_names,
    const std::vector<std::string>& layer_names, int64_t max_bytes, bool split, const std::string& end_args_json) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "json_trace_from_records: records must be contiguous uint8 of whole records");
  TORCH_CHECK(batch > 0, "json_trace_from_records: batch must be positive");
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const auto n = static_cast<size_t>(records.numel() / static_cast<int64_t>(sizeof(Record)));
  session::NameSource names{[engine_names] { return engine_names; }, [layer_names] { return layer_names; }};
  try {
    session::ChromeJsonTrace trace(session::TraceFileOptions{path, false, max_bytes, split, pid}, process_head, pid,
                                   gpu_flows, names);
    for (size_t i = 0; i < n; i += static_cast<size_t>(batch)) {
      trace.write(rec + i, std::min(static_cast<size_t>(batch), n - i));
    }
    trace.finish(session::TraceEnd{end_args_json, 0});
    return {trace.file().events_written(), trace.file().events_not_written(), trace.file().paths()};
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "json_trace_from_records: ", e.shown);
  }
}

// The same for a native Perfetto trace, its clock snapshots pinned to `clocks` (boottime, monotonic, realtime;
// empty: read): tests/fixed_trace.py holds its bytes to the Python writer's (writers/perfetto_trace.py).
std::tuple<int64_t, int64_t, std::vector<std::string>> perfetto_trace_from_records(
    const std::string& path, const at::Tensor& records, int64_t batch, int64_t pid, bool gpu_flows,
    const std::string& process_name, const at::Tensor& start_annotations, int64_t start_ns,
    const std::vector<std::string>& engine_names, const std::vector<std::string>& layer_names, int64_t max_bytes,
    bool split, const at::Tensor& end_annotations, int64_t end_ns, const std::vector<int64_t>& clocks) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "perfetto_trace_from_records: records must be contiguous uint8 of whole records");
  TORCH_CHECK(batch > 0, "perfetto_trace_from_records: batch must be positive");
  TORCH_CHECK(clocks.empty() || clocks.size() == 3, "perfetto_trace_from_records: clocks: none or three");
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const auto n = static_cast<size_t>(records.numel() / static_cast<int64_t>(sizeof(Record)));
  session::NameSource names{[engine_names] { return engine_names; }, [layer_names] { return layer_names; }};
  session::PerfettoStart start;
  start.pid = pid;
  start.process_name = process_name;
  start.start_annotations = tensor_bytes(start_annotations, "perfetto_trace_from_records");
  start.start_ns = start_ns;
  start.flows = gpu_flows;
  if (!clocks.empty()) {
    const std::array<uint64_t, 3> pinned{static_cast<uint64_t>(clocks[0]), static_cast<uint64_t>(clocks[1]),
                                         static_cast<uint64_t>(clocks[2])};
    start.clocks = [pinned] { return pinned; };
  }
  try {
    session::PerfettoTrace trace(session::TraceFileOptions{path, false, max_bytes, split, pid}, std::move(start), names);
    for (size_t i = 0; i < n; i += static_cast<size_t>(batch)) {
      trace.write(rec + i, std::min(static_cast<size_t>(batch), n - i));
    }
    trace.finish(session::TraceEnd{tensor_bytes(end_annotations, "perfetto_trace_from_records"), end_ns});
    return {trace.file().events_written(), trace.file().events_not_written(), trace.file().paths()};
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "perfetto_trace_from_records: ", e.shown);
  }
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace;
  m.def("_writer_flight_dump(str trigger, int now_ns) -> (str[], int, int, float, bool, int, str)",
        &writer_flight_dump);
  m.def("_session_start(Dict(str, int) settings, str path, str format, bool lazy, int max_bytes, bool split, "
        "int pid, Tensor head, str process_name, int start_ns, float flight_s, int flight_memory_bytes, "
        "bool take_sigusr1=False) -> "
        "(int, str, bool, bool)",
        &session_start);
  m.def("_session_stop(bool keep_counting, bool exit_dump) -> (str, bool, str[], int, float, bool)", &session_stop);
  m.def("_session_set_layers(int n) -> ()", &session_set_layers);
  m.def("_session_state() -> (str, bool)", [] {
    return std::make_tuple(std::string(session::state_name(session::state())), session::flight_mode());
  });
  m.def("_session_forked() -> ()", [] { session::forked_child(); });
  m.def("_gpu_timing_built() -> bool", [] { return gpu::available(); });
  m.def("_settings_table() -> (str[], int[], int[], int[])", &settings_table);
  m.def("_native_settings() -> Dict(str, int)", &native_settings);
  m.def("_writer_flight_add(Tensor records, int now_ns) -> ()", &writer_flight_add);
  m.def("_flight_line(str trigger, str path, int calls, float window_s, float held_s, bool capped, "
        "int memory_bytes) -> str",
        &session::flight_line);
  m.def("_writer_drain(bool wait_gpu=False, bool discard=False) -> int",
        [](bool wait_gpu, bool discard) { return session::drain_writer_now(wait_gpu, discard); });
  m.def("_writer_hold(bool held) -> ()", [](bool held) { session::hold_writer(held); });
  m.def("_writer_status() -> (int[], str[], str, str)", &writer_status);
  m.def("_writer_abandon() -> ()", [] { session::abandon_writer(); });
  m.def("_writer_formats() -> str[]", [] { return session::format_names(); });
  m.def("_json_trace_from_records(str path, Tensor records, int batch, int pid, bool gpu_flows, str process_head, "
        "str[] engine_names, str[] layer_names, int max_bytes, bool split, str end_args_json) -> "
        "(int, int, str[])",
        &json_trace_from_records);
  m.def("_perfetto_trace_from_records(str path, Tensor records, int batch, int pid, bool gpu_flows, "
        "str process_name, Tensor start_annotations, int start_ns, str[] engine_names, str[] layer_names, "
        "int max_bytes, bool split, Tensor end_annotations, int end_ns, int[] clocks) -> (int, int, str[])",
        &perfetto_trace_from_records);
}
