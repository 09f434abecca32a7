#include "metrics/metrics_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "common/leaked.h"
#include "engines/engine_registry.h"
#include "metrics/exposition_text.h"
#include "metrics/http_exchange.h"

namespace trt_trace {
namespace metrics {
namespace {

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string error_text(int err) {
  char buf[256];
  return strerror_r(err, buf, sizeof(buf));  // the GNU strerror_r: returns the text
}

// One line on stderr in one write(2), from any thread, with no Python and no stdio buffer.
void write_line(const std::string& line) {
  const std::string text = "trt_trace: " + line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

struct Listener {
  int fd = -1;
  Status status;
  int error = 0;
  std::string message;
};

// socket, bind, listen on the first address getaddrinfo gives for addr:port (as prometheus_client's
// server did), with SO_REUSEADDR (as Python's HTTP servers set it).
Listener bind_listener(const std::string& addr, int port) {
  Listener out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int gai = getaddrinfo(addr.empty() ? nullptr : addr.c_str(), service.c_str(), &hints, &found);
  if (gai != 0) {
    out.error = gai == EAI_SYSTEM ? errno : gai;
    out.message = gai == EAI_SYSTEM ? error_text(errno) : gai_strerror(gai);
    return out;
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 128) != 0) err = errno;
  }
  freeaddrinfo(found);
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  if (err == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len) != 0) err = errno;
  if (err != 0) {
    if (fd >= 0) ::close(fd);
    out.error = err;
    out.message = error_text(err);
    return out;
  }
  char host[INET6_ADDRSTRLEN] = "";
  if (bound.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&bound);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
    out.status.port = ntohs(a->sin6_port);
  } else {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&bound);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
    out.status.port = ntohs(a->sin_port);
  }
  out.fd = fd;
  out.status.state = ServerState::kServing;
  out.status.host = host;
  return out;
}

std::string url_of(const Status& s) {
  const bool v6 = s.host.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + s.host + "]" : s.host) + ":" + std::to_string(s.port) + "/metrics";
}

// A client's exchange, owned by the server thread.
struct Connection {
  enum Phase { kReading, kWriting, kDraining };
  int slot = -1;  // its place in Server::open_fds_
  int fd = -1;
  Phase phase = kReading;
  std::string in;
  std::string out;
  size_t sent = 0;
  int64_t deadline_ms = 0;
};

class Server : public Leaked<Server> {
 public:
  ServeOutcome serve_now(const std::string& addr, int port);
  void serve_from_first_engine(const std::string& addr, int port, bool quiet);
  Status status() {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }
  void stop();

  // EngineRegistry's first-engine listener: the hot path's one-time signal (an atomic store and a
  // write to the eventfd; no lock, no allocation).
  static void on_first_engine() noexcept {
    Server& s = instance();
    s.engine_ran_.store(true);
    s.wake();
  }

 private:
  friend class Leaked<Server>;
  static Server* create();  // with its fork handlers
  void wake() noexcept {
    const int fd = wake_fd_.load();
    if (fd >= 0) {
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof(one));
    }
  }
  bool start_thread_locked();  // lifecycle_mutex_ held
  void run() noexcept;
  void start_pending() noexcept;
  void accept_all(int listen_fd, std::vector<Connection>& conns) noexcept;
  bool step(Connection& c, short revents) noexcept;  // false: done, close it
  void close_connection(Connection& c) noexcept;
  void close_all(std::vector<Connection>& conns) noexcept;
  void after_fork_in_child() noexcept;

  std::mutex lifecycle_mutex_;  // one serve or stop at a time (callers only, never the server thread)
  std::mutex mutex_;            // the fields below; the server thread takes it briefly, never over I/O
  Status status_;
  int listen_fd_ = -1;
  std::string pending_addr_;  // the start waiting for the first engine call
  int pending_port_ = 0;
  bool pending_quiet_ = false;
  bool stop_requested_ = false;
  std::thread* thread_ = nullptr;
  bool exit_handler_set_ = false;
  std::atomic<bool> engine_ran_{false};
  std::atomic<int> wake_fd_{-1};
  // The connections' sockets, for a forked child to close (set and cleared under mutex_).
  std::array<int, kMaxConnections> open_fds_;
};

Server* Server::create() {
  auto* s = new Server();
  s->open_fds_.fill(-1);
  // A forked child has no server thread: it must not inherit a lock that thread held, nor keep the
  // parent's listening socket and connections open (a client would wait for the child to close).
  pthread_atfork([] { Server::instance().mutex_.lock(); }, [] { Server::instance().mutex_.unlock(); },
                 [] { Server::instance().after_fork_in_child(); });
  return s;
}

void Server::after_fork_in_child() noexcept {
  mutex_.unlock();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  for (int& fd : open_fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  const int wake_fd = wake_fd_.exchange(-1);
  if (wake_fd >= 0) ::close(wake_fd);
  status_ = Status{};
  stop_requested_ = false;
  thread_ = nullptr;  // the parent's thread: not this process's to join (the object is left behind)
  new (&lifecycle_mutex_) std::mutex();  // a caller in another thread of the parent may have held it
}

bool Server::start_thread_locked() {
  if (thread_ != nullptr) return true;
  if (wake_fd_.load() < 0) {
    const int fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) return false;
    wake_fd_.store(fd);
  }
  // The thread takes no signals: a process-directed signal goes to a thread that handles it.
  sigset_t all, before;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &before);
  try {
    thread_ = new std::thread([this] { run(); });
  } catch (...) {
    thread_ = nullptr;
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  if (thread_ == nullptr) return false;
  pthread_setname_np(thread_->native_handle(), "trt_trace-http");
  if (!exit_handler_set_) {
    // Registered after this library's statics were made, so it runs before their destructors.
    exit_handler_set_ = std::atexit([] { Server::instance().stop(); }) == 0;
  }
  return true;
}

ServeOutcome Server::serve_now(const std::string& addr, int port) {
  std::lock_guard<std::mutex> life(lifecycle_mutex_);
  ServeOutcome out;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == ServerState::kServing) {
      out.status = status_;
      return out;
    }
  }
  Listener l = bind_listener(addr, port);
  if (l.fd < 0) {
    out.error = l.error;
    out.message = l.message;
    return out;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == ServerState::kServing) {  // the thread's own start won the race
      ::close(l.fd);
      out.status = status_;
      return out;
    }
    listen_fd_ = l.fd;
    status_ = l.status;
  }
  if (!start_thread_locked()) {
    std::lock_guard<std::mutex> lock(mutex_);
    ::close(listen_fd_);
    listen_fd_ = -1;
    status_ = Status{};
    out.error = EAGAIN;
    out.message = "no thread to serve from";
    return out;
  }
  wake();
  out.status = l.status;
  return out;
}

void Server::serve_from_first_engine(const std::string& addr, int port, bool quiet) {
  std::lock_guard<std::mutex> life(lifecycle_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state != ServerState::kOff) return;
    pending_addr_ = addr;
    pending_port_ = port;
    pending_quiet_ = quiet;
    status_.state = ServerState::kWaiting;
  }
  EngineRegistry::set_first_engine_listener(&Server::on_first_engine);
  // An engine that ran before the listener was set (names()[0] is no engine).
  if (EngineRegistry::instance().names().size() > 1) engine_ran_.store(true);
  if (!start_thread_locked()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      status_ = Status{};
    }
    write_line("TRT_TRACE_METRICS_PORT=" + std::to_string(port) + ": cannot serve metrics (no thread to serve "
               "from); running without metrics");
    return;
  }
  wake();
}

void Server::stop() {
  std::lock_guard<std::mutex> life(lifecycle_mutex_);
  std::thread* t;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    t = thread_;
    if (t == nullptr) {
      status_ = Status{};
      return;
    }
    stop_requested_ = true;
  }
  wake();
  if (t->get_id() != std::this_thread::get_id()) t->join();  // (exit() is never called from the thread)
  std::lock_guard<std::mutex> lock(mutex_);
  delete t;
  thread_ = nullptr;
  stop_requested_ = false;
  status_ = Status{};
}

// The deferred start, on the server thread, once an engine has run.
void Server::start_pending() noexcept {
  std::string addr;
  int port;
  bool quiet;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state != ServerState::kWaiting || !engine_ran_.load()) return;
    addr = pending_addr_;
    port = pending_port_;
    quiet = pending_quiet_;
  }
  try {
    Listener l = bind_listener(addr, port);
    bool taken = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (status_.state == ServerState::kWaiting) {
        if (l.fd >= 0) {
          listen_fd_ = l.fd;
          status_ = l.status;
          taken = true;
        } else {
          status_ = Status{};
        }
      }
    }
    if (l.fd >= 0 && !taken) {
      ::close(l.fd);  // serve_now bound meanwhile: its socket serves
    } else if (taken) {
      if (!quiet) write_line("metrics at " + url_of(l.status));
    } else {
      write_line("TRT_TRACE_METRICS_PORT=" + std::to_string(port) + ": cannot serve metrics on " + addr + ":" +
                 std::to_string(port) + " (" + l.message + "); running without metrics");
    }
  } catch (...) {  // out of memory: no metrics, the program runs on
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_.state == ServerState::kWaiting) status_ = Status{};
  }
}

void Server::run() noexcept {
  std::vector<Connection> conns;
  std::vector<pollfd> fds;
  try {
    conns.reserve(kMaxConnections);
    fds.reserve(kMaxConnections + 2);
  } catch (...) {
    return;
  }
  for (;;) {
    start_pending();  // before the stop: a start pending at exit still binds and says where
    int listen_fd;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stop_requested_) break;
      listen_fd = listen_fd_;
    }
    const int64_t now = now_ms();
    for (auto& c : conns) {
      if (now >= c.deadline_ms) close_connection(c);
    }
    conns.erase(std::remove_if(conns.begin(), conns.end(), [](const Connection& c) { return c.fd < 0; }),
                conns.end());
    fds.clear();
    fds.push_back({wake_fd_.load(), POLLIN, 0});
    const bool accepting = listen_fd >= 0 && conns.size() < static_cast<size_t>(kMaxConnections);
    fds.push_back({accepting ? listen_fd : -1, POLLIN, 0});  // a negative fd is ignored by poll
    int timeout = -1;
    for (const auto& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.phase == Connection::kWriting ? POLLOUT : POLLIN), 0});
      const int left = static_cast<int>(std::max<int64_t>(0, c.deadline_ms - now));
      timeout = timeout < 0 ? left : std::min(timeout, left);
    }
    const int ready = ::poll(fds.data(), fds.size(), timeout);
    if (ready < 0 && errno != EINTR) break;  // cannot happen with valid fds; never spin
    if (ready <= 0) continue;
    if (fds[0].revents != 0) {
      uint64_t count;
      [[maybe_unused]] const ssize_t n = ::read(fds[0].fd, &count, sizeof(count));
    }
    for (size_t i = 0; i < conns.size(); ++i) {
      const short revents = fds[i + 2].revents;
      if (revents != 0 && !step(conns[i], revents)) close_connection(conns[i]);
    }
    if (fds[1].revents != 0) accept_all(listen_fd, conns);
  }
  close_all(conns);
}

void Server::accept_all(int listen_fd, std::vector<Connection>& conns) noexcept {
  while (conns.size() < static_cast<size_t>(kMaxConnections)) {
    std::lock_guard<std::mutex> lock(mutex_);  // accept and record as one, as far as a fork can see
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN (none left), or a connection reset before it was taken
    const auto slot = std::find(open_fds_.begin(), open_fds_.end(), -1);
    *slot = fd;  // a free slot exists: at most kMaxConnections are open
    Connection c;
    c.slot = static_cast<int>(slot - open_fds_.begin());
    c.fd = fd;
    c.deadline_ms = now_ms() + kExchangeMs;
    conns.push_back(std::move(c));
  }
}

bool Server::step(Connection& c, short revents) noexcept {
  try {
    if (c.phase == Connection::kReading || c.phase == Connection::kDraining) {
      char buf[4096];
      const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n == 0) return false;  // the client closed
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      if (c.phase == Connection::kDraining) return true;  // what the client still sends is dropped
      c.in.append(buf, static_cast<size_t>(std::min<ssize_t>(n, kMaxRequestBytes - c.in.size())));
      const RequestState state = request_state(c.in);
      if (state == RequestState::kIncomplete) return true;
      c.out = response_to(c.in, state, [] {
        std::string text;
        append_exposition_text(text, live_counters());
        return text;
      });
      c.in.clear();
      c.phase = Connection::kWriting;
    } else if ((revents & (POLLERR | POLLHUP)) != 0 && (revents & POLLOUT) == 0) {
      return false;
    }
    while (c.sent < c.out.size()) {
      const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
      c.sent += static_cast<size_t>(n);
    }
    // All sent: half-close and let the client close first, so that data it sent after the request
    // never turns our close into a reset that could cut the response short.
    ::shutdown(c.fd, SHUT_WR);
    c.out.clear();
    c.phase = Connection::kDraining;
    c.deadline_ms = std::min(c.deadline_ms, now_ms() + kLingerMs);
    return true;
  } catch (...) {
    return false;  // out of memory: this client gets no answer, the others do
  }
}

void Server::close_connection(Connection& c) noexcept {
  if (c.fd < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  open_fds_[c.slot] = -1;
  ::close(c.fd);
  c.fd = -1;
}

void Server::close_all(std::vector<Connection>& conns) noexcept {
  for (auto& c : conns) close_connection(c);
  conns.clear();
  std::lock_guard<std::mutex> lock(mutex_);
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
  if (!stop_requested_) status_ = Status{};  // the loop failed (poll's ENOMEM): no longer serving
}

}  // namespace

ServeOutcome serve_now(const std::string& addr, int port) { return Server::instance().serve_now(addr, port); }

void serve_from_first_engine(const std::string& addr, int port, bool quiet) {
  Server::instance().serve_from_first_engine(addr, port, quiet);
}

Status status() { return Server::instance().status(); }

void stop() { Server::instance().stop(); }

}  // namespace metrics
}  // namespace trt_trace
