// Bulk encoding of drained records as Perfetto TrackEvent packets, for the Python writer of flight dumps
// (trt_trace/io/writers/perfetto_trace.py), which owns everything rare: track descriptors, interned
// names, the clock snapshot, metadata, the file. This op writes only the per-record slices, with the
// loop the session's native writer uses too (format/perfetto_slices.h). Field numbers are constants in
// format/perfetto_fields.h; tests compare them with the descriptors of the `perfetto` package's protos
// (perfetto_field_numbers below).
//
// Output: a run of Trace.packet fields (tag 0x0A, length, TracePacket), i.e. bytes that can be
// appended to a trace file as they are. Each record becomes a SLICE_BEGIN packet (name, debug
// annotations, flow ids) and a SLICE_END packet on the track the caller chose for it.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/record.h"
#include "format/perfetto_fields.h"
#include "format/perfetto_slices.h"
#include "ops/output_buffer.h"

namespace trt_trace {
namespace {

using namespace perfetto_fields;  // field numbers (format/perfetto_fields.h, checked against the protos)

// records: uint8 [n * 40]; track_uuids: int64 [n], the track of each record; annotation_iids: the
// interned names (perfetto_slices::SliceAnnotation's order); flows: flow ids from each launching enqueue
// to its GPU slice. Returns (buffer, n): the packets in the first n bytes of buffer, which is `out` when
// given and large enough, else a new one (ops/output_buffer.h).
std::tuple<at::Tensor, int64_t> perfetto_slice_packets(const at::Tensor& records, const at::Tensor& track_uuids,
                                              int64_t seq_id, const std::vector<int64_t>& annotation_iids,
                                              bool flows, const std::optional<at::Tensor>& out_buffer) {
  TORCH_CHECK(records.dtype() == at::kByte && records.is_contiguous() && records.numel() % sizeof(Record) == 0,
              "perfetto_slice_packets: records must be contiguous uint8 of whole records");
  const int64_t n = records.numel() / static_cast<int64_t>(sizeof(Record));
  TORCH_CHECK(track_uuids.dtype() == at::kLong && track_uuids.numel() == n,
              "perfetto_slice_packets: one int64 track uuid per record");
  TORCH_CHECK(annotation_iids.size() == perfetto_slices::kNumSliceAnnotations, "perfetto_slice_packets: ",
              static_cast<int>(perfetto_slices::kNumSliceAnnotations), " annotation name iids expected");
  TORCH_CHECK(seq_id > 0 && seq_id < 128, "perfetto_slice_packets: the sequence id must be in 1..127");
  perfetto_slices::SliceIids iids{};
  for (size_t a = 0; a < iids.size(); ++a) {
    TORCH_CHECK(annotation_iids[a] > 0 && annotation_iids[a] < 128, "perfetto_slice_packets: iids must be in 1..127");
    iids[a] = static_cast<uint64_t>(annotation_iids[a]);
  }
  const at::Tensor uuid_c = track_uuids.contiguous();
  const auto* rec = reinterpret_cast<const Record*>(records.data_ptr<uint8_t>());
  const int64_t* uuid = uuid_c.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) {  // the records written (the others are skipped)
    TORCH_CHECK(rec[i].phase > kLastPublicPhase || uuid[i] >= 0,
                "perfetto_slice_packets: track uuids must be non-negative");
  }
  // Kept from batch to batch (one drainer thread formats): no batch-sized allocation here either.
  thread_local std::vector<perfetto_slices::SliceOrder> order;
  at::Tensor result = output_buffer(out_buffer, perfetto_slices::slice_packets_max_bytes(static_cast<size_t>(n)),
                                    "perfetto_slice_packets");
  const size_t written = perfetto_slices::slice_packets(rec, static_cast<size_t>(n), uuid, static_cast<uint64_t>(seq_id),
                                                        iids, flows, &order, result.data_ptr<uint8_t>());
  return {result, static_cast<int64_t>(written)};
}

// The field numbers every Perfetto encoder uses (format/perfetto_fields.h), by proto name, with the wire type
// each is written with (-1: an enum value), for the test that checks them against the descriptors.
std::tuple<std::vector<std::string>, std::vector<int64_t>, std::vector<int64_t>> perfetto_field_numbers() {
  std::vector<std::string> names;
  std::vector<int64_t> numbers, wires;
  for (const FieldNumber& f : kPerfettoFields) {
    names.emplace_back(f.name);
    numbers.push_back(f.number);
    wires.push_back(f.wire);
  }
  return {names, numbers, wires};
}

}  // namespace
}  // namespace trt_trace

TORCH_LIBRARY_FRAGMENT(trt_trace, m) {
  m.def("_perfetto_slice_packets(Tensor records, Tensor track_uuids, int seq_id, int[] annotation_iids, "
        "bool flows, Tensor? out=None) -> (Tensor, int)",
        &trt_trace::perfetto_slice_packets);
  m.def("_perfetto_field_numbers() -> (str[], int[], int[])", &trt_trace::perfetto_field_numbers);
}
