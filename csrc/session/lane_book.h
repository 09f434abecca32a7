// Which track each record of a drained batch goes on, so that every track nests (Perfetto's rule for
// JSON slices): the native writer's track book. The same decisions, batch by batch, as the Python
// TrackBook (trt_trace/io/tracks.py) made for the writers before the native writer took their place:
//
// * Host records follow their call. One engine's calls normally share its first lane; calls of one
//   engine that overlap in time go greedily (in begin order) to the first lane whose last call has
//   ended, and their phases follow them, also when drained in a later batch (the last
//   kRememberedCalls calls not on lane 0 are remembered).
// * GPU spans get lanes of their own, placed one by one in begin order, except that a call's engine
//   span goes on the lane of its caller-stream wait, which contains it.
// * Layer records (TRT_TRACE_LAYERS): a profiled call's layers lie end to end on one lane of the
//   engine's layer track; calls that would overlap there go to the next lane.
// * Tracks are numbered in the order they first appear; within a batch, new tracks appear sorted by
//   (lane, GPU, engine) (host and GPU) or (lane, engine) (layers).
//
// Drainer thread only (the native writer's lock guards it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "common/record.h"

namespace trt_trace {
namespace session {

enum class TrackKind : uint8_t { kHost = 0, kGpu = 1, kLayers = 2 };

struct Track {
  uint32_t engine_id;
  int64_t lane;
  TrackKind kind;
  int64_t index;          // 0, 1, ...: the order of first appearance
  bool first_of_engine;   // the engine's first track
};

// Lanes of one kind of track, per engine.
class LaneAssigner {
 public:
  static constexpr size_t kRememberedCalls = 8192;  // calls whose phases may still come in a later batch

  // Host records: lanes[i] for each i in `host` (indices into recs, in batch order).
  void assign(const Record* recs, const std::vector<uint32_t>& host, int64_t* lanes);
  // GPU records: lanes[i] for each i in `gpu`.
  void assign_spans(const Record* recs, const std::vector<uint32_t>& gpu, int64_t* lanes);
  // The first lane of `engine` whose last slice ended by `begin` (or a new lane); it now ends at `end`.
  int64_t place(uint32_t engine, int64_t begin, int64_t end);

 private:
  std::unordered_map<uint32_t, std::vector<int64_t>> lane_ends_;  // engine -> end ns of each lane's last slice
  std::unordered_map<uint64_t, int64_t> call_lane_;                // calls not on lane 0 ...
  std::deque<uint64_t> call_order_;                                // ... in the order placed (oldest dropped first)
};

// A batch's placement: each record's lane (host and GPU records) or layer lane, and the tracks new in it.
struct Placement {
  std::vector<int64_t> lanes;     // per record of the batch
  std::vector<Track> new_tracks;  // in the order of first appearance
};

class LaneBook {
 public:
  // Host and GPU records of a batch (no layer records): lanes in `placed.lanes`, new tracks appended.
  void place(const Record* recs, size_t n, Placement* placed);
  // A batch's layer records (all Phase::kLayer): their layer-track lanes, new layer tracks appended.
  void place_layers(const LayerRecord* recs, size_t n, Placement* placed);
  // The Track::index of a track placed before (the Perfetto writer's track uuids follow it); -1 if none.
  int64_t track_index(uint32_t engine, int64_t lane, TrackKind kind) const;

 private:
  void note_track(uint32_t engine, int64_t lane, TrackKind kind, Placement* placed);

  LaneAssigner host_, gpu_, layers_;
  std::map<std::tuple<uint32_t, int64_t, uint8_t>, int64_t> tracks_;  // (engine, lane, kind) -> index
  std::set<uint32_t> engines_;
  std::vector<uint32_t> host_idx_, gpu_idx_;  // reused from batch to batch
};

// Chrome JSON track ids (tids), which the JSON writer writes and the readers rebuild (trt_trace/io/tracks.py
// track_ids: engine id * 1000 + lane, + 500 + lane for GPU lanes, + 950 + lane for layer lanes; lanes past
// those go above 2**31).
uint64_t track_tid(uint32_t engine_id, int64_t lane, bool gpu);
uint64_t layer_track_tid(uint32_t engine_id, int64_t lane);

}  // namespace session
}  // namespace trt_trace
