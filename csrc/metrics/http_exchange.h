// One HTTP/1.1 exchange of the metrics endpoint, without sockets (metrics_server.cpp moves the
// bytes): when a request is whole, and the response to it. GET and HEAD of /metrics (a query is
// ignored) get the text; another path 404, another method 405, a request that is not HTTP/1.x
// 400, headers past kMaxRequestBytes 431. Every response closes the connection (no keep-alive).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace trt_trace {
namespace metrics {

// A scrape's request is a line and a few headers; more than this is refused.
constexpr size_t kMaxRequestBytes = 8192;

enum class RequestState { kIncomplete, kComplete, kTooLarge };

// Whether the bytes received so far hold a whole request head (up to the blank line).
RequestState request_state(std::string_view received);

// Prometheus' text format, version 0.0.4 (the content type prometheus_client sent to a client that
// did not ask for OpenMetrics).
inline constexpr std::string_view kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

// The whole response (status line, headers and body) to a request whose state is kComplete or
// kTooLarge. metrics_text is called only where the answer carries the metrics (GET or HEAD /metrics).
std::string response_to(std::string_view received, RequestState state,
                        const std::function<std::string()>& metrics_text);

}  // namespace metrics
}  // namespace trt_trace
