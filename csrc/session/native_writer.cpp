#include "session/native_writer.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>

#include "drainer/drain.h"
#include "engines/engine_registry.h"
#include "layers/layer_names.h"
#include "session/chrome_json_trace.h"
#include "session/perfetto_trace.h"

namespace trt_trace {
namespace session {
namespace {

constexpr size_t kBatchRecords = 1 << 14;  // 640 KiB per drain: the writer's memory stays a few MiB
constexpr int64_t kSweepEvery = 20;        // drains between sweeps of dead engines

struct Writer {
  std::mutex mutex_;  // the trace and the counters (held for a whole batch)
  std::unique_ptr<TraceFormat> trace;
  std::vector<Record> buffer;
  int64_t records_drained = 0;
  int64_t interval_ms = 50;
  bool failed = false;
  std::string error;

  std::mutex wake_mutex_;  // stop / held flags
  std::condition_variable wake;
  bool stopping = false;
  bool held = false;
  std::thread* thread = nullptr;  // leaked in a forked child (the thread is not there)
  int64_t wakes = 0;
};

Writer* g_writer = nullptr;  // never destroyed: the thread may outlive static destruction

void after_fork_in_child() {
  Writer& c = *g_writer;
  new (&c.mutex_) std::mutex();
  new (&c.wake_mutex_) std::mutex();
  new (&c.wake) std::condition_variable();
  c.thread = nullptr;  // the parent's thread: not here, never joined
  c.stopping = false;
  c.held = false;
  if (c.trace) c.trace->file().abandon();
  (void)c.trace.release();  // the parent's state, possibly mid-batch: never touched again
}

Writer& writer() {
  static Writer* w = [] {
    g_writer = new Writer();
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return g_writer;
  }();
  return *w;
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

// Drains until the rings are empty, writing each batch (under the writer's lock).
int64_t drain_all(Writer& w, bool wait_gpu, bool discard) {
  if (w.buffer.empty()) w.buffer.resize(kBatchRecords);
  int64_t total = 0;
  if (!discard && (w.failed || !w.trace)) return 0;  // after a failure the records stay in the rings
  while (true) {
    const size_t n = drainer::drain_batch(w.buffer.data(), w.buffer.size(), wait_gpu);
    if (n == 0) break;
    total += static_cast<int64_t>(n);
    if (discard) continue;
    w.records_drained += static_cast<int64_t>(n);  // handed over, whether or not the write then succeeds
    try {
      w.trace->write(w.buffer.data(), n);
    } catch (const WriteFailed& e) {
      w.failed = true;
      w.error = e.reason;
      warn_line("could not write the trace (" + e.shown + "); tracing continues in the table only");
      break;
    } catch (const std::exception& e) {  // out of memory
      w.failed = true;
      w.error = e.what();
      warn_line("could not write the trace (" + w.error + "); tracing continues in the table only");
      break;
    }
  }
  return total;
}

void run(Writer* w) {
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
      std::lock_guard<std::mutex> lock(w->mutex_);
      drain_all(*w, false, false);
    }
    if (++ticks % kSweepEvery == 0) EngineRegistry::instance().sweep();  // memory of engines that died reused
  }
}

}  // namespace

void start_writer(const WriterSettings& settings) {
  Writer& w = writer();
  std::lock_guard<std::mutex> lock(w.mutex_);
  if (w.thread != nullptr) throw std::logic_error("a native trace writer is already running");
  NameSource names{[] { return EngineRegistry::instance().names(); },
                   [] { return layers::LayerNames::instance().names(); }};
  // The session's format (each opens the file unless lazy, and may throw).
  if (settings.format == TraceKind::kPerfetto) {
    PerfettoStart start;
    start.pid = settings.pid;
    start.process_name = settings.process_name;
    start.start_annotations = settings.head;
    start.start_ns = settings.start_ns;
    start.flows = settings.gpu_flows;
    w.trace = std::make_unique<PerfettoTrace>(settings.file, std::move(start), std::move(names));
  } else {
    w.trace = std::make_unique<ChromeJsonTrace>(settings.file, settings.head, settings.pid, settings.gpu_flows,
                                                std::move(names));
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
  std::lock_guard<std::mutex> lock(w.mutex_);
  drain_all(w, true, false);
}

bool end_writer(const TraceEnd& end, bool after_failure) {
  Writer& w = writer();
  std::lock_guard<std::mutex> lock(w.mutex_);
  if (!w.trace) return false;
  if (after_failure) return w.trace->finish_after_failure(end);
  w.trace->finish(end);  // throws WriteFailed (the disk filled at the end)
  return w.trace->file().created();
}

int64_t drain_writer_now(bool wait_gpu, bool discard) {
  Writer& w = writer();
  std::lock_guard<std::mutex> lock(w.mutex_);
  return drain_all(w, wait_gpu, discard);
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
    std::lock_guard<std::mutex> lock(w.wake_mutex_);
    s.wakes = w.wakes;
    s.running = w.thread != nullptr;
  }
  std::lock_guard<std::mutex> lock(w.mutex_);
  s.records_drained = w.records_drained;
  s.failed = w.failed;
  s.error = w.error;
  if (w.trace) {
    const TraceFile& f = w.trace->file();
    s.events_written = f.events_written();
    s.events_not_written = f.events_not_written();
    s.bytes_written = f.bytes_written();
    s.max_bytes = f.max_bytes();
    s.created = f.created();
    s.in_use = f.in_use();
    s.paths = f.paths();
  }
  return s;
}

void abandon_writer() {
  Writer& w = writer();
  std::lock_guard<std::mutex> lock(w.mutex_);
  if (w.trace) w.trace->file().abandon();
}

}  // namespace session
}  // namespace trt_trace
