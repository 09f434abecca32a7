// The session's writer thread: every 50 ms (and at stop) it drains the rings, resolves GPU spans,
// places tracks, formats and writes the file, with no Python and no GIL, so a busy serving thread,
// a long C++ call or an extension that holds the GIL cannot starve it. It writes either format
// (session/trace_format.h: Chrome JSON or native Perfetto, as the settings say). Python keeps control
// only: it starts the writer (settings and the start metadata, already encoded), stops it, and ends the
// file with the end metadata it encodes from status(); it never touches per-event data.
//
// Locks: `mutex_` guards the trace (the file, the track book, the counters) and is held for a whole
// batch; the drain lock (drainer/drain.h) guards the rings' and the GPU resolver's consumer side;
// `wake_mutex_` guards the thread's stop and hold flags. Order: mutex_, then the drain lock.
//
// fork: the writer thread does not exist in a child. The child's handler (pthread_atfork) makes its
// locks usable again, forgets the thread (never joined there) and closes the inherited descriptors
// without a write (TraceFile::abandon: the parent's file lock stays the parent's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "session/trace_file.h"
#include "session/trace_format.h"

namespace trt_trace {
namespace session {

enum class TraceKind : uint8_t { kChromeJson, kPerfetto };

struct WriterSettings {
  TraceFileOptions file;
  TraceKind format = TraceKind::kChromeJson;
  // Chrome JSON: the array's first events (process name, start metadata), comma-separated; Perfetto: the
  // start metadata instant's debug annotations, encoded.
  std::string head;
  std::string process_name;  // Perfetto: the process track's name
  int64_t start_ns = 0;      // Perfetto: the start metadata's monotonic_ns (stamps a part with no record)
  int64_t pid = 0;
  bool gpu_flows = true;     // launch flow arrows (GPU timing on)
  int64_t interval_ms = 50;  // between drains
};

struct WriterStatus {
  int64_t records_drained = 0;  // handed to the file (whether or not the write then succeeded)
  int64_t events_written = 0;
  int64_t events_not_written = 0;
  int64_t bytes_written = 0;
  int64_t max_bytes = 0;
  int64_t wakes = 0;            // times the thread woke to drain
  bool created = false;
  bool failed = false;
  bool running = false;
  std::string error;            // why writing failed (strerror's words)
  std::string in_use;           // the path another process held, where this one wrote its own
  std::vector<std::string> paths;
};

// Starts the process's writer (one at a time; throws WriteFailed when the file cannot be opened, or
// std::logic_error when one runs).
void start_writer(const WriterSettings& settings);
// Stops the thread and drains the rest, waiting for GPU spans still in flight. The file stays open for end_writer.
void stop_writer();
// Writes the end record (encoded as the format takes it: TraceEnd) and closes the file; after_failure: cut
// back to the last whole batch first. Returns whether the end was written (false: no file, or none could be
// written).
bool end_writer(const TraceEnd& end, bool after_failure);
// Drains now on the caller's thread and writes what it drained (discard: drops it instead, no file
// needed); returns the records moved.
int64_t drain_writer_now(bool wait_gpu, bool discard);
// While held, the thread wakes but does not drain (benchmarks that tell the writer's work apart from the calls').
void hold_writer(bool held);
WriterStatus writer_status();
// Closes the file without a write (a forked child's copy; also done by the fork handler itself).
void abandon_writer();

}  // namespace session
}  // namespace trt_trace
