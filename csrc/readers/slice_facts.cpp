// What the readers note about every chunk of slices, in one pass of native code instead of numpy
// passes over the 64-byte rows (each field access of a structured array is a strided copy): the
// earliest slice begin (the trace's origin) and the (pid, engine id) pairs of the chunk's call
// slices, each with its first row (where the engine's name literal is).
#include <cstdint>

#include "readers/read_types.h"

using trt_trace::Slice;

// pairs: [cap * 3] (pid, engine id, first row), in order of first appearance. Returns how many
// distinct pairs the chunk has where that is <= cap (all written); more than cap otherwise (then at
// most the true count plus the rows past the cap: call again with that as cap). *min_begin: the smallest begin_ns of the X slices, INT64_MAX if none.
TT_API int64_t tt_slice_facts(const Slice* s, int64_t n, int64_t* min_begin, int64_t* pairs, int64_t cap) {
  int64_t low = INT64_MAX;
  int64_t found = 0;
  // The last pair seen: a chunk is mostly one process, a few engines, so a short scan of the pairs
  // found so far is cheaper than any hash.
  uint64_t last = ~0ull;
  for (int64_t i = 0; i < n; ++i) {
    const Slice& x = s[i];
    if (x.kind != trt_trace::kSliceX) continue;
    if (x.rec.begin_ns < low) low = x.rec.begin_ns;
    if (x.rec.phase != 0) continue;
    const uint64_t key = static_cast<uint64_t>(x.pid) << 32 | x.rec.engine_id;
    if (key == last) continue;
    last = key;
    bool seen = false;
    for (int64_t k = 0; k < found && k < cap; ++k) {
      if (static_cast<uint64_t>(pairs[3 * k]) << 32 == (key & 0xffffffff00000000ull) &&
          static_cast<uint64_t>(pairs[3 * k + 1]) == (key & 0xffffffffull)) {
        seen = true;
        break;
      }
    }
    if (seen) continue;
    if (found >= cap) {  // more pairs than room: count on, so that the caller can size its buffer
      ++found;
      continue;
    }
    pairs[3 * found] = x.pid;
    pairs[3 * found + 1] = x.rec.engine_id;
    pairs[3 * found + 2] = i;
    ++found;
  }
  *min_begin = low;
  return found;
}
