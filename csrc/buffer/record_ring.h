// A single-producer / single-consumer ring of record slots (common/record.h: each slot one kind).
//
// The producer is the one thread that owns the ring (see ThreadRings); the
// consumer is the drainer, serialised by ThreadRings' drain mutex. Neither side
// blocks or allocates: when the ring is full the producer counts the records it
// could not store and returns. head and tail are monotonically increasing
// 64-bit counters (never wrap in practice); slot = counter & mask.
//
// Counts are in events, the records the drainer hands out (a call's slots expand
// into more records, see buffer/call_layout.h), and dropped calls are counted too,
// so that a trace can say how many calls it lacks. Invariant, exact at every
// quiescent point:
//   produced() == events of the slots stored + dropped()
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "common/record.h"

namespace trt_trace {

class RecordRing {
 public:
  explicit RecordRing(size_t capacity_pow2)
      : capacity_(capacity_pow2), mask_(capacity_pow2 - 1), slots_(new RecordSlot[capacity_pow2]) {}

  RecordRing(const RecordRing&) = delete;
  RecordRing& operator=(const RecordRing&) = delete;

  // Producer, writing in place: claim room for n slots that stand for `events`
  // events of `calls` engine calls (1 for a call's records, 0 for records that
  // belong to a call written before, such as its layers; all or none: false
  // counts the events and calls as dropped), write slot i at slot(start + i),
  // then publish(start + n) makes them visible to the consumer. A call is never split.
  bool claim(size_t n, uint64_t events, uint64_t calls, uint64_t* start) noexcept {
    produced_.store(produced_.load(std::memory_order_relaxed) + events, std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_relaxed);
    if (head + n - tail_cache_ > capacity_) {
      tail_cache_ = tail_.load(std::memory_order_acquire);
      if (head + n - tail_cache_ > capacity_) {
        dropped_.store(dropped_.load(std::memory_order_relaxed) + events, std::memory_order_relaxed);
        dropped_calls_.store(dropped_calls_.load(std::memory_order_relaxed) + calls, std::memory_order_relaxed);
        return false;
      }
    }
    *start = head;
    return true;
  }
  // A slot is written as its kind (common/record.h: ring->slot(i).span = span_record(...), ...).
  RecordSlot& slot(uint64_t index) noexcept { return slots_[index & mask_]; }
  void publish(uint64_t end) noexcept { head_.store(end, std::memory_order_release); }

  // Consumer: copy up to max slots, oldest first, into out (a drained batch, Record-typed, still holding
  // every kind: the drain expands and resolves the internal ones). Returns the count.
  // Never stops between a call's slot and its phase-bounds slots (they
  // expand only together), so it may return up to kPhaseBoundsSlots less than max.
  size_t pop(Record* out, size_t max) noexcept {
    const uint64_t tail = tail_.load(std::memory_order_relaxed);
    const uint64_t head = head_.load(std::memory_order_acquire);
    size_t n = static_cast<size_t>(head - tail);
    if (n > max) {
      n = max;
      while (n > 0 && slots_[(tail + n) & mask_].kind() == static_cast<uint8_t>(Phase::kPhaseBounds)) --n;
    }
    // Copy in at most two contiguous pieces (the ring may wrap).
    const size_t first = tail & mask_;
    const size_t until_end = capacity_ - first;
    const size_t a = n < until_end ? n : until_end;
    std::memcpy(static_cast<void*>(out), &slots_[first], a * sizeof(Record));
    if (n > a) std::memcpy(static_cast<void*>(out + a), &slots_[0], (n - a) * sizeof(Record));
    tail_.store(tail + n, std::memory_order_release);
    return n;
  }

  // Forgets every pending record (a forked child must not write its parent's events).
  void discard() noexcept { tail_.store(head_.load(std::memory_order_acquire), std::memory_order_release); }

  size_t capacity() const noexcept { return capacity_; }
  uint64_t produced() const noexcept { return produced_.load(std::memory_order_relaxed); }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  uint64_t dropped_calls() const noexcept { return dropped_calls_.load(std::memory_order_relaxed); }
  uint64_t pending() const noexcept {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
  }

 private:
  const size_t capacity_;
  const uint64_t mask_;
  std::unique_ptr<RecordSlot[]> slots_;
  // Producer-owned line: head, the cached tail and the event counters.
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t tail_cache_ = 0;
  std::atomic<uint64_t> produced_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> dropped_calls_{0};
  // Consumer-owned line.
  alignas(64) std::atomic<uint64_t> tail_{0};
};

}  // namespace trt_trace
