// One RecordRing per producing thread, like PyTorch profiler's
// ThreadLocalSubqueue: a thread finds its ring through a thread_local pointer
// and never takes a lock to record. The registry lock is taken only when a
// thread records for the first time (or exits) and by the drainer.
//
// Rings are recycled: a ring whose thread exited is handed to the next new
// thread, with its undrained records kept (each record carries its own thread
// id). Memory is therefore bounded by (peak number of recording threads) x
// capacity, not by the number of threads ever created.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "buffer/record_ring.h"
#include "common/leaked.h"

namespace trt_trace {

namespace detail {
// What the hot path needs of the calling thread, in one trivially initialised
// thread_local (one lookup, no init guard, no destructor registration).
struct ThisThread {
  RecordRing* ring = nullptr;  // the thread's ring, null until its first writer()
  uint32_t tid = 0;            // OS thread id, 0 until first asked
};
extern thread_local ThisThread t_this;
}  // namespace detail

// Counts for one recording thread (one ring owner), exact once that thread is
// idle: produced == recorded + dropped.
struct ThreadCounts {
  uint32_t thread_id;
  uint64_t produced;
  uint64_t dropped;
  uint64_t capacity;
  bool alive;
  uint64_t dropped_calls;  // the engine calls behind `dropped` (a call's records are dropped whole)
};

class ThreadRings : public Leaked<ThreadRings> {
 public:
  // The calling thread's ring and OS thread id, found with one thread-local
  // lookup, for writing a call's records in place (RecordRing::claim, slot,
  // publish). The ring is made on the thread's first use; null if out of memory.
  // Never blocks, never allocates after the first use of a thread.
  struct Writer {
    RecordRing* ring;
    uint32_t thread_id;
  };
  // The calling thread's ring state itself (a thread-local: the address stays valid for the
  // thread's life, also across fork in the forking thread), for callers that cache it.
  static detail::ThisThread* this_thread() noexcept { return &detail::t_this; }
  Writer writer() noexcept {
    detail::ThisThread& me = detail::t_this;
    if (__builtin_expect(me.ring != nullptr, 1)) return {me.ring, me.tid};
    return first_writer(me);
  }

  // Copies one call's records into the calling thread's ring with its thread id:
  // all n, or none (then counted as n drops, and false is returned).
  bool push(const Record* records, size_t n) noexcept;

  // Moves records (oldest first per thread) into out, at most max, with each
  // call's ring slots expanded (buffer/call_layout.h); max >= kMinDrainRecords (buffer/call_layout.h) for progress.
  // Drainer only.
  size_t drain(Record* out, size_t max);
  uint64_t pending() const;

  // Capacity, in records, of rings created from now on (rounded up to a power
  // of two, at least 64).
  void set_capacity(size_t records);
  size_t capacity() const;
  // Makes sure a free ring of `records` (rounded as set_capacity does) waits in the pool, so that a
  // session learns at its start, not at a thread's first call, whether such a ring can be allocated
  // at all (a failed allocation there leaves that thread untraced). False: it cannot.
  bool reserve(size_t records) noexcept;

  std::vector<ThreadCounts> thread_counts() const;
  // Starts the counts afresh (a new tracing session reports its own drops).
  void reset_counts();

  // Called from the thread_local owner's destructor.
  void release(size_t ring_index, uint32_t thread_id) noexcept;

  // fork(): the locks are taken before and released after it on both sides, so a
  // child never inherits a lock held by a thread that does not exist there; the
  // child also forgets the parent's pending records and its other threads' rings.
  void before_fork() noexcept;
  void after_fork_parent() noexcept;
  void after_fork_child() noexcept;

 private:
  struct Slot {
    std::unique_ptr<RecordRing> ring;
    uint32_t owner_tid = 0;
    bool owned = false;
    uint64_t base_produced = 0;  // ring counters when the current owner took it
    uint64_t base_dropped = 0;
    uint64_t base_dropped_calls = 0;
  };
  friend class Leaked<ThreadRings>;
  static ThreadRings* create();  // with its fork handlers
  // A thread's first writer(): takes a ring for it.
  Writer first_writer(detail::ThisThread& me) noexcept;
  // A free ring of the current capacity (or a new one) for the thread: its index and address.
  std::pair<size_t, RecordRing*> acquire(uint32_t thread_id);

  mutable std::mutex mutex_;        // guards slots_ layout and retired_
  std::mutex drain_mutex_;          // one consumer at a time
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<ThreadCounts> retired_;  // counts of threads that exited
  size_t capacity_ = 1 << 16;
  size_t drain_cursor_ = 0;         // round-robin start, so no ring starves
};

uint32_t current_thread_id() noexcept;

}  // namespace trt_trace
