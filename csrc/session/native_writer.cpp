#include "session/native_writer.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include "buffer/thread_rings.h"
#include "common/clock.h"
#include "drainer/drain.h"
#include "drainer/gpu_resolver.h"
#include "engines/engine_registry.h"
#include "format/json_value.h"
#include "format/perfetto_track_packets.h"
#include "layers/layer_names.h"
#include "layers/layer_window.h"
#include "session/flight_window.h"
#include "session/writer_slice.h"

namespace trt_trace {
namespace session {
namespace {

constexpr size_t kBatchRecords = 1 << 14;  // 640 KiB per drain: the writer's memory stays a few MiB
// Records formatted and written at a time. A drain's whole batch came to ~3 MiB of JSON, more than a core's
// cache, and write() then copied it into the page cache from memory: the writer's CPU, most of it in that
// copy, was the cost of tracing a server flat out. A piece of ~100 KiB is copied while still in cache
// (BENCHMARKS.md, "The writer's pieces"). Also what a part may pass its size limit by (docs/failure-modes.md).
constexpr size_t kWriteRecords = 512;

// Where the piece of records that starts at `from` ends: kWriteRecords on, then past the host phases of the
// call it cut, so that a call and its phases stay in one piece (one part of a split trace, one placement).
size_t piece_end(const Record* recs, size_t n, size_t from) {
  size_t end = std::min(n, from + kWriteRecords);
  while (end < n && recs[end].phase >= 1 && recs[end].phase <= kNumHostPhases) ++end;
  return end;
}

// Formats and writes `n` records in pieces (piece_end).
void write_pieces(TraceFormat& trace, const Record* recs, size_t n) {
  for (size_t i = 0; i < n;) {
    const size_t end = piece_end(recs, n, i);
    trace.write(recs + i, end - i);
    i = end;
  }
}

constexpr int64_t kSweepEvery = 20;  // drains between sweeps of dead engines

using perfetto_packets::Value;

struct Writer {
  std::mutex mutex_;  // the trace and the counters (held for a whole batch)
  std::unique_ptr<TraceFormat> trace;
  // Flight mode: the window in place of the trace, the settings a dump needs, and the dumps so far.
  std::unique_ptr<FlightWindow> window;
  WriterSettings settings;
  int64_t dumps = 0;
  std::vector<std::string> dump_paths;
  int64_t dump_events_written = 0, dump_events_not_written = 0;
  int64_t layers_calls = -1;  // per-layer timing's calls per engine, once on in this session (-1: never)
  std::vector<Record> buffer;
  int64_t records_drained = 0;
  int64_t interval_ms = 50;
  bool failed = false;
  std::string error;

  // The status as the last holder of mutex_ left it (WriterLock publishes it): writer_status() reads this and
  // never waits for a batch, so a Python thread asking (which holds the GIL the serving threads need) is
  // not held up for a drain's length.
  std::mutex status_mutex_;
  WriterStatus published;

  std::mutex wake_mutex_;  // stop / held flags
  std::condition_variable wake;
  bool stopping = false;
  bool held = false;
  std::thread* thread = nullptr;  // leaked in a forked child (the thread is not there)
  int64_t wakes = 0;
};

Writer* g_writer = nullptr;  // never destroyed: the thread may outlive static destruction

// SIGUSR1 asked for a dump (set by the signal handler, taken by the writer thread).
std::atomic<bool> g_dump_asked{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

// w's status (its lock held, or the only thread left after a fork) into w.published. Never throws: it runs
// in WriterLock's destructor; where the copy cannot be made the status stays as it was.
void publish(Writer& w) noexcept {
  try {
    WriterStatus s;
    s.records_drained = w.records_drained;
    s.failed = w.failed;
    s.error = w.error;
    if (w.window) {
      s.events_written = w.dump_events_written;
      s.events_not_written = w.dump_events_not_written;
      s.max_bytes = w.settings.file.max_bytes;
      s.created = w.dumps > 0;
      s.paths = w.dump_paths;
      s.records_held = w.window->records_held();
      s.records_let_go = w.window->records_let_go();
      s.dumps = w.dumps;
    } else if (w.trace) {
      const TraceFile& f = w.trace->file();
      s.events_written = f.events_written();
      s.events_not_written = f.events_not_written();
      s.bytes_written = f.bytes_written();
      s.max_bytes = f.max_bytes();
      s.created = f.created();
      s.in_use = f.in_use();
      s.paths = f.paths();
    }
    std::lock_guard<std::mutex> lock(w.status_mutex_);
    w.published = std::move(s);
  } catch (...) {  // no memory for the copy: the last status stands
  }
}

// The writer's lock, for every change to the trace and its counters: its release publishes the status.
class WriterLock {
 public:
  explicit WriterLock(Writer& w) : w_(w), lock_(w.mutex_) {}
  ~WriterLock() { publish(w_); }  // before lock_ is released (members end after the destructor's body)
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  Writer& w_;
  std::lock_guard<std::mutex> lock_;
};

void after_fork_in_child() {
  Writer& c = *g_writer;
  new (&c.mutex_) std::mutex();
  new (&c.wake_mutex_) std::mutex();
  new (&c.status_mutex_) std::mutex();
  new (&c.wake) std::condition_variable();
  c.thread = nullptr;  // the parent's thread: not here, never joined
  c.stopping = false;
  c.held = false;
  if (c.trace) c.trace->file().abandon();
  (void)c.trace.release();  // the parent's state, possibly mid-batch: never touched again
  (void)c.window.release();  // the parent's window, likewise (its pages stay shared, never written)
  g_dump_asked.store(false);
  publish(c);  // what writer_status() says here: no trace, no window
}

Writer& writer() {
  static Writer* w = [] {
    g_writer = new Writer();
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return g_writer;
  }();
  return *w;
}

// f(the writer), under its lock.
template <class F>
auto with_writer(F&& f) {
  Writer& w = writer();
  WriterLock lock(w);
  return f(w);
}

// One line on stderr, as trt_trace's Python side words its warnings (config.warn).
void warn_line(const std::string& message) {
  const std::string line = "trt_trace: " + message + "\n";
  const char* p = line.data();
  size_t n = line.size();
  while (n > 0) {
    const ssize_t w = ::write(2, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Writes one drained batch to the file or the flight window; a failure marks the writer failed, in one warning.
void write_batch(Writer& w, size_t n) {
  try {
    if (w.window) {
      w.window->add(w.buffer.data(), n, now_ns());
    } else {
      write_pieces(*w.trace, w.buffer.data(), n);
    }
  } catch (const WriteFailed& e) {
    w.failed = true;
    w.error = e.reason;
    warn_line("could not write the trace (" + e.shown + "); tracing continues in the table only");
  } catch (const std::exception& e) {  // out of memory
    w.failed = true;
    w.error = e.what();
    warn_line("could not write the trace (" + w.error + "); tracing continues in the table only");
  }
}

// Drains until the rings are empty, writing each batch (under the writer's lock). After a failed write the
// rings are still emptied, and what is drained is counted and let go: the end line ("N events drained since
// are not in it") then counts every event recorded after the file's last whole batch, whenever the failure
// came, and the serving threads never drop calls into rings nobody empties (a "buffer was full" that was not).
int64_t drain_all(Writer& w, bool wait_gpu, bool discard) {
  if (w.buffer.empty()) w.buffer.resize(kBatchRecords);
  int64_t total = 0;
  if (!discard && !w.trace && !w.window) return 0;
  while (true) {
    const size_t n = drainer::drain_batch(w.buffer.data(), w.buffer.size(), wait_gpu);
    if (n == 0) break;
    total += static_cast<int64_t>(n);
    if (discard) continue;
    w.records_drained += static_cast<int64_t>(n);  // handed over, whether or not the write then succeeds
    if (!w.failed) write_batch(w, n);  // after a failure: counted, not written
    // Under a busy loop the rings are rarely empty, and this loop may run for seconds in one hold of the
    // lock: the status (records drained, bytes, parts) is published batch by batch, not only at the end.
    publish(w);
  }
  return total;
}

// ---- the flight recorder's dumps ------------------------------------------------------------------

std::string printed(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, value);
  return buf;
}

// round(value, digits) as Python rounds: the correctly rounded decimal, read back.
double rounded(double value, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, value);
  return std::strtod(buf, nullptr);
}

// config.mib(): a size in MiB as TRT_TRACE_MAX_MB gives it.
std::string mib_text(int64_t bytes) {
  const double value = static_cast<double>(bytes) / (1 << 20);
  return value >= 0.01 || value == 0 ? printed("%g", rounded(value, 3)) : printed("%.3g", value);
}

// The session's per-layer report as its end record holds it (session.Session._layer_metadata): each
// engine's layer information (the inspector's JSON text) as an object where it parses, last among the
// engine's entries, and the calls per engine.
Value layers_value(int64_t calls_per_engine) {
  const std::string text = layers::report_json();
  std::optional<Value> report = json_value::parse(text);
  if (!report || report->kind != Value::Kind::kDict) return Value::of_string(text);
  for (auto& [key, engines] : report->entries) {
    if (key != "engines" || engines.kind != Value::Kind::kList) continue;
    for (Value& engine : engines.items) {
      if (engine.kind != Value::Kind::kDict) continue;
      std::string info;
      for (auto it = engine.entries.begin(); it != engine.entries.end(); ++it) {
        if (it->first == "layer_information") {
          if (it->second.kind == Value::Kind::kString) info = it->second.text;
          engine.entries.erase(it);
          break;
        }
      }
      if (info.empty()) continue;
      std::optional<Value> parsed = json_value::parse(info);
      engine.add("layer_information", parsed ? std::move(*parsed) : Value::of_string(info));
    }
  }
  report->add("calls_per_engine", Value::of_int(calls_per_engine));
  return std::move(*report);
}

// The session's part of a dump's end record (session.Session._end_metadata's fields, in its order).
Value session_end(const Writer& w, int64_t now_ns) {
  Value end = Value::dict();
  if (w.layers_calls >= 0) end.add("layers", layers_value(w.layers_calls));
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  end.add("monotonic_ns", Value::of_int(now_ns));
  end.add("wall_ns", Value::of_int(static_cast<int64_t>(wall.tv_sec) * 1000000000LL + wall.tv_nsec));
  end.add("records_drained", Value::of_int(w.records_drained));
  int64_t dropped = 0, dropped_calls = 0;
  Value threads = Value::list();
  for (const ThreadCounts& c : ThreadRings::instance().thread_counts()) {
    if (c.produced == 0) continue;
    dropped += static_cast<int64_t>(c.dropped);
    dropped_calls += static_cast<int64_t>(c.dropped_calls);
    threads.push(Value::dict()
                     .add("thread", Value::of_int(c.thread_id))
                     .add("produced", Value::of_int(static_cast<int64_t>(c.produced)))
                     .add("dropped", Value::of_int(static_cast<int64_t>(c.dropped)))
                     .add("dropped_calls", Value::of_int(static_cast<int64_t>(c.dropped_calls)))
                     .add("capacity", Value::of_int(static_cast<int64_t>(c.capacity))));
  }
  end.add("dropped_events", Value::of_int(dropped));
  end.add("dropped_calls", Value::of_int(dropped_calls));
  end.add("threads", std::move(threads));
  end.add("write_failed", Value::of_bool(w.failed));
  const gpu::ClockStats g = gpu::Resolver::instance().clock_stats();
  end.add("gpu_clock", Value::dict()
                           .add("anchors", Value::of_double(static_cast<double>(g.anchors)))
                           .add("max_abs_residual_ns", Value::of_double(static_cast<double>(g.max_abs_residual_ns)))
                           .add("last_residual_ns", Value::of_double(static_cast<double>(g.last_residual_ns)))
                           .add("anchor_window_ns", Value::of_double(static_cast<double>(g.anchor_window_ns)))
                           .add("gpu_clock_rate_ppm", Value::of_double(g.gpu_clock_rate_ppm))
                           .add("p50_abs_residual_ns", Value::of_double(static_cast<double>(g.p50_abs_residual_ns)))
                           .add("p99_abs_residual_ns", Value::of_double(static_cast<double>(g.p99_abs_residual_ns))));
  return end;
}

// What the session's format is made from (a flight dump: its `flight` entry, and a file of its own).
FormatStart format_start(const WriterSettings& s, TraceFileOptions file, NameSource names, const Value* flight) {
  FormatStart start;
  start.file = std::move(file);
  start.head = s.head;
  start.process_name = s.process_name;
  start.start_ns = s.start_ns;
  start.pid = s.pid;
  start.gpu_flows = s.gpu_flows;
  start.flight = flight;
  start.names = std::move(names);
  return start;
}

// What the file knows, after the session's fields (writers/trace_file.StreamedTrace.end_record): why it
// ended, its files, the events in them and those the size limit left out. failure: the end after a failed
// write, `ended` "write failed" in its place, `write_failed` true and the error last.
Value with_file_end(Value end, const TraceFile& file, const std::string& path, const std::string* failure) {
  const bool limited = file.events_not_written() > 0;
  end.add("ended", Value::of_string(failure ? "write failed" : limited ? "size limit" : "closed"));
  Value files = Value::list();
  for (const std::string& p : file.paths()) files.push(Value::of_string(p));
  if (file.paths().empty()) files.push(Value::of_string(path));
  end.add("files", std::move(files));
  end.add("records_written", Value::of_int(file.events_written()));
  end.add("events_not_written", Value::of_int(file.events_not_written()));
  if (limited) end.add("limit_bytes", Value::of_int(file.max_bytes()));
  if (failure) {
    for (auto& [key, value] : end.entries) {
      if (key == "write_failed") value = Value::of_bool(true);
    }
    end.add("error", Value::of_string(*failure));
  }
  return end;
}

FlightDump dump_locked(Writer& w, const std::string& trigger, int64_t now_ns) {
  if (!w.window) throw std::logic_error("not a flight recorder");
  drain_all(w, false, false);  // what the rings hold now belongs in the window
  bool capped = false;
  const std::vector<Record> records = w.window->whole_calls(now_ns, &capped);
  int64_t calls = 0, first_call_ns = 0;
  for (const Record& r : records) {
    if (r.phase != static_cast<uint8_t>(Phase::kCall)) continue;
    first_call_ns = calls++ == 0 ? r.begin_ns : std::min(first_call_ns, r.begin_ns);
  }
  const WriterSettings& s = w.settings;
  // The window the dump really covers: as asked, or from its oldest call where the cap cut it; rounded
  // once, so that the file and the line say the same.
  double held_s = capped ? (calls ? static_cast<double>(now_ns - first_call_ns) / 1e9 : 0.0) : s.flight.window_s;
  held_s = rounded(held_s, 6);
  FlightDump done;
  done.number = ++w.dumps;
  done.calls = calls;
  done.held_s = held_s;
  done.capped = capped;
  Value flight = Value::dict()
                     .add("window_s", Value::of_double(s.flight.window_s))
                     .add("held_s", Value::of_double(held_s))
                     .add("capped", Value::of_bool(capped))
                     .add("dump", Value::of_int(done.number))
                     .add("trigger", Value::of_string(trigger))
                     .add("calls", Value::of_int(calls))
                     .add("records_let_go", Value::of_int(w.window->records_let_go()))
                     .add("max_records", Value::of_int(w.window->max_records()));
  TraceFileOptions options = s.file;
  options.path = before_suffix(s.file.path, "dump" + std::to_string(done.number));
  options.lazy = false;
  NameSource names{[] { return EngineRegistry::instance().names(); },
                   [] { return layers::LayerNames::instance().names(); }};
  std::unique_ptr<TraceFormat> trace = make_format(s.format, format_start(s, options, std::move(names), &flight));
  if (!trace) throw std::logic_error("no trace format " + s.format);  // start_writer took it
  // In pieces (write_pieces), so that a large window needs no formatting buffer of its own size.
  write_pieces(*trace, records.data(), records.size());
  TraceFile& file = trace->file();
  Value end = session_end(w, now_ns);
  end.add("flight", std::move(flight));
  end = with_file_end(std::move(end), file, options.path, nullptr);
  trace->finish(TraceEnd{trace->encode_metadata(end), now_ns});
  done.paths = file.paths();
  done.events_not_written = file.events_not_written();
  w.dump_paths.insert(w.dump_paths.end(), done.paths.begin(), done.paths.end());
  w.dump_events_written += file.events_written();
  w.dump_events_not_written += file.events_not_written();
  done.line = flight_line(trigger, done.paths.front(), calls, s.flight.window_s, held_s, capped,
                          s.flight.memory_bytes);
  return done;
}

// SIGUSR1's dump, on the writer thread (its lock held): the line, or why there is no dump, on stderr.
void dump_on_signal(Writer& w) {
  const std::string trigger = "SIGUSR1";
  try {
    warn_line(dump_locked(w, trigger, now_ns()).line);
  } catch (const WriteFailed& e) {
    warn_line("flight recorder (" + trigger + "): could not write the dump (cannot write the flight recorder's dump: " +
              e.reason + ")");
  } catch (const std::exception& e) {
    warn_line("flight recorder (" + trigger + "): could not write the dump (" + std::string(e.what()) + ")");
  }
}

void on_sigusr1(int) { g_dump_asked.store(true); }

// Whether hold_writer() holds the drains, read with the writer's lock held: a hold that began after this thread
// woke is seen here (hold_writer() sets the flag, then waits for the batch under way), never drained through.
bool held_now(Writer& w) {
  std::lock_guard<std::mutex> lock(w.wake_mutex_);
  return w.held;
}

void run(Writer* w) {
  // The serving threads first: when one wakes (a GIL hand-off, say) while this thread formats, the kernel gives it
  // the core rather than queue it behind this batch. At normal priority, with the same share: the thread never
  // starves where a lowered priority would (docs/architecture.md, the drain).
  ask_for_writer_slice();
  int64_t ticks = 0;
  while (true) {
    bool held;
    {
      std::unique_lock<std::mutex> lock(w->wake_mutex_);
      w->wake.wait_for(lock, std::chrono::milliseconds(w->interval_ms), [w] { return w->stopping; });
      if (w->stopping) return;
      ++w->wakes;
      held = w->held;
    }
    if (held) continue;
    {
      WriterLock lock(*w);
      if (!held_now(*w)) {
        drain_all(*w, false, false);
        if (w->window && g_dump_asked.exchange(false)) dump_on_signal(*w);
      }
    }
    if (++ticks % kSweepEvery == 0) EngineRegistry::instance().sweep();  // memory of engines that died reused
  }
}

}  // namespace

void start_writer(const WriterSettings& settings) {
  Writer& w = writer();
  WriterLock lock(w);
  if (w.thread != nullptr) throw std::logic_error("a native trace writer is already running");
  NameSource names{[] { return EngineRegistry::instance().names(); },
                   [] { return layers::LayerNames::instance().names(); }};
  w.window.reset();
  w.trace.reset();
  w.settings = settings;
  w.dumps = 0;
  w.dump_paths.clear();
  w.dump_events_written = w.dump_events_not_written = 0;
  w.layers_calls = -1;
  // The session's format (each opens the file unless lazy, and may throw); a flight recorder's window
  // instead (its dumps make their own files).
  if (settings.flight.on) {
    const auto window_ns = static_cast<int64_t>(settings.flight.window_s * 1e9);
    w.window = std::make_unique<FlightWindow>(window_ns, settings.flight.memory_bytes /
                                                             static_cast<int64_t>(sizeof(Record)));
    g_dump_asked.store(false);  // a signal before this session is not its
  } else {
    w.trace = make_format(settings.format, format_start(settings, settings.file, std::move(names), nullptr));
    if (!w.trace) throw std::invalid_argument("no trace format " + settings.format);
  }
  w.records_drained = 0;
  w.failed = false;
  w.error.clear();
  w.interval_ms = settings.interval_ms > 0 ? settings.interval_ms : 50;
  {
    std::lock_guard<std::mutex> wake_lock(w.wake_mutex_);
    w.stopping = false;
    w.held = false;
    w.wakes = 0;
  }
  // The thread is made with every signal blocked (it inherits the mask): a SIGINT or SIGTERM sent to the
  // process then goes to one of the program's threads, whose handlers expect it, never to this one.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    w.thread = new std::thread(run, &w);
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    throw;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  pthread_setname_np(w.thread->native_handle(), "trt_trace-write");
}

void stop_writer() {
  Writer& w = writer();
  std::thread* thread;
  {
    std::lock_guard<std::mutex> lock(w.wake_mutex_);
    w.stopping = true;
    thread = w.thread;
    w.thread = nullptr;
  }
  w.wake.notify_all();
  if (thread != nullptr) {
    if (thread->get_id() != std::this_thread::get_id()) thread->join();
    delete thread;
  }
  WriterLock lock(w);
  drain_all(w, true, false);
  // A SIGUSR1 the thread had no wake left to see (the program ended right after it): its dump, now.
  if (w.window && g_dump_asked.exchange(false)) dump_on_signal(w);
}

SessionEnd end_session(bool exit_dump) {
  Writer& w = writer();
  WriterLock lock(w);
  SessionEnd out;
  if (w.window) {  // flight mode: no file of its own; the exit dump where asked
    if (!exit_dump) return out;
    try {
      out.exit_dump = dump_locked(w, "exit", now_ns());
    } catch (const WriteFailed& e) {
      out.failure = e.reason;
    } catch (const std::exception& e) {
      out.failure = e.what();
    }
    return out;
  }
  if (!w.trace) return out;
  const std::string& path = w.settings.file.path;
  if (!w.failed) {
    const int64_t end_ns = now_ns();
    try {
      w.trace->finish(TraceEnd{
          w.trace->encode_metadata(with_file_end(session_end(w, end_ns), w.trace->file(), path, nullptr)), end_ns});
      return out;
    } catch (const WriteFailed& e) {  // the disk filled at the end
      out.failure = e.reason;
    } catch (const std::exception& e) {
      out.failure = e.what();
    }
  } else {
    out.failure = w.error;
  }
  // Cut back to the last whole batch and ended "write failed", where that can still be written.
  const int64_t end_ns = now_ns();
  out.end_written = w.trace->finish_after_failure(
      TraceEnd{w.trace->encode_metadata(with_file_end(session_end(w, end_ns), w.trace->file(), path, &out.failure)),
               end_ns});
  return out;
}

int64_t drain_writer_now(bool wait_gpu, bool discard) {
  return with_writer([&](Writer& w) { return drain_all(w, wait_gpu, discard); });
}

void hold_writer(bool held) {
  Writer& w = writer();
  {
    std::lock_guard<std::mutex> lock(w.wake_mutex_);
    w.held = held;
  }
  if (held) {
    std::lock_guard<std::mutex> batch_done(w.mutex_);  // a batch under way ends first
  }
}

WriterStatus writer_status() {
  Writer& w = writer();
  WriterStatus s;
  {
    std::lock_guard<std::mutex> lock(w.status_mutex_);
    s = w.published;
  }
  std::lock_guard<std::mutex> lock(w.wake_mutex_);
  s.wakes = w.wakes;
  s.running = w.thread != nullptr;
  return s;
}

FlightDump dump_flight(const std::string& trigger, int64_t now_ns) {
  return with_writer([&](Writer& w) { return dump_locked(w, trigger, now_ns); });
}

void report_layers(int64_t calls_per_engine) {
  with_writer([&](Writer& w) {
    if (calls_per_engine > 0) w.layers_calls = calls_per_engine;  // on at some point: the end record says so
    else if (w.layers_calls >= 0) w.layers_calls = 0;
  });
}

void flight_add(const Record* recs, size_t n, int64_t now_ns) {
  with_writer([&](Writer& w) {
    if (!w.window) throw std::logic_error("not a flight recorder");
    w.records_drained += static_cast<int64_t>(n);
    w.window->add(recs, n, now_ns);
  });
}

bool take_sigusr1() {
  struct sigaction action {};
  action.sa_handler = on_sigusr1;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // the program's blocking calls go on as if nothing came
  return sigaction(SIGUSR1, &action, nullptr) == 0;
}

std::string flight_line(const std::string& trigger, const std::string& path, int64_t calls, double window_s,
                        double held_s, bool capped, int64_t memory_bytes) {
  const std::string count = std::to_string(calls) + " call" + (calls == 1 ? "" : "s");
  const std::string head = "flight recorder (" + trigger + "): ";
  if (!capped) return head + "last " + printed("%g", window_s) + " s written to " + path + " (" + count + ")";
  return head + printed("%.3g", held_s) + " s of the last " + printed("%g", window_s) + " s written to " + path +
         " (" + count + "; the memory cap of " + mib_text(memory_bytes) +
         " MiB let older calls go: raise TRT_TRACE_FLIGHT_MAX_MB or flight(max_bytes=) for the whole window)";
}

void abandon_writer() {
  with_writer([](Writer& w) {
    if (w.trace) w.trace->file().abandon();
  });
}

}  // namespace session
}  // namespace trt_trace
