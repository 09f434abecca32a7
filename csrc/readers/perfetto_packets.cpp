// The fast path of the Perfetto reader: trt_trace's own slice packets (writers/perfetto_trace.py,
// ops/perfetto_format.cpp: a SLICE_BEGIN with interned name, debug annotations and flow ids,
// immediately followed by its SLICE_END on the same track) decoded from the wire format into
// Slice structs. Any other packet (track descriptors, interned names, clock snapshots, metadata
// instants) stops the loop at its offset and is decoded by Python with the protobuf classes,
// which also update the tables this loop reads (names, annotation names, tracks). A slice packet
// of any other shape (not ours) answers kNotOurs: the file is then read by the general path.
// Slices on a lane the Python side marks kPythonLane (a "layers" track: per-layer timing, whose
// names are interned past 256), and slices on an inference track, are handed back as kOther, packet by
// packet, and paired there.
#include <cstring>

#include "readers/read_types.h"

namespace trt_trace {
namespace {

enum PfStatus : int32_t {
  kNeedMore = 0,  // the buffer ends (in a packet, or at its end)
  kFull = 1,      // the output is full
  kOther = 2,     // a packet for Python at the returned offset
  kNotOurs = 3,   // a slice packet of another shape: use the general path for the whole file
  kGarbage = 4,   // not a Trace.packet field: the trace ends here (a cut or corrupt tail)
};

// Annotation name kinds, as the Python side numbers them in ann_kind (the writer's ANNOTATIONS + 1).
enum AnnKind : uint8_t {
  kAnnNone = 0, kAnnEngine, kAnnCallId, kAnnThread, kAnnDevice, kAnnStream, kAnnError, kAnnNested, kAnnCaptured,
  kAnnEngineStream,
};

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  // One byte is the common case (tags, iids, small values): no loop for it.
  inline bool varint(uint64_t& v) {
    if (p < end && *p < 0x80) {
      v = *p++;
      return true;
    }
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      const uint8_t b = *p++;
      x |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        v = x;
        return true;
      }
    }
    return false;
  }
  bool fixed64(uint64_t& v) {
    if (end - p < 8) return false;
    std::memcpy(&v, p, 8);
    p += 8;
    return true;
  }
  bool bytes(const uint8_t*& a, const uint8_t*& b) {
    uint64_t n;
    if (!varint(n) || n > static_cast<uint64_t>(end - p)) return false;
    a = p;
    b = p + n;
    p = b;
    return true;
  }
};

constexpr int64_t kPythonLane = -2;  // track_engine: a lane whose slices Python decodes (layers)
// Inference tracks (docs/inference.md: uuids from 2^31, below the engines' 2^32): few slices, Python decodes
// and pairs them as it does layer slices (trt_trace/io/readers/perfetto.py).
constexpr uint64_t kInferenceUuidBase = uint64_t{1} << 31, kEngineUuidBase = uint64_t{1} << 32;

struct Tables {
  const uint8_t* name_phase;     // [256] name iid -> phase + 1 (0: not a phase name)
  const uint8_t* ann_kind;       // [256] annotation name iid -> AnnKind
  const int64_t* track_engine;   // [n_tracks] lane track uuid -> engine id, -1: not an engine lane, kPythonLane
  const uint32_t* track_tid;     // [n_tracks] lane track uuid -> the JSON writer's tid
  int64_t n_tracks;
  uint64_t seq_id;
  uint32_t pid;
};

struct OpenSlice {
  int64_t open;
  int64_t open_pos;  // the begin packet's offset
  uint64_t track;
  Slice slice;
};

// A decoded TrackEvent. Annotation values are read only where their bit of ann_set is set, so
// nothing but the scalars is cleared per packet.
struct Event {
  uint64_t type = 0, track = 0, name_iid = 0;
  bool has_type = false, has_track = false, has_name = false;
  int flow_out = 0, flow_in = 0;
  uint64_t flow_out_id = 0, flow_in_id = 0;
  uint32_t ann_set = 0;  // bit k: annotation kind k was given
  uint64_t ann_value[16];
  uint64_t ann(int kind) const { return ann_set >> kind & 1 ? ann_value[kind] : 0; }
  bool has(int kind) const { return ann_set >> kind & 1; }
};

// Reads a message's fields in order: `field(key, r)` decodes the field whose key it is given (r then at
// its value) and answers false to stop at it (a field it does not know, or a cut value). True where
// every field was read.
template <class OnField>
inline bool for_each_field(Reader r, OnField field) {
  while (r.p < r.end) {
    uint64_t key;
    if (!r.varint(key) || !field(key, r)) return false;
  }
  return true;
}

// A DebugAnnotation of ours (a name iid and one integer value) into e's slot for its name's kind;
// false where it is another shape, or a kind the tables do not know or the event has already.
inline bool decode_annotation(Reader fields, const Tables& t, Event& e) {
  uint64_t iid = 0, value = 0;
  bool has_iid = false, has_value = false;
  const bool read = for_each_field(fields, [&](uint64_t k, Reader& r) {
    const uint64_t f = k >> 3, w = k & 7;
    uint64_t v;
    if (w != 0 || !r.varint(v)) return false;
    if (f == 1) { iid = v; has_iid = true; }
    else if (f == 2 || f == 3 || f == 17) { value = v; has_value = true; }
    else return false;
    return true;
  });
  if (!read || !has_iid || !has_value || iid >= 256) return false;
  const uint8_t kind = t.ann_kind[iid];
  if (kind == kAnnNone || e.has(kind)) return false;
  e.ann_set |= 1u << kind;
  e.ann_value[kind] = value;
  return true;
}

// Decodes a TrackEvent; false where it holds a field the fast path does not know.
inline bool decode_event(Reader fields, const Tables& t, Event& e) {
  return for_each_field(fields, [&](uint64_t key, Reader& r) {
    // A varint field into `field`, marked present; a fixed64 flow id into `id`, counted.
    const auto varint = [&r](uint64_t& field, bool& present) { return present = r.varint(field); };
    const auto flow = [&r](uint64_t& id, int& count) { return r.fixed64(id) && ++count; };
    const uint8_t *a, *b;
    switch (key) {
      case (9 << 3) | 0: return varint(e.type, e.has_type);
      case (11 << 3) | 0: return varint(e.track, e.has_track);
      case (10 << 3) | 0: return varint(e.name_iid, e.has_name);
      case (47 << 3) | 1: return flow(e.flow_out_id, e.flow_out);
      case (48 << 3) | 1: return flow(e.flow_in_id, e.flow_in);
      case (4 << 3) | 2: return r.bytes(a, b) && decode_annotation(Reader{a, b}, t, e);
      default: return false;
    }
  });
}

}  // namespace
}  // namespace trt_trace

using namespace trt_trace;

// Decodes buf[pos, len) packet by packet. state: a begin still waiting for its end (across calls).
// Returns the offset reached; *status says why it stopped (PfStatus).
TT_API int64_t tt_pf_parse(const uint8_t* buf, int64_t len, int64_t pos, const uint8_t* name_phase,
                           const uint8_t* ann_kind, const int64_t* track_engine, const uint32_t* track_tid,
                           int64_t n_tracks, uint64_t seq_id, uint32_t pid, OpenSlice* state, Slice* out,
                           int64_t cap, int64_t* n_out, int32_t* status) {
  const Tables t{name_phase, ann_kind, track_engine, track_tid, n_tracks, seq_id, pid};
  int64_t n = 0;
  *status = kNeedMore;
  while (pos < len) {
    if (n == cap) {
      *status = kFull;
      break;
    }
    if (buf[pos] != 0x0a) {
      *status = kGarbage;
      break;
    }
    Reader head{buf + pos + 1, buf + len};
    uint64_t size;
    if (!head.varint(size)) break;  // the length itself is cut: need more
    if (size > static_cast<uint64_t>(buf + len - head.p)) break;
    const uint8_t* pkt_end = head.p + size;
    uint64_t ts = 0, seq = 0;
    bool has_ts = false;
    const uint8_t *te_a = nullptr, *te_b = nullptr;
    const bool other = !for_each_field(Reader{head.p, pkt_end}, [&](uint64_t key, Reader& r) {
      switch (key) {
        case (8 << 3) | 0: return has_ts = r.varint(ts);
        case (10 << 3) | 0: return r.varint(seq);
        case (11 << 3) | 2: return r.bytes(te_a, te_b);
        default: return false;
      }
    });
    Event e;
    const bool decoded = !other && te_a != nullptr && decode_event(Reader{te_a, te_b}, t, e);
    const bool is_slice = decoded && e.has_type && (e.type == 1 || e.type == 2);
    const bool python_lane = decoded && e.has_track &&
                             ((e.track < static_cast<uint64_t>(t.n_tracks) && t.track_engine[e.track] == kPythonLane) ||
                              (e.track >= kInferenceUuidBase && e.track < kEngineUuidBase));
    if (python_lane && !state->open) {  // a layer slice's begin or end: Python pairs them
      *status = kOther;
      break;
    }
    if (!is_slice) {
      if (state->open || (decoded && e.has_type && (e.type == 1 || e.type == 2))) {
        *status = kNotOurs;  // a begin not followed by its end, or a slice packet we cannot read
        break;
      }
      if (decoded && !e.has_type) { *status = kNotOurs; break; }
      *status = kOther;
      break;
    }
    if (!has_ts || (t.seq_id && seq != t.seq_id) || !e.has_track) { *status = kNotOurs; break; }
    if (e.type == 1) {
      if (state->open || !e.has_name || e.name_iid >= 256 || t.name_phase[e.name_iid] == 0) {
        *status = kNotOurs;
        break;
      }
      if (e.track >= static_cast<uint64_t>(t.n_tracks) || t.track_engine[e.track] < 0) { *status = kNotOurs; break; }
      Slice& s = state->slice;
      std::memset(&s, 0, sizeof(s));
      Record& rec = s.rec;
      rec.begin_ns = static_cast<int64_t>(ts);
      rec.phase = static_cast<uint8_t>(t.name_phase[e.name_iid] - 1);
      rec.engine_id = static_cast<uint32_t>(t.track_engine[e.track]);
      rec.call_id = e.ann(kAnnCallId);
      rec.thread_id = static_cast<uint32_t>(e.ann(kAnnThread));
      rec.device = e.has(kAnnDevice) ? static_cast<uint16_t>(e.ann(kAnnDevice)) : kNoDevice;
      rec.stream = static_cast<uint32_t>(e.ann(kAnnStream));
      if (!e.has(kAnnCallId) || e.ann(kAnnThread) > 0xffffffffull ||
          (e.has(kAnnDevice) && e.ann(kAnnDevice) >= kNoDevice) || e.ann(kAnnStream) > 0xffffffffull ||
          e.flow_out > 1 || e.flow_in > 1 || (e.flow_out && e.flow_out_id != rec.call_id) ||
          (e.flow_in && e.flow_in_id != rec.call_id) ||
          (e.has(kAnnEngine) && e.ann(kAnnEngine) != static_cast<uint64_t>(rec.engine_id) + 1)) {
        *status = kNotOurs;
        break;
      }
      if (e.ann(kAnnError)) rec.flags |= kFlagError;
      if (e.ann(kAnnNested)) rec.flags |= kFlagNested;
      if (e.ann(kAnnCaptured)) rec.flags |= kFlagCaptured;
      if (e.ann(kAnnEngineStream)) rec.flags |= kFlagEngineStream;
      if (e.flow_out) rec.flags |= kFlagFlowOut;
      if (e.flow_in) rec.flags |= kFlagFlowIn;
      s.pid = t.pid;
      s.tid = t.track_tid[e.track];
      s.kind = kSliceX;
      s.has_device = e.has(kAnnDevice);
      state->open = 1;
      state->open_pos = pos;
      state->track = e.track;
    } else {
      if (!state->open || state->track != e.track || e.has_name || e.flow_out || e.flow_in) {
        *status = kNotOurs;
        break;
      }
      state->slice.rec.end_ns = static_cast<int64_t>(ts);
      out[n++] = state->slice;
      state->open = 0;
    }
    pos = pkt_end - buf;
  }
  *n_out = n;
  return pos;
}
