#include "buffer/thread_rings.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "buffer/call_layout.h"

namespace trt_trace {

namespace detail {
thread_local ThisThread t_this;
}  // namespace detail

using detail::t_this;
using detail::ThisThread;

namespace {

uint32_t thread_id_of(ThisThread& me) noexcept {
  if (me.tid == 0) me.tid = static_cast<uint32_t>(::syscall(SYS_gettid));
  return me.tid;
}

}  // namespace

uint32_t current_thread_id() noexcept { return thread_id_of(t_this); }

namespace {

size_t round_up_pow2(size_t n) {
  size_t p = 64;
  while (p < n && p < (size_t{1} << 40)) p <<= 1;
  return p;
}

// The calling thread's claim on a ring; gives the ring back when the thread exits.
struct LocalRing {
  RecordRing* ring = nullptr;
  size_t index = 0;
  ~LocalRing() {
    if (ring != nullptr) ThreadRings::instance().release(index, current_thread_id());
  }
};
thread_local LocalRing t_local;  // touched on a thread's first push and at its exit only

}  // namespace

ThreadRings* ThreadRings::create() {
  // Leaked on purpose: worker threads may still record while static
  // destructors run at exit.
  auto* r = new ThreadRings();
  pthread_atfork([] { ThreadRings::instance().before_fork(); },
                 [] { ThreadRings::instance().after_fork_parent(); },
                 [] { ThreadRings::instance().after_fork_child(); });
  return r;
}

void ThreadRings::before_fork() noexcept {
  drain_mutex_.lock();
  mutex_.lock();
}

void ThreadRings::after_fork_parent() noexcept {
  mutex_.unlock();
  drain_mutex_.unlock();
}

void ThreadRings::after_fork_child() noexcept {
  t_this.tid = static_cast<uint32_t>(::syscall(SYS_gettid));  // the child's thread has a new id
  retired_.clear();
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    s.ring->discard();
    s.owned = t_this.ring != nullptr && t_local.index == i;  // only the forking thread lives on
    s.base_produced = s.ring->produced();
    s.base_dropped = s.ring->dropped();
    s.base_dropped_calls = s.ring->dropped_calls();
  }
  mutex_.unlock();
  drain_mutex_.unlock();
}

std::pair<size_t, RecordRing*> ThreadRings::acquire(uint32_t thread_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = *slots_[i];
    if (!s.owned && s.ring->capacity() == capacity_) {
      s.owned = true;
      s.owner_tid = thread_id;
      s.base_produced = s.ring->produced();
      s.base_dropped = s.ring->dropped();
    s.base_dropped_calls = s.ring->dropped_calls();
      return {i, s.ring.get()};
    }
  }
  auto slot = std::make_unique<Slot>();
  slot->ring = std::make_unique<RecordRing>(capacity_);
  slot->owned = true;
  slot->owner_tid = thread_id;
  RecordRing* ring = slot->ring.get();
  slots_.push_back(std::move(slot));
  return {slots_.size() - 1, ring};
}

void ThreadRings::release(size_t ring_index, uint32_t thread_id) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  Slot& s = *slots_[ring_index];
  const uint64_t produced = s.ring->produced() - s.base_produced;
  const uint64_t dropped = s.ring->dropped() - s.base_dropped;
  if (produced > 0) {
    retired_.push_back({thread_id, produced, dropped, s.ring->capacity(), false,
                        s.ring->dropped_calls() - s.base_dropped_calls});
  }
  s.owned = false;
}

ThreadRings::Writer ThreadRings::first_writer(ThisThread& me) noexcept {
  try {
    const auto [index, acquired] = acquire(thread_id_of(me));
    t_local.index = index;  // the owner that gives the ring back at thread exit
    t_local.ring = acquired;
    me.ring = acquired;
  } catch (...) {
    return {nullptr, 0};  // out of memory for a new ring: the call goes untraced
  }
  return {me.ring, me.tid};  // writer() reads both from now on
}

bool ThreadRings::push(const Record* records, size_t n) noexcept {
  const Writer w = writer();
  uint64_t start;
  uint64_t calls = 0;  // (tests and benchmarks push whole records: their call records are the calls)
  for (size_t i = 0; i < n; ++i) calls += records[i].phase == static_cast<uint8_t>(Phase::kCall) ? 1 : 0;
  if (w.ring == nullptr || !w.ring->claim(n, n, calls, &start)) return false;
  for (size_t i = 0; i < n; ++i) {
    Record r = records[i];  // (a whole record of any kind: thread_id is where every kind has it)
    r.thread_id = w.thread_id;
    w.ring->slot(start + i).span = r;
  }
  w.ring->publish(start + n);
  return true;
}

size_t ThreadRings::drain(Record* out, size_t max) {
  std::lock_guard<std::mutex> drain_lock(drain_mutex_);
  std::vector<RecordRing*> rings;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    rings.reserve(slots_.size());
    for (auto& s : slots_) rings.push_back(s->ring.get());
  }
  if (rings.empty()) return 0;
  // Slots go to the end of `out` and expand from its start (buffer/call_layout.h).
  const size_t room = slots_for_records(max);
  Record* slots = out + (max - room);
  size_t total = 0;
  // Round-robin so that a busy thread cannot starve the others when max is small.
  for (size_t k = 0; k < rings.size() && total < room; ++k) {
    RecordRing* r = rings[(drain_cursor_ + k) % rings.size()];
    total += r->pop(slots + total, room - total);
  }
  drain_cursor_ = (drain_cursor_ + 1) % rings.size();
  return expand_calls(out, max - room, total);
}

uint64_t ThreadRings::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t n = 0;
  for (auto& s : slots_) n += s->ring->pending();
  return n;
}

void ThreadRings::set_capacity(size_t records) {
  std::lock_guard<std::mutex> lock(mutex_);
  capacity_ = round_up_pow2(records);
}

bool ThreadRings::reserve(size_t records) noexcept {
  const size_t capacity = round_up_pow2(records);
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& s : slots_) {
    if (!s->owned && s->ring->capacity() == capacity) return true;
  }
  try {
    auto slot = std::make_unique<Slot>();
    slot->ring = std::make_unique<RecordRing>(capacity);
    slots_.push_back(std::move(slot));  // unowned: the first thread to write takes it (acquire)
  } catch (...) {
    return false;
  }
  return true;
}

size_t ThreadRings::capacity() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_;
}

void ThreadRings::reset_counts() {
  std::lock_guard<std::mutex> lock(mutex_);
  retired_.clear();
  for (auto& s : slots_) {
    s->base_produced = s->ring->produced();
    s->base_dropped = s->ring->dropped();
    s->base_dropped_calls = s->ring->dropped_calls();
  }
}

std::vector<ThreadCounts> ThreadRings::thread_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<ThreadCounts> out = retired_;
  for (auto& s : slots_) {
    if (!s->owned) continue;
    const uint64_t produced = s->ring->produced() - s->base_produced;
    const uint64_t dropped = s->ring->dropped() - s->base_dropped;
    out.push_back({s->owner_tid, produced, dropped, s->ring->capacity(), true,
                   s->ring->dropped_calls() - s->base_dropped_calls});
  }
  return out;
}

}  // namespace trt_trace
