// The session's writer thread: every 50 ms (and at stop) it drains the rings, resolves GPU spans,
// places tracks, formats and writes the file, with no Python and no GIL, so a busy serving thread,
// a long C++ call or an extension that holds the GIL cannot starve it. It writes any registered format
// (session/trace_format.h: Chrome JSON, native Perfetto, as the settings say). Python keeps control
// only, through the session's start and stop (session/session_control.h): the writer starts with its
// settings and the start metadata, already encoded; at the stop its end record is built here
// (end_session); Python never touches per-event data.
//
// Locks: `mutex_` guards the trace (the file, the track book, the counters) and is held for a whole
// batch; the drain lock (drainer/drain.h) guards the rings' and the GPU resolver's consumer side;
// `wake_mutex_` guards the thread's stop and hold flags. Order: mutex_, then the drain lock; mutex_, then
// wake_mutex_ (a drain sees a hold that began after the thread woke).
//
// Flight mode (TRT_TRACE_FLIGHT, trt_trace.flight()): the thread drains into an in-memory window
// (session/flight_window.h) instead of a file, and a dump writes the window's whole calls as a complete
// trace through a fresh TraceFormat of the session's format (`<stem>.dumpN<suffix>`), with the
// metadata built here: the start metadata Python encoded at start plus the `flight` entry, and an end
// record of counts this side keeps (the same fields the session's end record has). A dump runs under
// the writer's lock: on the thread of the Python caller that asks for it (dump(), an unhandled exception,
// the exit), or on the writer thread for SIGUSR1. SIGUSR1 is taken here, not by Python: a Python handler
// runs only between two bytecodes of the main thread, never while that thread is busy in C++ or holds the
// GIL in a long call, which is when a dump is wanted most. The native handler only sets an atomic flag
// (async-signal-safe); the writer thread sees it at its next wake (within 50 ms), dumps and prints the
// line itself.
//
// fork: the writer thread does not exist in a child. The child's handler (pthread_atfork) makes its
// locks usable again, forgets the thread (never joined there) and closes the inherited descriptors
// without a write (TraceFile::abandon: the parent's file lock stays the parent's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/record.h"
#include "session/trace_file.h"
#include "session/trace_format.h"

namespace trt_trace {
namespace session {

struct FlightSettings {
  bool on = false;
  double window_s = 0;        // the window asked for
  int64_t memory_bytes = 0;   // the memory cap (TRT_TRACE_FLIGHT_MAX_MB): max_records = memory_bytes / 40
};

struct WriterSettings {
  TraceFileOptions file;
  std::string format = "json";  // a registered format's name (session/trace_format.h)
  // The start metadata as Python encoded it for the format (FormatStart::head). Flight mode, Chrome JSON:
  // the start metadata object alone (each dump adds its `flight` entry and the process name event).
  std::string head;
  std::string process_name;  // Perfetto: the process track's name; flight mode: the process's name in either format
  int64_t start_ns = 0;      // Perfetto: the start metadata's monotonic_ns (stamps a part with no record)
  int64_t pid = 0;
  bool gpu_flows = true;     // launch flow arrows (GPU timing on)
  int64_t interval_ms = 50;  // between drains
  FlightSettings flight;
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
  std::vector<std::string> paths;  // flight mode: every dump's files, in order
  // Flight mode: the records in memory now, those the memory cap let go, dumps written.
  int64_t records_held = 0;
  int64_t records_let_go = 0;
  int64_t dumps = 0;
};

// What one flight dump holds (the flight dict of its metadata) and its one line.
struct FlightDump {
  std::vector<std::string> paths;  // its files (more than one where it split at the size limit)
  int64_t number = 0;
  int64_t calls = 0;
  double held_s = 0;  // the window it covers, rounded to the µs: window_s, or less where the memory cap cut it
  bool capped = false;
  int64_t events_not_written = 0;  // left out at the size limit
  std::string line;
};

// Starts the process's writer (one at a time; throws WriteFailed when the file cannot be opened, or
// std::logic_error when one runs).
void start_writer(const WriterSettings& settings);
// Stops the thread and drains the rest, waiting for GPU spans still in flight. The file stays open for end_session.
void stop_writer();
// How a session's file ended (end_session).
struct SessionEnd {
  std::string failure;       // why the file (or the exit dump) could not be written; empty: it was
  bool end_written = false;  // after a failure: the end record still written
  FlightDump exit_dump;      // flight mode: the exit dump (number 0: none)
};

// After stop_writer: ends the session's file with the end record built here (the session's fields, as
// a flight dump's, then what the file knows); after a failed write, cut back to the last whole batch and
// ended "write failed" where there is room. Flight mode: the exit dump where exit_dump, else nothing.
SessionEnd end_session(bool exit_dump);
// Drains now on the caller's thread and writes what it drained (discard: drops it instead, no file
// needed); returns the records moved.
int64_t drain_writer_now(bool wait_gpu, bool discard);
// While held, the thread wakes but does not drain (benchmarks that tell the writer's work apart from the calls').
void hold_writer(bool held);
// The status as the last batch (or start, end, dump) left it; never waits for a batch under way.
WriterStatus writer_status();
// Flight mode: writes the window as it is at `now_ns` (after draining the rings) as dump number N+1;
// `trigger` names what asked (dump(), SIGUSR1, exit, ...). Throws WriteFailed (the dump's file), or
// std::logic_error when the writer is not a flight recorder.
FlightDump dump_flight(const std::string& trigger, int64_t now_ns);
// Per-layer timing was on in this session, n calls per engine now (the end records' `layers`; 0 after it
// was on: the report with 0 calls per engine; never on: no `layers`).
void report_layers(int64_t calls_per_engine);
// Flight mode: a batch into the window as a drain at now_ns would add it (tests of the window's rules).
void flight_add(const Record* recs, size_t n, int64_t now_ns);
// Takes SIGUSR1 for the flight recorder (its native handler, see above); false where sigaction failed.
bool take_sigusr1();
// The one line a dump prints (Python's flight.Dump.line() is this).
std::string flight_line(const std::string& trigger, const std::string& path, int64_t calls, double window_s,
                        double held_s, bool capped, int64_t memory_bytes);

// Closes the file without a write (a forked child's copy; also done by the fork handler itself).
void abandon_writer();

}  // namespace session
}  // namespace trt_trace
