// torch.ops.trt_trace.* of the native writer (session/native_writer.h): control only. Python starts
// it with the output's settings and the start metadata (already encoded), stops it, reads its status
// and ends the file with the end metadata; no per-event data crosses here.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/record.h"
#include "session/chrome_json_trace.h"
#include "session/native_writer.h"

namespace trt_trace {
namespace {

using session::WriteFailed;

// OS errors reach Python as one line starting "[Errno N]" (trt_trace/runtime/native_trace.py turns it into its words).
void writer_start(const std::string& path, bool lazy, int64_t max_bytes, bool split, int64_t pid, bool gpu_flows,
                  const std::string& process_head, int64_t interval_ms) {
  session::WriterSettings s;
  s.file = session::TraceFileOptions{path, lazy, max_bytes, split, pid};
  s.process_head = process_head;
  s.pid = pid;
  s.gpu_flows = gpu_flows;
  s.interval_ms = interval_ms;
  try {
    session::start_writer(s);
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "trt_trace writer: ", e.shown);
  }
}

bool writer_end(const std::string& end_args_json, bool after_failure) {
  try {
    return session::end_writer(end_args_json, after_failure);
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "trt_trace writer: ", e.shown);
  }
}

// (counts, paths, error, in_use); counts: records_drained, events_written, events_not_written,
// bytes_written, max_bytes, wakes, created, failed, running.
std::tuple<std::vector<int64_t>, std::vector<std::string>, std::string, std::string> writer_status() {
  const session::WriterStatus s = session::writer_status();
  return {{s.records_drained, s.events_written, s.events_not_written, s.bytes_written, s.max_bytes, s.wakes,
           s.created, s.failed, s.running},
          s.paths,
          s.error,
          s.in_use};
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
    trace.file().finish(trace.metadata_event(end_args_json), 0);
    return {trace.file().events_written(), trace.file().events_not_written(), trace.file().paths()};
  } catch (const WriteFailed& e) {
    TORCH_CHECK(false, "json_trace_from_records: ", e.shown);
  }
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  using namespace trt_trace;
  m.def("_writer_start(str path, bool lazy, int max_bytes, bool split, int pid, bool gpu_flows, str process_head, "
        "int interval_ms) -> ()",
        &writer_start);
  m.def("_writer_stop() -> ()", [] { session::stop_writer(); });
  m.def("_writer_end(str end_args_json, bool after_failure) -> bool", &writer_end);
  m.def("_writer_drain(bool wait_gpu=False, bool discard=False) -> int",
        [](bool wait_gpu, bool discard) { return session::drain_writer_now(wait_gpu, discard); });
  m.def("_writer_hold(bool held) -> ()", [](bool held) { session::hold_writer(held); });
  m.def("_writer_status() -> (int[], str[], str, str)", &writer_status);
  m.def("_writer_abandon() -> ()", [] { session::abandon_writer(); });
  m.def("_json_trace_from_records(str path, Tensor records, int batch, int pid, bool gpu_flows, str process_head, "
        "str[] engine_names, str[] layer_names, int max_bytes, bool split, str end_args_json) -> "
        "(int, int, str[])",
        &json_trace_from_records);
}
