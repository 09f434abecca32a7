#include "session/trace_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace trt_trace {
namespace session {

WriteFailed WriteFailed::from_errno(int err) {
  std::string reason = std::strerror(err);
  return WriteFailed(reason, "[Errno " + std::to_string(err) + "] " + reason);
}

std::string before_suffix(const std::string& path, const std::string& tag) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos || path.find('/', dot) != std::string::npos) return path + "." + tag;
  return path.substr(0, dot) + "." + tag + path.substr(dot);
}

namespace {
std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

TraceFile::TraceFile(TraceFileOptions options, PartStart part_start, std::string part_end, std::string separator,
                     EndEvent end_event)
    : options_(std::move(options)),
      part_start_(std::move(part_start)),
      part_end_(std::move(part_end)),
      separator_(std::move(separator)),
      end_event_(std::move(end_event)),
      path_(options_.path) {
  paths_.push_back(path_);
  if (!options_.lazy) open_first();
}

TraceFile::~TraceFile() { abandon(); }

int TraceFile::open_part(const std::string& path, bool claim) {
  // Not O_TRUNC: a file another process writes must not be emptied before its lock is seen.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) throw WriteFailed::from_errno(errno);
  if (claim && ::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      errno = EWOULDBLOCK;
      return -1;
    }
    throw WriteFailed::from_errno(err);
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    throw WriteFailed::from_errno(err);
  }
  return fd;
}

void TraceFile::open_first() {
  int fd = open_part(path_, true);
  if (fd < 0) {  // another process writes this path: this one gets a name of its own
    in_use_ = path_;
    path_ = before_suffix(path_, std::to_string(options_.pid));
    paths_.assign(1, path_);
    fd = open_part(path_, true);
    if (fd < 0) throw WriteFailed("in use by another process", path_ + " is in use by another process");
  }
  fd_ = fd;
  claim_fd_ = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the lock outlives the first part's descriptor
  created_ = true;
}

void TraceFile::put(const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw WriteFailed::from_errno(errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
    bytes_written_ += w;
    part_bytes_ += w;
  }
}

void TraceFile::piece(const char* data, size_t n) {
  if (n == 0) return;
  put(separator_);
  put(data, n);
  good_bytes_ = part_bytes_;
}

void TraceFile::start(int64_t first_ns) {
  if (fd_ < 0) {
    if (!created_) {
      open_first();
    } else {
      fd_ = open_part(paths_.back(), false);
    }
  }
  good_bytes_ = 0;
  put(part_start_(first_ns));
  good_bytes_ = part_bytes_;
  started_ = true;
}

void TraceFile::write(const std::string& new_tracks, const char* body, size_t body_len, int64_t count,
                      int64_t first_ns) {
  if (started_ && options_.max_bytes && part_bytes_ >= options_.max_bytes) {
    if (!options_.split) {
      events_not_written_ += count;
      return;
    }
    const std::string next_part = before_suffix(path_, std::to_string(paths_.size()));
    piece(end_event_(base_name(next_part), static_cast<int64_t>(paths_.size()) - 1, part_events_));
    end_part();
    paths_.push_back(next_part);
  }
  if (!started_) {
    start(first_ns);
  } else {
    piece(new_tracks);
  }
  piece(body, body_len);
  events_written_ += count;
  part_events_ += count;
}

void TraceFile::end_part() {
  put(part_end_);
  ::close(fd_);
  fd_ = -1;
  part_bytes_ = 0;
  part_events_ = 0;
  good_bytes_ = 0;
  started_ = false;
}

void TraceFile::finish(const std::string& closing, int64_t first_ns, int64_t count) {
  if (fd_ < 0) return;  // lazy, and nothing came (or already finished)
  if (!started_) start(first_ns);
  piece(closing);
  events_written_ += count;
  end_part();
  if (claim_fd_ >= 0) {
    ::close(claim_fd_);
    claim_fd_ = -1;
  }
}

bool TraceFile::finish_after_failure(const std::string& closing) {
  const int fd = fd_;
  fd_ = -1;
  if (fd < 0) return false;
  bool ended = false;
  struct stat st {};
  if (good_bytes_ != 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ::ftruncate(fd, good_bytes_) == 0 &&
      ::lseek(fd, good_bytes_, SEEK_SET) == good_bytes_) {
    fd_ = fd;
    try {
      put(separator_);
      put(closing);
      put(part_end_);
      ended = true;
    } catch (const WriteFailed&) {  // no room even for the end: back to the last whole piece, with no end
      if (::ftruncate(fd, good_bytes_) != 0) {
      }
    }
    fd_ = -1;
  }
  ::close(fd);
  if (claim_fd_ >= 0) {
    ::close(claim_fd_);
    claim_fd_ = -1;
  }
  return ended;
}

void TraceFile::abandon() noexcept {
  if (fd_ >= 0) ::close(fd_);
  if (claim_fd_ >= 0) ::close(claim_fd_);
  fd_ = claim_fd_ = -1;
}

}  // namespace session
}  // namespace trt_trace
