#include "session/perfetto_trace.h"

#include <algorithm>
#include <ctime>
#include <utility>

#include "common/phases.h"
#include "format/inference_events.h"
#include "format/perfetto_track_packets.h"

namespace trt_trace {
namespace session {
namespace {

namespace pp = perfetto_packets;
namespace ps = perfetto_slices;

// The trace's layout: trt_trace/writers/perfetto_trace.py (its constants and docstring), trace_format.py.
constexpr uint32_t kSequence = 1;
constexpr uint64_t kProcessUuid = 1, kMetadataUuid = 2, kEnginesUuid = 3, kFirstLaneUuid = 16;
constexpr uint64_t kEngineUuidBase = uint64_t{1} << 32;
constexpr uint64_t kMetadataNameIid = kNumPublicPhases + 1;  // event names: phase + 1, then the metadata instant
constexpr int32_t kGpuRank = 1 << 20;                          // GPU lanes after the host lanes under their engine
constexpr int32_t kLayersRank = 2 * kGpuRank;                  // layer tracks after the GPU lanes
constexpr uint64_t kLayerIidBase = uint64_t{1} << 32;           // a layer's name: event name and annotation string
// Inference tracks (docs/inference.md): under the process, uuids past any lane's and below the engines'.
constexpr uint64_t kInferenceUuidBase = uint64_t{1} << 31;
constexpr int32_t kInferenceRank = -(1 << 20);  // before the engines where the UI honors the rank
constexpr const char* kMetadataEvent = "trt_trace_metadata";
constexpr const char* kMetadataTrack = "trt_trace metadata";
constexpr const char* kEnginesTrack = "engines";
constexpr const char* kLayersTrack = "layers";
// The slices' annotation names (trace_format.ANNOTATIONS), interned as index + 1; a layer's "layer" after them.
const std::vector<std::string> kAnnotations = {"engine", "call_id", "thread",   "device",       "stream",
                                               "error",  "nested",  "captured", "engine_stream"};
constexpr uint64_t kLayerAnnotationIid = ps::kNumSliceAnnotations + 1;
static_assert(ps::kNumSliceAnnotations == 9, "a name per slice annotation");


uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

std::string lane_suffix(int64_t lane) { return lane == 0 ? "" : " (" + std::to_string(lane + 1) + ")"; }

// The format as the native writer makes it; a flight dump's start instant gains its `flight` entry last.
std::unique_ptr<TraceFormat> make(FormatStart s) {
  PerfettoStart start;
  start.pid = s.pid;
  start.process_name = std::move(s.process_name);
  start.start_annotations = std::move(s.head);
  if (s.flight != nullptr) start.start_annotations += pp::debug_annotations({{"flight", *s.flight}});
  start.start_ns = s.start_ns;
  start.flows = s.gpu_flows;
  return std::make_unique<PerfettoTrace>(std::move(s.file), std::move(start), std::move(s.names));
}
TRT_TRACE_REGISTER_FORMAT("perfetto", &make);
}  // namespace

std::string PerfettoTrace::encode_metadata(const json_value::Value& dict) const {
  return pp::debug_annotations(dict.entries);
}

PerfettoTrace::PerfettoTrace(TraceFileOptions options, PerfettoStart start, NameSource names)
    : start_(std::move(start)), names_(std::move(names)) {
  std::vector<std::string> phase_names(std::begin(kPhaseNames), std::end(kPhaseNames));
  pp::sequence_start(start_tracks_, kSequence, phase_names, kMetadataEvent, kAnnotations);
  pp::process_descriptor(start_tracks_, kSequence, kProcessUuid, static_cast<int32_t>(start_.pid), start_.process_name);
  pp::track_descriptor(start_tracks_, kSequence, kEnginesUuid, kEnginesTrack, kProcessUuid, 0, true);
  pp::track_descriptor(start_tracks_, kSequence, kMetadataUuid, kMetadataTrack, kProcessUuid, 1, false);
  file_ = std::make_unique<TraceFile>(
      std::move(options), [this](int64_t first_ns) { return part_start(first_ns); }, "", "",
      [this](const std::string& next_part, int64_t part, int64_t events) {
        // A part the trace goes on from ends at its own last record (stamped before the batch that splits it).
        std::string out;
        pp::metadata_instant(out, kSequence, static_cast<uint64_t>(last_end_ns_), kMetadataUuid, kMetadataNameIid,
                             pp::split_end_annotations(next_part, part, static_cast<uint64_t>(events)));
        return out;
      });  // opens the file unless lazy (may throw)
}

void PerfettoTrace::clock_snapshot(std::string& out) const {
  if (!start_.clocks) {
    pp::clock_snapshot(out, kSequence);
    return;
  }
  const std::array<uint64_t, 3> c = start_.clocks();
  pp::clock_snapshot(out, kSequence, c[0], c[1], c[2]);
}

std::string PerfettoTrace::part_start(int64_t first_ns) {
  std::string out;
  clock_snapshot(out);
  out += start_tracks_;
  pp::metadata_instant(out, kSequence, static_cast<uint64_t>(first_ns), kMetadataUuid, kMetadataNameIid,
                       start_.start_annotations);
  out += tracks_;
  return out;
}

std::string PerfettoTrace::closing(const TraceEnd& end) {
  int64_t ts = end.monotonic_ns ? end.monotonic_ns : static_cast<int64_t>(clock_ns(CLOCK_MONOTONIC));
  if (last_end_ns_) ts = std::min(ts, last_end_ns_);  // the timeline ends with the calls
  std::string out;
  clock_snapshot(out);  // a second one lets a reader correct wall-clock drift over a long run
  pp::metadata_instant(out, kSequence, static_cast<uint64_t>(ts), kMetadataUuid, kMetadataNameIid, end.record);
  return out;
}

int64_t PerfettoTrace::empty_part_ns(const TraceEnd& end) const {
  if (start_.start_ns) return start_.start_ns;
  return end.monotonic_ns ? end.monotonic_ns : static_cast<int64_t>(clock_ns(CLOCK_MONOTONIC));
}

const std::string& PerfettoTrace::engine_name(uint32_t engine_id) {
  if (engine_id >= engine_names_.size()) engine_names_ = names_.engines();
  if (engine_id < engine_names_.size()) return engine_names_[engine_id];
  engine_fallback_ = "engine_" + std::to_string(engine_id);
  return engine_fallback_;
}

void PerfettoTrace::descriptors(const Track& track, std::string* out) {
  const size_t from = out->size();
  const uint64_t engine_uuid = kEngineUuidBase + track.engine_id;
  if (track.first_of_engine) {
    pp::track_descriptor(*out, kSequence, engine_uuid, engine_name(track.engine_id), kEnginesUuid,
                         static_cast<int32_t>(track.engine_id), true, uint64_t{track.engine_id} + 1);
  }
  const char* kind = track.kind == TrackKind::kLayers ? kLayersTrack : track.kind == TrackKind::kGpu ? "GPU" : "host";
  const int32_t rank = track.kind == TrackKind::kLayers ? kLayersRank : track.kind == TrackKind::kGpu ? kGpuRank : 0;
  pp::track_descriptor(*out, kSequence, kFirstLaneUuid + static_cast<uint64_t>(track.index),
                       std::string(kind) + lane_suffix(track.lane), engine_uuid,
                       rank + static_cast<int32_t>(track.lane), false);
  tracks_.append(*out, from, std::string::npos);
}

template <typename Kind>
void PerfettoTrace::track_uuids(const Kind* recs, size_t n, bool layers) {
  uuids_.resize(n);
  uint32_t engine = 0;
  int64_t lane = -1;
  TrackKind kind = TrackKind::kHost;
  int64_t uuid = 0;
  for (size_t i = 0; i < n; ++i) {  // runs of one track are common: one look-up per run
    const TrackKind k = layers ? TrackKind::kLayers : is_gpu_span(recs[i].phase) ? TrackKind::kGpu : TrackKind::kHost;
    if (recs[i].engine_id != engine || placed_.lanes[i] != lane || k != kind) {
      engine = recs[i].engine_id;
      lane = placed_.lanes[i];
      kind = k;
      uuid = static_cast<int64_t>(kFirstLaneUuid) + book_.track_index(engine, lane, kind);
    }
    uuids_[i] = uuid;
  }
}

uint8_t* PerfettoTrace::body(size_t bytes) {
  if (body_.size() < bytes) body_.resize(bytes);  // never shrunk (see ChromeJsonTrace::grow_body)
  return body_.data();
}

void PerfettoTrace::write_calls(const Record* recs, size_t n) {
  book_.place(recs, n, &placed_);
  std::string new_tracks;
  for (const Track& t : placed_.new_tracks) descriptors(t, &new_tracks);
  track_uuids(recs, n, false);
  ps::SliceIids iids{};
  for (size_t a = 0; a < iids.size(); ++a) iids[a] = a + 1;
  uint8_t* out = body(ps::slice_packets_max_bytes(n));
  const size_t len = ps::slice_packets(recs, n, uuids_.data(), kSequence, iids, start_.flows, &order_, out);
  file_->write(new_tracks, reinterpret_cast<const char*>(out), len, static_cast<int64_t>(n), first_begin(recs, n));
  // After the write: a part that ends before this batch (split) is stamped at its own last record.
  last_end_ns_ = std::max(last_end_ns_, last_end(recs, n));
}

void PerfettoTrace::write_layers(const LayerRecord* recs, size_t n) {
  book_.place_layers(recs, n, &placed_);
  // The names of layer ids new to this trace, interned with the tracks (every part interns them again).
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, recs[i].name_id);
  std::string new_tracks;
  if (top >= layer_names_.size()) {
    const size_t first = layer_names_.size();
    layer_names_ = names_.layers();
    if (top >= layer_names_.size()) {
      const std::string why = "layer record with id " + std::to_string(top) + ", but only " +
                              std::to_string(layer_names_.size()) + " layer names are interned";
      throw WriteFailed(why, why);
    }
    std::vector<uint32_t> ids;
    for (size_t i = first; i < layer_names_.size(); ++i) ids.push_back(static_cast<uint32_t>(i));
    if (!ids.empty()) {
      pp::layer_names(new_tracks, kSequence, ids, layer_names_, kLayerIidBase, kLayerAnnotationIid);
      tracks_ += new_tracks;
    }
  }
  for (const Track& t : placed_.new_tracks) descriptors(t, &new_tracks);
  track_uuids(recs, n, true);
  const ps::LayerIids iids{1, 2, 3, 4, kLayerAnnotationIid};  // engine, call_id, thread, device, layer
  uint8_t* out = body(ps::layer_packets_max_bytes(n));
  const size_t len = ps::layer_packets(recs, n, uuids_.data(), kSequence, iids, kLayerIidBase, &layer_order_, out);
  file_->write(new_tracks, reinterpret_cast<const char*>(out), len, static_cast<int64_t>(n), first_begin(recs, n));
  last_end_ns_ = std::max(last_end_ns_, last_end(recs, n));
}

void PerfettoTrace::write_inferences(const InferenceRecord* recs, size_t n) {
  std::string new_tracks;
  for (size_t i = 0; i < n; ++i) {
    const size_t index = inference_uuids_.size();
    auto [it, fresh] = inference_uuids_.try_emplace(recs[i].thread_id, kInferenceUuidBase + index);
    if (!fresh) continue;
    const size_t from = new_tracks.size();
    pp::track_descriptor(new_tracks, kSequence, it->second, inference_track_name(recs[i].thread_id), kProcessUuid,
                         kInferenceRank + static_cast<int32_t>(index), false);
    tracks_.append(new_tracks, from, std::string::npos);
  }
  inference_body_.clear();
  for (size_t i = 0; i < n; ++i) {
    const InferenceRecord& r = recs[i];
    // Annotation name iids: trace_format.ANNOTATIONS' call_id, thread, error (index + 1).
    pp::inference_slice(inference_body_, kSequence, static_cast<uint64_t>(r.begin_ns), static_cast<uint64_t>(r.end_ns),
                        inference_uuids_[r.thread_id], kInferenceName, inference_kind_name(r.kind), r.call_id,
                        r.thread_id, (r.flags & kFlagError) != 0, 2, 3, 6);
  }
  file_->write(new_tracks, inference_body_.data(), inference_body_.size(), static_cast<int64_t>(n), first_begin(recs, n));
  last_end_ns_ = std::max(last_end_ns_, last_end(recs, n));
}

}  // namespace session
}  // namespace trt_trace
