// The slice packets of `trt-trace merge ... -o all.pftrace` (trt_trace/analysis/perfetto_view.py): one
// chunk's slices put in the order Perfetto nests and links them, each written as a SLICE_BEGIN and a
// SLICE_END TracePacket.
//
// Why C++: in Python the sort and the framing of each packet cost ~15 µs a slice, about three
// times the reading of the merged JSON. Python still owns what varies: it encodes each distinct name,
// category and argument set once (track_event_codec.py, field numbers from the protos'
// descriptors) and hands over their bytes as pieces, with the constant fields (tags, types, the
// sequence id) as bytes too; this file only orders, measures and concatenates. It holds no field
// number of its own.
#include <algorithm>
#include <cstring>
#include <vector>

#include "readers/read_types.h"

namespace {

// The constant byte strings the caller passes, in this order (SliceCodec's `constants` in
// track_event_codec.py).
enum Constant { kPacketTag, kTimestampTag, kEventTag, kSequence, kBeginType, kEndType, kTrackTag, kFlowTag,
                kTerminatingTag, kNumConstants };

int varint_size(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

struct Writer {
  char* p;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
  }
  void bytes(const char* b, int64_t n) {
    std::memcpy(p, b, static_cast<size_t>(n));
    p += n;
  }
};

// One point of the chunk's timeline: a slice's begin or end, ordered by (ts, end 0 / begin 1, has
// terminating flows, -other end, +-index) (tests/test_perfetto_view.py states the same): at one timestamp ends
// before begins, a flow's start before its end, outer begins before inner ones, inner ends before
// outer ones, and otherwise the slices' own order.
struct Mark {
  uint64_t ts;
  uint8_t is_begin;
  uint8_t terminates;
  int64_t minus_other;  // -(the other end's ts)
  int64_t signed_index; // begin: index + 1, end: -(index + 1)
  bool operator<(const Mark& o) const {
    if (ts != o.ts) return ts < o.ts;
    if (is_begin != o.is_begin) return is_begin < o.is_begin;
    if (terminates != o.terminates) return terminates < o.terminates;
    if (minus_other != o.minus_other) return minus_other < o.minus_other;
    return signed_index < o.signed_index;
  }
};

}  // namespace

// n slices: begin_ns[i] <= end_ns[i] (both below 2**63), track[i] (the track uuid), and the pieces
// of its begin event: name[i], category[i], annotations[i] index piece_off (piece k is
// blob[piece_off[k], piece_off[k + 1])). Flows: n_flows entries (flow_slice[j], flow_id[j],
// flow_terminates[j]), in the order they are written on their slice. consts/const_off: the constant
// pieces (Constant above). Writes the packets into out; returns the bytes written, or -(bytes
// needed) where cap is too small (nothing written).
TT_API int64_t tt_view_packets(int64_t n, const uint64_t* begin_ns, const uint64_t* end_ns, const uint64_t* track,
                               const int64_t* name, const int64_t* category, const int64_t* annotations,
                               const char* blob, const int64_t* piece_off, int64_t n_flows,
                               const int64_t* flow_slice, const uint64_t* flow_id, const uint8_t* flow_terminates,
                               const char* consts, const int64_t* const_off, char* out, int64_t cap) {
  auto piece_size = [&](int64_t k) { return piece_off[k + 1] - piece_off[k]; };
  auto const_size = [&](int c) { return const_off[c + 1] - const_off[c]; };

  // Flows by slice (a counting sort that keeps their order on each slice).
  std::vector<int64_t> flows_at(static_cast<size_t>(n) + 1, 0);
  for (int64_t j = 0; j < n_flows; ++j) ++flows_at[static_cast<size_t>(flow_slice[j]) + 1];
  for (int64_t i = 0; i < n; ++i) flows_at[i + 1] += flows_at[i];
  std::vector<int64_t> flow_order(static_cast<size_t>(n_flows));
  std::vector<uint8_t> terminates(static_cast<size_t>(n), 0);
  std::vector<int64_t> flow_bytes(static_cast<size_t>(n), 0);  // each slice's flow fields
  {
    std::vector<int64_t> cursor(flows_at.begin(), flows_at.end() - 1);
    for (int64_t j = 0; j < n_flows; ++j) {
      const int64_t i = flow_slice[j];
      flow_order[static_cast<size_t>(cursor[i]++)] = j;
      if (flow_terminates[j]) terminates[i] = 1;
      flow_bytes[i] += 8 + const_size(flow_terminates[j] ? kTerminatingTag : kFlowTag);
    }
  }

  // Each packet's event length, then the whole size.
  std::vector<int64_t> begin_event(static_cast<size_t>(n)), end_event(static_cast<size_t>(n));
  auto packet_size = [&](uint64_t ts, int64_t event) {
    return const_size(kTimestampTag) + varint_size(ts) + const_size(kEventTag) +
           varint_size(static_cast<uint64_t>(event)) + event + const_size(kSequence);
  };
  auto framed_size = [&](uint64_t ts, int64_t event) {
    const int64_t packet = packet_size(ts, event);
    return const_size(kPacketTag) + varint_size(static_cast<uint64_t>(packet)) + packet;
  };
  int64_t need = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t common = const_size(kTrackTag) + varint_size(track[i]);
    begin_event[i] = const_size(kBeginType) + common + piece_size(name[i]) + piece_size(category[i]) +
                     piece_size(annotations[i]) + flow_bytes[i];
    end_event[i] = const_size(kEndType) + common;
    need += framed_size(begin_ns[i], begin_event[i]) + framed_size(end_ns[i], end_event[i]);
  }
  if (need > cap) return -need;

  std::vector<Mark> marks;
  marks.reserve(static_cast<size_t>(2 * n));
  for (int64_t i = 0; i < n; ++i) {
    marks.push_back({begin_ns[i], 1, terminates[i], -static_cast<int64_t>(end_ns[i]), i + 1});
    marks.push_back({end_ns[i], 0, 0, -static_cast<int64_t>(begin_ns[i]), -(i + 1)});
  }
  std::sort(marks.begin(), marks.end());

  Writer w{out};
  auto constant = [&](int c) { w.bytes(consts + const_off[c], const_size(c)); };
  auto piece = [&](int64_t k) { w.bytes(blob + piece_off[k], piece_size(k)); };
  for (const Mark& m : marks) {
    const int64_t i = (m.signed_index > 0 ? m.signed_index : -m.signed_index) - 1;
    const int64_t event = m.is_begin ? begin_event[i] : end_event[i];
    constant(kPacketTag);
    w.varint(static_cast<uint64_t>(packet_size(m.ts, event)));
    constant(kTimestampTag);
    w.varint(m.ts);
    constant(kEventTag);
    w.varint(static_cast<uint64_t>(event));
    constant(m.is_begin ? kBeginType : kEndType);
    constant(kTrackTag);
    w.varint(track[i]);
    if (m.is_begin) {
      piece(name[i]);
      piece(category[i]);
      piece(annotations[i]);
      for (int64_t k = flows_at[i]; k < flows_at[i + 1]; ++k) {  // flow ids first, then terminating ones
        const int64_t j = flow_order[static_cast<size_t>(k)];
        if (flow_terminates[j]) continue;
        constant(kFlowTag);
        std::memcpy(w.p, &flow_id[j], 8);  // fixed64, little-endian
        w.p += 8;
      }
      for (int64_t k = flows_at[i]; k < flows_at[i + 1]; ++k) {
        const int64_t j = flow_order[static_cast<size_t>(k)];
        if (!flow_terminates[j]) continue;
        constant(kTerminatingTag);
        std::memcpy(w.p, &flow_id[j], 8);
        w.p += 8;
      }
    }
    constant(kSequence);
  }
  return w.p - out;
}
