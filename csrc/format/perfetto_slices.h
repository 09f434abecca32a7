// The per-record packets of a native Perfetto trace: each record becomes a SLICE_BEGIN packet (name,
// debug annotations, flow ids) and a SLICE_END packet on the track its writer chose. Both writers use
// these loops: the session's native writer thread (session/perfetto_trace.h) and, through the ops
// (ops/perfetto_format.cpp, ops/layer_format.cpp), the Python writer of flight dumps
// (trt_trace/writers/perfetto_trace.py), so the two write the same bytes for the same records.
//
// Why hand-encoded: a protobuf object per event caps a writer at well under 1 M events/s; these loops
// write the wire format (format/protobuf_wire.h) with the field numbers of format/perfetto_fields.h into
// a buffer the caller sized with the *_max_bytes() functions. No torch, no allocation per record.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/record.h"

namespace trt_trace {
namespace perfetto_slices {

// Interned annotation names of a phase slice, in this order (trace_format.ANNOTATIONS).
enum SliceAnnotation { kEngine, kCallId, kThread, kDevice, kStream, kError, kNested, kCaptured, kEngineStream,
                       kNumSliceAnnotations };
// Interned annotation names of a layer slice, in this order.
enum LayerAnnotation { kLayerEngine, kLayerCallId, kLayerThread, kLayerDevice, kLayerName, kNumLayerAnnotations };

using SliceIids = std::array<uint64_t, kNumSliceAnnotations>;  // each in 1..127
using LayerIids = std::array<uint64_t, kNumLayerAnnotations>;  // each in 1..127

// The order slices are written in (see perfetto_slices.cpp); reused from batch to batch by the caller.
struct SliceOrder {
  int64_t begin;
  bool gpu;
  int64_t neg_end;
  uint8_t rank;
  uint32_t record;
  bool operator<(const SliceOrder& o) const;
};

// Bytes that slice_packets() / layer_packets() may write for n records.
size_t slice_packets_max_bytes(size_t n);
size_t layer_packets_max_bytes(size_t n);

// The phase records among recs[0..n) (records past the public phases are skipped) as begin/end packet pairs
// on sequence `seq` (1..127), record i on track track_uuids[i] (non-negative), ordered so that Perfetto
// nests them; flows: a flow from each launching enqueue to its call's GPU slice (flow id = call id). The
// event name is interned as phase + 1, the engine's name (the `engine` annotation) as engine id + 1.
// Writes at `out` (slice_packets_max_bytes(n) bytes available); returns the bytes written.
size_t slice_packets(const Record* recs, size_t n, const int64_t* track_uuids, uint64_t seq, const SliceIids& iids,
                     bool flows, std::vector<SliceOrder>* order, uint8_t* out);

// Layer records (all Phase::kLayer) as begin/end packet pairs: the name interned as name_iid_base + layer id
// (its `name_id`), annotations engine, call_id, thread, device and layer (the same string iid as
// the name). Writes at `out` (layer_packets_max_bytes(n) bytes available); returns the bytes written.
size_t layer_packets(const LayerRecord* recs, size_t n, const int64_t* track_uuids, uint64_t seq, const LayerIids& iids,
                     uint64_t name_iid_base, std::vector<uint32_t>* order, uint8_t* out);

}  // namespace perfetto_slices
}  // namespace trt_trace
