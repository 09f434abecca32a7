// The metrics endpoint's own thread: a small HTTP/1.1 server on a listening socket that answers
// GET /metrics with the live counters' exposition text (exposition_text.h) and never runs Python,
// so a busy serving loop, a long C++ call or a GIL-holding extension cannot keep a scrape waiting.
//
// One thread, one poll() loop over the listening socket, a wake-up eventfd and at most
// kMaxConnections non-blocking connections: a slow or silent client holds only its own slot, for
// at most kExchangeMs. The thread starts with the first serve and is joined by stop(), which an
// atexit handler runs before static destructors (it never touches Python, so interpreter
// finalization does not concern it); a forked child closes the parent's sockets and serves nothing.
#pragma once

#include <string>

namespace trt_trace {
namespace metrics {

constexpr int kMaxConnections = 64;
constexpr int kExchangeMs = 5000;  // from accept to the last byte of the response
constexpr int kLingerMs = 500;     // after the response: waiting for the client to close first

enum class ServerState : int { kOff = 0, kWaiting = 1, kServing = 2 };

struct Status {
  ServerState state = ServerState::kOff;
  std::string host;  // the numeric address bound, e.g. 127.0.0.1
  int port = 0;      // the port bound (the OS's pick for port 0)
};

struct ServeOutcome {
  Status status;
  int error = 0;        // errno, or a negative getaddrinfo code for an address it could not resolve
  std::string message;  // strerror's or gai_strerror's text
};

// Serves addr:port from now on (port 0: a free port the OS picks). Binds on the calling thread, so a
// busy port or an address that cannot be bound is the caller's to report. Already serving: the
// address served, whatever addr and port say.
ServeOutcome serve_now(const std::string& addr, int port);

// The TRT_TRACE_METRICS_PORT path: serves from this process's first engine call on (at once if an
// engine has run), so that a process that runs no engine (a launcher, a data-loader worker) never
// takes the port. The server thread binds and writes one line to stderr itself: "trt_trace:
// metrics at http://HOST:PORT/metrics" (none when quiet) or why it cannot serve. A start still
// pending when stop() comes is made first, so a short run prints its line too.
void serve_from_first_engine(const std::string& addr, int port, bool quiet);

Status status();

// Stops serving: the socket and every connection closed, the thread joined. Serving can start again.
void stop();

}  // namespace metrics
}  // namespace trt_trace
