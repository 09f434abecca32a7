#include "metrics/http_exchange.h"

namespace trt_trace {
namespace metrics {
namespace {

std::string response(std::string_view status, std::string_view content_type, const std::string& body, bool head,
                     std::string_view extra_headers = {}) {
  std::string out = "HTTP/1.1 ";
  out += status;
  out += "\r\nContent-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(body.size());
  out += "\r\nConnection: close\r\n";
  out += extra_headers;
  out += "\r\n";
  if (!head) out += body;
  return out;
}

std::string plain_error(std::string_view status, bool head, std::string_view extra_headers = {}) {
  return response(status, "text/plain; charset=utf-8", std::string(status) + "\n", head, extra_headers);
}

}  // namespace

RequestState request_state(std::string_view received) {
  // The head ends at the first blank line; bare newlines are taken as well as CRLF.
  const bool whole = received.find("\r\n\r\n") != std::string_view::npos ||
                     received.find("\n\n") != std::string_view::npos;
  if (whole) return RequestState::kComplete;
  return received.size() >= kMaxRequestBytes ? RequestState::kTooLarge : RequestState::kIncomplete;
}

std::string response_to(std::string_view received, RequestState state,
                        const std::function<std::string()>& metrics_text) {
  if (state == RequestState::kTooLarge) return plain_error("431 Request Header Fields Too Large", false);
  std::string_view line = received.substr(0, received.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  // METHOD SP TARGET SP HTTP/1.x
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return plain_error("400 Bad Request", false);
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return plain_error("400 Bad Request", false);
  const bool head = method == "HEAD";
  if (method != "GET" && !head) return plain_error("405 Method Not Allowed", false, "Allow: GET, HEAD\r\n");
  const std::string_view path = target.substr(0, target.find_first_of("?#"));
  if (path != "/metrics") return plain_error("404 Not Found", head);
  return response("200 OK", kMetricsContentType, metrics_text(), head);
}

}  // namespace metrics
}  // namespace trt_trace
