#include "session/flight_window.h"

#include <algorithm>
#include <unordered_set>

namespace trt_trace {
namespace session {
namespace {
int64_t last_end(const Record* recs, size_t n) {
  int64_t last = recs[0].end_ns;
  for (size_t i = 1; i < n; ++i) last = std::max(last, recs[i].end_ns);
  return last;
}
}  // namespace

FlightWindow::FlightWindow(int64_t window_ns, int64_t max_records)
    : window_ns_(window_ns), max_records_(std::max<int64_t>(1, max_records)) {}

void FlightWindow::add(const Record* recs, size_t n, int64_t now_ns) {
  if (n == 0) return;
  chunks_.push_back(Chunk{std::vector<Record>(recs, recs + n), last_end(recs, n)});
  records_ += static_cast<int64_t>(n);
  trim(now_ns);
}

void FlightWindow::let_go(const Record* recs, size_t n) {
  records_let_go_ += static_cast<int64_t>(n);
  if (n) let_go_until_ns_ = std::max(let_go_until_ns_, last_end(recs, n));
}

void FlightWindow::trim(int64_t now_ns) {
  const int64_t cutoff = now_ns - window_ns_;
  // Whole chunks: those that ended before the window go uncounted (they are out of it by age).
  while (!chunks_.empty() && chunks_.front().last_end_ns < cutoff) {
    records_ -= static_cast<int64_t>(chunks_.front().records.size());
    chunks_.pop_front();
  }
  // Past the cap, the oldest whatever their age: counted, and remembered for the dump's `capped`.
  while (!chunks_.empty() && records_ - static_cast<int64_t>(chunks_.front().records.size()) >= max_records_) {
    const Chunk& gone = chunks_.front();
    let_go(gone.records.data(), gone.records.size());
    records_ -= static_cast<int64_t>(gone.records.size());
    chunks_.pop_front();
  }
  if (!chunks_.empty() && records_ > max_records_) {  // one batch larger than the cap: its oldest records go
    Chunk& first = chunks_.front();
    const auto drop = static_cast<size_t>(records_ - max_records_);
    let_go(first.records.data(), drop);
    first.records.erase(first.records.begin(), first.records.begin() + static_cast<std::ptrdiff_t>(drop));
    first.last_end_ns = last_end(first.records.data(), first.records.size());
    records_ = max_records_;
  }
}

std::vector<Record> FlightWindow::whole_calls(int64_t now_ns, bool* capped) {
  trim(now_ns);
  const int64_t cutoff = now_ns - window_ns_;
  std::unordered_set<uint64_t> calls;  // the calls whose own record began in the window
  for (const Chunk& c : chunks_) {
    for (const Record& r : c.records) {
      // An inference's own id is its record's (docs/inference.md): kept whole as a call is.
      const bool own = r.phase == static_cast<uint8_t>(Phase::kCall) || r.phase == static_cast<uint8_t>(Phase::kInference);
      if (own && r.begin_ns >= cutoff) calls.insert(r.call_id);
    }
  }
  std::vector<Record> out;
  for (const Chunk& c : chunks_) {
    for (const Record& r : c.records) {
      if (calls.count(r.call_id)) out.push_back(r);
    }
  }
  *capped = records_let_go_ > 0 && let_go_until_ns_ >= cutoff;  // (a clock younger than the window: no cut)
  return out;
}

void FlightWindow::clear() {
  chunks_.clear();
  records_ = 0;
}

}  // namespace session
}  // namespace trt_trace
