// Joins a trace's slices into whole calls, streaming: the rules of trt_trace/io/readers/calls.py
// (what makes a call whole), in bounded memory.
//
// A call is whole when its execute_engine slice is there and its host phases add up to it (the
// four phases partition every call and phases of no duration are not written; each duration may be
// off by one ns per slice once written in microseconds). Our writers put a call's host slices next
// to each other, so the call being assembled is kept apart from the table of calls still open (a
// call split across two drained batches): the common case touches no hash table. A whole call on a
// CUDA device may still get a GPU span, which the drainer writes later (also one in a graph
// capture, which gets none in practice: the file has the last word); it waits in a window of at
// most `gpu_window` calls for it and is handed out when the span comes or when it leaves the
// window (calls sampled out by TRT_TRACE_GPU_EVERY never get one).
// At the end, open calls are partial (cut by a kill: left out, their ids listed), and GPU spans
// whose call never came are counted as orphans.
#include <cstdlib>
#include <deque>
#include <unordered_map>
#include <vector>

#include "readers/read_types.h"

namespace trt_trace {
namespace {

struct Key {
  uint64_t call_id;
  uint32_t pid;
  bool operator==(const Key& o) const { return call_id == o.call_id && pid == o.pid; }
};

struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    uint64_t x = k.call_id * 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(k.pid) << 17);
    x ^= x >> 29;
    return static_cast<size_t>(x * 0xBF58476D1CE4E5B9ull);
  }
};

// Key -> position in the GPU window: open addressing with linear probing and backward-shift
// deletion, no allocation per entry (every CUDA call goes in and out of it once).
class FlatIndex {
 public:
  FlatIndex() { rehash(1024); }
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  const uint64_t* find(const Key& k) const {
    for (size_t i = slot(k);; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (e.value == kEmpty) return nullptr;
      if (e.key == k) return &e.value;
    }
  }
  void put(const Key& k, uint64_t v) {
    if (2 * (size_ + 1) > table_.size()) rehash(2 * table_.size());
    for (size_t i = slot(k);; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (e.value == kEmpty) {
        e = Entry{k, v};
        ++size_;
        return;
      }
      if (e.key == k) {
        e.value = v;
        return;
      }
    }
  }
  void erase(const Key& k) {
    size_t i = slot(k);
    for (;; i = (i + 1) & mask_) {
      if (table_[i].value == kEmpty) return;
      if (table_[i].key == k) break;
    }
    // Shift later entries of the run back over the hole, so that lookups never need tombstones.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (table_[j].value == kEmpty) break;
      const size_t home = slot(table_[j].key);
      if (((j - home) & mask_) >= ((j - i) & mask_)) {  // home not in (i, j]: the entry may move to i
        table_[i] = table_[j];
        i = j;
      }
    }
    table_[i].value = kEmpty;
    --size_;
  }
  void clear() {
    for (auto& e : table_) e.value = kEmpty;
    size_ = 0;
  }

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  struct Entry {
    Key key;
    uint64_t value;
  };
  size_t slot(const Key& k) const { return KeyHash{}(k) & mask_; }
  void rehash(size_t n) {
    std::vector<Entry> old;
    old.swap(table_);
    table_.assign(n, Entry{Key{0, 0}, kEmpty});
    mask_ = n - 1;
    size_ = 0;
    for (const auto& e : old) {
      if (e.value != kEmpty) put(e.key, e.value);
    }
  }
  std::vector<Entry> table_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

struct Open {
  Record call{};
  bool has_call = false;
  bool on_cuda = false;
  int32_t phase_count = 0;
  int64_t phase_ns[kNumHostPhases] = {};
  int64_t phase_sum = 0;
  int64_t gpu_ns = 0;
  bool has_gpu = false;
  uint8_t gpu_flags = 0;
  int64_t wait_ns = 0;
  bool has_wait = false;
  uint64_t seq = 0;

  bool whole() const {
    return has_call && std::llabs((call.end_ns - call.begin_ns) - phase_sum) <= phase_count + 1;
  }
};

struct Waiting {
  Key key;
  Call call;
  bool done;
};

class Joiner {
 public:
  Joiner(int64_t gpu_window, int64_t open_cap) : gpu_window_(gpu_window), open_cap_(open_cap) {}

  void add(const Slice* s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
      const Slice& x = s[i];
      if (x.kind != kSliceX) continue;
      const uint8_t phase = x.rec.phase;
      if (phase > static_cast<uint8_t>(Phase::kCallerWait)) continue;
      const Key key{x.rec.call_id, x.pid};
      const int64_t dur = x.rec.end_ns - x.rec.begin_ns;
      if (dur < 0) {  // only a damaged file has one: no call may get a negative time
        ++backwards_spans;
        continue;
      }
      if (is_gpu_span(phase)) {
        gpu_span(key, x, dur);
        continue;
      }
      if (!(has_cur_ && cur_key_ == key)) {
        if (has_cur_) park();
        cur_key_ = key;
        has_cur_ = true;
        cur_ = take_open(key);
      }
      if (phase == static_cast<uint8_t>(Phase::kCall)) {
        cur_.call = x.rec;
        cur_.has_call = true;
        cur_.on_cuda = x.has_device != 0;
      } else {
        cur_.phase_ns[phase - 1] += dur;
        cur_.phase_sum += dur;
        cur_.phase_count++;
      }
      if (cur_.whole()) {
        finish(cur_key_, cur_);
        has_cur_ = false;
      }
    }
  }

  void end() {
    if (has_cur_) park();
    has_cur_ = false;
    for (auto& w : waiting_) {
      if (!w.done) out_.push_back(w.call);
    }
    waiting_.clear();
    waiting_index_.clear();
    for (auto& [key, o] : open_) close_open(key, o);
    open_.clear();
    open_order_.clear();
  }

  // Up to cap calls into dst; with cap 0, how many are ready.
  int64_t take(Call* dst, int64_t cap) {
    if (cap == 0) return static_cast<int64_t>(out_.size() - taken_);
    int64_t n = 0;
    while (n < cap && taken_ < out_.size()) dst[n++] = out_[taken_++];
    if (taken_ == out_.size()) {
      out_.clear();
      taken_ = 0;
    }
    return n;
  }

  std::vector<Key> partial;
  int64_t orphan_spans = 0;
  int64_t backwards_spans = 0;  // slices that end before they begin, left out (see add)

 private:
  Open take_open(const Key& key) {
    if (open_.empty()) return Open{};
    auto it = open_.find(key);
    if (it == open_.end()) return Open{};
    Open o = it->second;
    open_.erase(it);
    return o;
  }

  void park() {
    cur_.seq = ++seq_;
    open_[cur_key_] = cur_;
    open_order_.push_back({cur_key_, cur_.seq});
    bound_open();
  }

  // Past open_cap calls still open (a file of calls that never add up), the oldest are partial.
  void bound_open() {
    while (static_cast<int64_t>(open_.size()) > open_cap_ && !open_order_.empty()) {
      auto [key, seq] = open_order_.front();
      open_order_.pop_front();
      auto it = open_.find(key);
      if (it != open_.end() && it->second.seq == seq) {
        close_open(key, it->second);
        open_.erase(it);
      }
    }
    if (open_order_.size() > 4 * (open_.size() + 1024)) {  // drop stale entries of calls reopened
      std::deque<std::pair<Key, uint64_t>> kept;
      for (auto& e : open_order_) {
        auto it = open_.find(e.first);
        if (it != open_.end() && it->second.seq == e.second) kept.push_back(e);
      }
      open_order_.swap(kept);
    }
  }

  void close_open(const Key& key, const Open& o) {
    if (o.has_call || o.phase_count > 0) {
      partial.push_back(key);
    } else {
      orphan_spans += (o.has_gpu ? 1 : 0) + (o.has_wait ? 1 : 0);
    }
  }

  static Call make_call(const Open& o) {
    Call c{};
    c.begin_ns = o.call.begin_ns;
    c.ns[kNsTotal] = o.call.end_ns - o.call.begin_ns;
    for (int p = 0; p < kNumHostPhases; ++p) c.ns[kNsFirstHostPhase + p] = o.phase_ns[p];
    c.ns[kNsGpu] = o.has_gpu ? o.gpu_ns : -1;
    c.wait_ns = o.has_wait ? o.wait_ns : -1;
    c.call_id = o.call.call_id;
    c.engine_id = o.call.engine_id;
    c.thread_id = o.call.thread_id;
    c.device = o.call.device;
    c.flags = static_cast<uint8_t>((o.call.flags & kFlagError ? kCallError : 0) |
                                   (o.call.flags & kFlagNested ? kCallNested : 0) |
                                   (o.call.flags & kFlagCaptured ? kCallCaptured : 0) | (o.on_cuda ? kCallOnCuda : 0) |
                                   (o.gpu_flags & kFlagEngineStream ? kCallGpuEngineStream : 0));
    return c;
  }

  void finish(const Key& key, const Open& o) {
    Call c = make_call(o);
    c.pid = key.pid;
    const bool may_get_gpu = o.on_cuda && !o.has_gpu;  // captured calls get none, but a file may say otherwise
    if (!may_get_gpu || gpu_window_ <= 0) {
      out_.push_back(c);
      return;
    }
    waiting_index_.put(key, waiting_base_ + waiting_.size());
    waiting_.push_back(Waiting{key, c, false});
    ++waiting_live_;
    while (waiting_live_ > gpu_window_) pop_waiting(true);
  }

  void pop_waiting(bool emit) {
    Waiting& w = waiting_.front();
    if (!w.done) {
      if (emit) out_.push_back(w.call);
      waiting_index_.erase(w.key);
      --waiting_live_;
    }
    waiting_.pop_front();
    ++waiting_base_;
  }

  void gpu_span(const Key& key, const Slice& x, int64_t dur) {
    const bool gpu = x.rec.phase == static_cast<uint8_t>(Phase::kGpu);
    Open* o = nullptr;
    if (has_cur_ && cur_key_ == key) {
      o = &cur_;
    } else if (!open_.empty()) {
      auto it = open_.find(key);
      if (it != open_.end()) o = &it->second;
    }
    if (o == nullptr && !waiting_index_.empty()) {
      const uint64_t* at = waiting_index_.find(key);
      if (at != nullptr) {
        Waiting& w = waiting_[*at - waiting_base_];
        if (gpu) {
          w.call.ns[kNsGpu] = (w.call.ns[kNsGpu] < 0 ? 0 : w.call.ns[kNsGpu]) + dur;
          if (x.rec.flags & kFlagEngineStream) w.call.flags |= kCallGpuEngineStream;
          out_.push_back(w.call);
          w.done = true;
          --waiting_live_;
          waiting_index_.erase(key);
          while (!waiting_.empty() && waiting_.front().done) {
            waiting_.pop_front();
            ++waiting_base_;
          }
        } else {
          w.call.wait_ns = (w.call.wait_ns < 0 ? 0 : w.call.wait_ns) + dur;
        }
        return;
      }
    }
    if (o == nullptr) {  // before its call (or its call never comes): an open entry of its own
      Open fresh;
      fresh.seq = ++seq_;
      o = &(open_[key] = fresh);
      open_order_.push_back({key, fresh.seq});
    }
    if (gpu) {
      o->gpu_ns += dur;
      o->has_gpu = true;
      o->gpu_flags |= x.rec.flags;
    } else {
      o->wait_ns += dur;
      o->has_wait = true;
    }
    bound_open();
  }

  int64_t gpu_window_;
  int64_t open_cap_;
  bool has_cur_ = false;
  Key cur_key_{};
  Open cur_;
  uint64_t seq_ = 0;
  std::unordered_map<Key, Open, KeyHash> open_;
  std::deque<std::pair<Key, uint64_t>> open_order_;
  std::deque<Waiting> waiting_;
  FlatIndex waiting_index_;
  uint64_t waiting_base_ = 0;
  int64_t waiting_live_ = 0;
  std::vector<Call> out_;
  size_t taken_ = 0;
};

}  // namespace
}  // namespace trt_trace

using trt_trace::Joiner;

TT_API void* tt_joiner_new(int64_t gpu_window, int64_t open_cap) { return new Joiner(gpu_window, open_cap); }
TT_API void tt_joiner_free(void* j) { delete static_cast<Joiner*>(j); }
TT_API void tt_joiner_add(void* j, const trt_trace::Slice* s, int64_t n) { static_cast<Joiner*>(j)->add(s, n); }
TT_API void tt_joiner_end(void* j) { static_cast<Joiner*>(j)->end(); }
TT_API int64_t tt_joiner_take(void* j, trt_trace::Call* out, int64_t cap) { return static_cast<Joiner*>(j)->take(out, cap); }
TT_API int64_t tt_joiner_orphan_spans(void* j) { return static_cast<Joiner*>(j)->orphan_spans; }
TT_API int64_t tt_joiner_backwards_spans(void* j) { return static_cast<Joiner*>(j)->backwards_spans; }
// The partial calls' (pid, call id) pairs after tt_joiner_end: returns how many; writes at most cap.
TT_API int64_t tt_joiner_partial(void* j, uint64_t* pids, uint64_t* call_ids, int64_t cap) {
  const auto& p = static_cast<Joiner*>(j)->partial;
  for (int64_t i = 0; i < cap && i < static_cast<int64_t>(p.size()); ++i) {
    pids[i] = p[i].pid;
    call_ids[i] = p[i].call_id;
  }
  return static_cast<int64_t>(p.size());
}
