// Fixed-size log-linear histograms of call durations, for live percentiles and
// the Prometheus histogram without keeping per-call data.
//
// Buckets (HDR-style, in ns): durations below 2 * kSub ns have a bucket each;
// above, every power of two [2^e, 2^(e+1)) is cut into kSub equal buckets, up
// to 2^kMaxExp ns (~18 minutes; longer calls land in the last bucket). A
// bucket's width is at most 1/kSub of its lower bound, so its midpoint is
// within 1/(2 kSub) = 3.1% of any duration in it: that is the relative error
// of a live percentile. The bucket of a duration is a count-leading-zeros, two
// shifts and an add, with no branch: cheap enough for every call.
#pragma once

#include <cstdint>

namespace trt_trace {
namespace histogram {

constexpr int kSubBits = 4;
constexpr int64_t kSub = int64_t{1} << kSubBits;  // buckets per power of two
constexpr int kMaxExp = 40;
constexpr int kBuckets = static_cast<int>((kMaxExp - kSubBits + 1) * kSub);

// Branch-free: with shift = max(0, e - kSubBits) for the duration's top bit e (ORing in 2 kSub - 1
// makes it 0 below 2 kSub), the index is shift * kSub + (v >> shift), since v >> shift lies in
// [kSub, 2 kSub) above and is v itself below.
inline int bucket_of(int64_t ns) noexcept {
  constexpr uint64_t kTop = uint64_t{1} << kMaxExp;
  // Durations are never negative (monotonic clock); one would read as huge and land in the last bucket.
  uint64_t v = static_cast<uint64_t>(ns);
  v = v < kTop ? v : kTop - 1;
  const int shift = 63 - __builtin_clzll(v | static_cast<uint64_t>(2 * kSub - 1)) - kSubBits;
  return static_cast<int>((static_cast<uint64_t>(shift) << kSubBits) + (v >> shift));
}

// Smallest duration of bucket b; lower_bound(kBuckets) is 2^kMaxExp.
constexpr int64_t lower_bound(int b) noexcept {
  if (b < 2 * kSub) return b;
  const int e = static_cast<int>(b / kSub) + kSubBits - 1;
  return (kSub + b % kSub) << (e - kSubBits);
}

// The value a bucket stands for: its midpoint (exact for the one-ns buckets).
constexpr int64_t representative(int b) noexcept { return (lower_bound(b) + lower_bound(b + 1) - 1) / 2; }

// The p-th percentile (p in 1..100) as an order statistic: the duration of the
// ceil(p n / 100)-th shortest call, here the representative of its bucket; -1
// when there are no calls. counts: kBuckets counts.
inline int64_t percentile(const int64_t* counts, int p) noexcept {
  int64_t n = 0;
  for (int b = 0; b < kBuckets; ++b) n += counts[b];
  if (n <= 0) return -1;
  const int64_t rank = (static_cast<int64_t>(p) * n + 99) / 100;  // 1-based
  int64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts[b];
    if (seen >= rank) return representative(b);
  }
  return representative(kBuckets - 1);
}

}  // namespace histogram
}  // namespace trt_trace
