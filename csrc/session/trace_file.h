// One trace on disk, streamed by the native writer: the file and its numbered parts, written with
// POSIX calls from the writer's thread (no Python, no buffering). What trt_trace/io/writers/trace_file.py
// does for the Python writers (flight dumps and the Perfetto format), the same way:
//
// * Lazy creation: with lazy the file is created at the first engine event (processes that never
//   run an engine leave no empty trace); without it, at once, so that a path that cannot be written
//   fails at start.
// * Parts: a part starts with `part_start` and ends with `part_end`; past `max_bytes` the trace
//   continues in a numbered part (trace.1.json, ...: each complete, ending with an end record
//   {"ended": "split", "next_part": ...} from `end_event`) or stops writing and counts what it left out.
// * Unbuffered, whole writes: a killed process leaves every batch written so far on disk.
// * After a failed write the part is cut back to its last whole piece and, where that works, ended
//   with the closing the caller gives (finish_after_failure).
// * One writer per path (many processes on one TRT_TRACE_OUT): the writer holds an exclusive flock(2)
//   on its first file for its life; a process that finds the file locked by another writes
//   `<stem>.<pid><suffix>` instead (and says so: `in_use`). The lock belongs to the open file
//   description: a forked child that inherited the descriptors closes them without writing
//   (abandon), which leaves the parent's lock as it was; O_CLOEXEC keeps exec'd children out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace trt_trace {
namespace session {

// A write (or open) that failed: `reason` is the OS's words (strerror), `shown` the one-line form
// ("[Errno 28] No space left on device", as Python shows an OSError).
struct WriteFailed : std::runtime_error {
  WriteFailed(std::string reason_, std::string shown_)
      : std::runtime_error(shown_), reason(std::move(reason_)), shown(std::move(shown_)) {}
  static WriteFailed from_errno(int err);
  std::string reason;
  std::string shown;
};

// trace.json, "1" -> trace.1.json: the suffix kept; a name without one gets `.tag` appended.
std::string before_suffix(const std::string& path, const std::string& tag);

struct TraceFileOptions {
  std::string path;
  bool lazy = false;
  int64_t max_bytes = 0;  // 0: no limit
  bool split = true;      // past the limit: numbered parts (true) or stop writing (false)
  int64_t pid = 0;        // for the in-use fallback name
};

class TraceFile {
 public:
  using PartStart = std::function<std::string(int64_t first_ns)>;
  using EndEvent = std::function<std::string(const std::string& next_part_name, int64_t part, int64_t events)>;

  // Opens the file now unless lazy (throws WriteFailed).
  TraceFile(TraceFileOptions options, PartStart part_start, std::string part_end, std::string separator,
            EndEvent end_event);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  // Appends a batch: the descriptions of the tracks it uses for the first time, then its `count`
  // events (`body`), the earliest at first_ns. A part that starts here starts with every track already.
  void write(const std::string& new_tracks, const char* body, size_t body_len, int64_t count, int64_t first_ns);
  // Ends the trace with `closing` (past any size limit); nothing if lazy and nothing came.
  void finish(const std::string& closing, int64_t first_ns, int64_t count = 0);
  // After a failed write: cuts the part back to its last whole piece and ends it with `closing`;
  // false where that cannot be done (the file then has no end).
  bool finish_after_failure(const std::string& closing);
  // Closes the descriptors without a write (a forked child's copy).
  void abandon() noexcept;

  bool created() const { return created_; }
  const std::vector<std::string>& paths() const { return paths_; }
  const std::string& path() const { return path_; }
  const std::string& in_use() const { return in_use_; }  // the path another process held ("" if none)
  int64_t events_written() const { return events_written_; }
  int64_t events_not_written() const { return events_not_written_; }
  int64_t bytes_written() const { return bytes_written_; }
  int64_t max_bytes() const { return options_.max_bytes; }

 private:
  void put(const char* data, size_t n);
  void put(const std::string& s) { put(s.data(), s.size()); }
  void piece(const char* data, size_t n);
  void piece(const std::string& s) { piece(s.data(), s.size()); }
  void start(int64_t first_ns);
  void end_part();
  void open_first();
  int open_part(const std::string& path, bool claim);  // -1 with errno EWOULDBLOCK: claimed by another process

  TraceFileOptions options_;
  PartStart part_start_;
  std::string part_end_, separator_;
  EndEvent end_event_;
  std::string path_;  // the first file (the given path, or the in-use fallback)
  std::string in_use_;
  std::vector<std::string> paths_;
  int fd_ = -1;
  int claim_fd_ = -1;  // holds the lock on the first file for the writer's life
  bool created_ = false;
  bool started_ = false;
  int64_t events_written_ = 0, events_not_written_ = 0, bytes_written_ = 0;
  int64_t part_events_ = 0, part_bytes_ = 0;
  int64_t good_bytes_ = 0;  // the part's length up to its last whole piece (0: its start is not whole)
};

}  // namespace session
}  // namespace trt_trace
