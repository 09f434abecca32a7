#include "session/lane_book.h"

#include <algorithm>
#include <numeric>
#include <unordered_set>

namespace trt_trace {
namespace session {
namespace {
constexpr uint8_t kCallPhase = static_cast<uint8_t>(Phase::kCall);
constexpr uint8_t kCallerWaitPhase = static_cast<uint8_t>(Phase::kCallerWait);
}  // namespace

int64_t LaneAssigner::place(uint32_t engine, int64_t begin, int64_t end) {
  std::vector<int64_t>& ends = lane_ends_[engine];
  size_t lane = 0;
  while (lane < ends.size() && ends[lane] > begin) ++lane;
  if (lane == ends.size()) {
    ends.push_back(end);
  } else {
    ends[lane] = end;
  }
  return static_cast<int64_t>(lane);
}

void LaneAssigner::assign(const Record* recs, const std::vector<uint32_t>& host, int64_t* lanes) {
  for (const uint32_t i : host) lanes[i] = 0;
  std::vector<uint32_t> order;
  for (const uint32_t i : host) {
    if (recs[i].phase == kCallPhase) order.push_back(i);
  }
  if (!order.empty()) {
    // By engine, then begin; ties keep batch order.
    std::stable_sort(order.begin(), order.end(), [recs](uint32_t a, uint32_t b) {
      if (recs[a].engine_id != recs[b].engine_id) return recs[a].engine_id < recs[b].engine_id;
      return recs[a].begin_ns < recs[b].begin_ns;
    });
    size_t lo = 0;
    while (lo < order.size()) {
      const uint32_t engine = recs[order[lo]].engine_id;
      size_t hi = lo + 1;
      bool overlapping = false;  // a call begins before the previous call of its engine (in begin order) ended
      while (hi < order.size() && recs[order[hi]].engine_id == engine) {
        if (recs[order[hi]].begin_ns < recs[order[hi - 1]].end_ns) overlapping = true;
        ++hi;
      }
      std::vector<int64_t>& ends = lane_ends_[engine];
      if (!overlapping && (ends.empty() || recs[order[lo]].begin_ns >= *std::max_element(ends.begin(), ends.end()))) {
        // The usual case: calls one after another, all on the engine's first lane.
        if (ends.empty()) {
          ends.push_back(recs[order[hi - 1]].end_ns);
        } else {
          ends[0] = recs[order[hi - 1]].end_ns;
        }
      } else {
        for (size_t k = lo; k < hi; ++k) {
          const Record& r = recs[order[k]];
          const int64_t lane = place(engine, r.begin_ns, r.end_ns);
          lanes[order[k]] = lane;
          if (lane != 0) {
            auto [it, inserted] = call_lane_.try_emplace(r.call_id, lane);
            if (inserted) {
              call_order_.push_back(r.call_id);
            } else {
              it->second = lane;  // (an id seen again keeps its place in the order)
            }
          }
        }
      }
      lo = hi;
    }
    while (call_lane_.size() > kRememberedCalls) {
      call_lane_.erase(call_order_.front());
      call_order_.pop_front();
    }
  }
  if (!call_lane_.empty()) {  // phases follow their call's lane (also a call drained in an earlier batch)
    for (const uint32_t i : host) {
      if (recs[i].phase == kCallPhase) continue;
      const auto it = call_lane_.find(recs[i].call_id);
      if (it != call_lane_.end()) lanes[i] = it->second;
    }
  }
}

void LaneAssigner::assign_spans(const Record* recs, const std::vector<uint32_t>& gpu, int64_t* lanes) {
  std::vector<uint32_t> order(gpu);
  std::stable_sort(order.begin(), order.end(),
                   [recs](uint32_t a, uint32_t b) { return recs[a].begin_ns < recs[b].begin_ns; });
  std::unordered_set<uint64_t> waited;  // calls with a caller-stream wait in the batch
  for (const uint32_t i : gpu) {
    if (recs[i].phase == kCallerWaitPhase) waited.insert(recs[i].call_id);
  }
  auto follows = [&](uint32_t i) { return recs[i].phase != kCallerWaitPhase && waited.count(recs[i].call_id) != 0; };
  for (const uint32_t i : order) {  // the waits and lone spans first, in begin order
    lanes[i] = waited.empty() || !follows(i) ? place(recs[i].engine_id, recs[i].begin_ns, recs[i].end_ns) : 0;
  }
  if (waited.empty()) return;
  std::unordered_map<uint64_t, int64_t> lane_of_call;  // an engine span goes on its wait's lane
  for (const uint32_t i : gpu) {
    if (recs[i].phase == kCallerWaitPhase) lane_of_call[recs[i].call_id] = lanes[i];
  }
  for (const uint32_t i : gpu) {
    if (follows(i)) lanes[i] = lane_of_call[recs[i].call_id];
  }
}

void LaneBook::note_track(uint32_t engine, int64_t lane, TrackKind kind, Placement* placed) {
  const auto key = std::make_tuple(engine, lane, static_cast<uint8_t>(kind));
  if (tracks_.count(key)) return;
  const auto index = static_cast<int64_t>(tracks_.size());
  tracks_.emplace(key, index);
  const bool first = engines_.insert(engine).second;
  placed->new_tracks.push_back(Track{engine, lane, kind, index, first});
}

int64_t LaneBook::track_index(uint32_t engine, int64_t lane, TrackKind kind) const {
  const auto found = tracks_.find(std::make_tuple(engine, lane, static_cast<uint8_t>(kind)));
  return found == tracks_.end() ? -1 : found->second;
}

void LaneBook::place(const Record* recs, size_t n, Placement* placed) {
  placed->lanes.assign(n, 0);
  placed->new_tracks.clear();
  host_idx_.clear();
  gpu_idx_.clear();
  for (size_t i = 0; i < n; ++i) (is_gpu_span(recs[i].phase) ? gpu_idx_ : host_idx_).push_back(static_cast<uint32_t>(i));
  int64_t* lanes = placed->lanes.data();
  host_.assign(recs, host_idx_, lanes);
  if (!gpu_idx_.empty()) gpu_.assign_spans(recs, gpu_idx_, lanes);
  // The batch's tracks, sorted by (lane, GPU, engine): new ones numbered in that order.
  std::vector<std::tuple<int64_t, uint32_t>> present;  // few per batch: a run of one track is added once
  for (size_t i = 0; i < n; ++i) {
    std::tuple<int64_t, uint32_t> key{lanes[i] * 2 + (is_gpu_span(recs[i].phase) ? 1 : 0), recs[i].engine_id};
    if (present.empty() || present.back() != key) present.push_back(key);
  }
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  for (const auto& [lane_gpu, engine] : present) {
    note_track(engine, lane_gpu / 2, lane_gpu % 2 ? TrackKind::kGpu : TrackKind::kHost, placed);
  }
}

void LaneBook::place_layers(const LayerRecord* recs, size_t n, Placement* placed) {
  placed->lanes.assign(n, 0);
  placed->new_tracks.clear();
  std::vector<size_t> starts;  // each profiled call's run of layers
  for (size_t i = 0; i < n; ++i) {
    if (i == 0 || recs[i].call_id != recs[i - 1].call_id) starts.push_back(i);
  }
  std::vector<size_t> by_begin(starts.size());
  std::iota(by_begin.begin(), by_begin.end(), 0);
  std::stable_sort(by_begin.begin(), by_begin.end(),
                   [&](size_t a, size_t b) { return recs[starts[a]].begin_ns < recs[starts[b]].begin_ns; });
  for (const size_t g : by_begin) {  // calls in time order
    const size_t lo = starts[g], hi = g + 1 < starts.size() ? starts[g + 1] : n;
    int64_t end = recs[lo].end_ns;
    for (size_t k = lo; k < hi; ++k) end = std::max(end, recs[k].end_ns);
    const int64_t lane = layers_.place(recs[lo].engine_id, recs[lo].begin_ns, end);
    for (size_t k = lo; k < hi; ++k) placed->lanes[k] = lane;
  }
  std::vector<std::tuple<int64_t, uint32_t>> present;
  for (size_t i = 0; i < n; ++i) {
    std::tuple<int64_t, uint32_t> key{placed->lanes[i], recs[i].engine_id};
    if (present.empty() || present.back() != key) present.push_back(key);
  }
  std::sort(present.begin(), present.end());
  present.erase(std::unique(present.begin(), present.end()), present.end());
  for (const auto& [lane, engine] : present) note_track(engine, lane, TrackKind::kLayers, placed);
}

namespace {
constexpr uint64_t kEngineTracks = 1000, kGpuLanes = 500, kLayerLanes = 950;
constexpr uint64_t kOverflowTracks = uint64_t{1} << 31, kLayerOverflow = uint64_t{1} << 30;
}  // namespace

uint64_t track_tid(uint32_t engine_id, int64_t lane, bool gpu) {
  const uint64_t limit = gpu ? kLayerLanes - kGpuLanes : kGpuLanes;  // GPU lanes stop below the layer tracks
  const auto l = static_cast<uint64_t>(lane);
  if (l >= limit) return kOverflowTracks + ((uint64_t{engine_id} * 2 + (gpu ? 1 : 0)) << 16) + l - limit;
  return uint64_t{engine_id} * kEngineTracks + (gpu ? kGpuLanes : 0) + l;
}

uint64_t layer_track_tid(uint32_t engine_id, int64_t lane) {
  const auto l = static_cast<uint64_t>(lane);
  const uint64_t limit = kEngineTracks - kLayerLanes;
  if (l >= limit) return kOverflowTracks + kLayerOverflow + ((uint64_t{engine_id} % (1 << 14)) << 16) + l - limit;
  return uint64_t{engine_id} * kEngineTracks + kLayerLanes + l;
}

}  // namespace session
}  // namespace trt_trace
