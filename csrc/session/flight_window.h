// The flight recorder's window (TRT_TRACE_FLIGHT, trt_trace.flight()): the last `window_ns` of drained
// records, at most `max_records` of them, kept in memory by the native writer thread in place of a file
// (session/native_writer.h); a dump writes the window's calls through a TraceFormat of the session's format.
//
// Records are kept as the drains hand them over, one chunk per drained batch, in drain order. add() lets
// the oldest chunks go: those that ended before the window (their calls are out of it anyway), then,
// past the memory cap, the oldest whatever their age (counted: records_let_go), the oldest chunk cut
// where one batch alone is larger than the cap. whole_calls() cuts the window exactly: the records of
// every call whose own record (Phase::kCall) began inside it, so a dump never holds part of a call; a
// call whose own record the cap let go leaves its phases out too.
//
// Not thread-safe: the writer's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "common/record.h"

namespace trt_trace {
namespace session {

class FlightWindow {
 public:
  FlightWindow(int64_t window_ns, int64_t max_records);

  // A drained batch, kept (copied) at `now_ns`; the oldest go as the class comment says.
  void add(const Record* recs, size_t n, int64_t now_ns);
  // The records of the calls that began in [now_ns - window_ns, ...], in drain order; *capped: whether
  // the memory cap let records go that ended inside that window (the dump then holds less than asked).
  std::vector<Record> whole_calls(int64_t now_ns, bool* capped);
  // Lets every record go (a forked child's copy is never touched: see native_writer.cpp).
  void clear();

  int64_t window_ns() const { return window_ns_; }
  int64_t max_records() const { return max_records_; }
  int64_t records_held() const { return records_; }
  int64_t records_let_go() const { return records_let_go_; }

 private:
  struct Chunk {
    std::vector<Record> records;
    int64_t last_end_ns;  // the latest end of its records
  };
  void trim(int64_t now_ns);
  void let_go(const Record* recs, size_t n);

  int64_t window_ns_;
  int64_t max_records_;
  std::deque<Chunk> chunks_;
  int64_t records_ = 0;
  int64_t records_let_go_ = 0;
  int64_t let_go_until_ns_ = 0;  // the latest end of a record the memory cap let go
};

}  // namespace session
}  // namespace trt_trace
