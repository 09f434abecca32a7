#include "session/chrome_json_trace.h"

#include <algorithm>

#include "format/chrome_json_events.h"
#include "common/json_text.h"
#include "format/inference_events.h"

namespace trt_trace {
namespace session {
namespace {
constexpr const char* kMetadataEvent = "trt_trace_metadata";
constexpr const char* kLayersTrack = "layers";

std::string lane_suffix(int64_t lane) { return lane == 0 ? "" : " (" + std::to_string(lane + 1) + ")"; }

// The format as the native writer makes it. A flight dump's head: the process's name and the start
// metadata (the object alone, as Python encoded it) with the dump's `flight` entry last.
std::unique_ptr<TraceFormat> make(FormatStart s) {
  std::string head = std::move(s.head);
  if (s.flight != nullptr) {
    const std::string pid = std::to_string(s.pid);
    std::string events = "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"tid\":0,\"args\":{\"name\":";
    append_json_string(events, s.process_name);
    events += "}},{\"ph\":\"M\",\"name\":\"" + std::string(kMetadataEvent) + "\",\"pid\":" + pid + ",\"tid\":0,\"args\":";
    const std::string start = head.size() >= 2 ? head : std::string("{}");
    events.append(start, 0, start.size() - 1);
    events += start.size() > 2 ? ",\"flight\":" : "\"flight\":";
    json_value::append_json(events, *s.flight);
    events += "}}";
    head = std::move(events);
  }
  return std::make_unique<ChromeJsonTrace>(std::move(s.file), std::move(head), s.pid, s.gpu_flows,
                                           std::move(s.names));
}
TRT_TRACE_REGISTER_FORMAT("json", &make);
}  // namespace

std::string ChromeJsonTrace::encode_metadata(const json_value::Value& dict) const { return json_value::to_json(dict); }

ChromeJsonTrace::ChromeJsonTrace(TraceFileOptions options, std::string process_head, int64_t pid, bool flows,
                                 NameSource names)
    : process_head_(std::move(process_head)), pid_(std::to_string(pid)), flows_(flows), names_(std::move(names)) {
  file_ = std::make_unique<TraceFile>(
      std::move(options),
      [this](int64_t) {  // every part opens the array with the process's metadata and every track's name
        std::string start = "[\n" + process_head_;
        if (!track_meta_.empty()) start += (process_head_.empty() ? "" : ",") + track_meta_;
        return start;
      },
      "\n]\n", ",\n",
      [this](const std::string& next_part, int64_t part, int64_t events) {  // the part says where the trace goes on
        std::string args = "{\"ended\":\"split\",\"next_part\":";
        append_json_string(args, next_part);
        args += ",\"part\":" + std::to_string(part) + ",\"events\":" + std::to_string(events) + "}";
        return metadata_event(args);
      });
}

std::string ChromeJsonTrace::metadata_event(const std::string& args_json) const {
  return std::string("{\"ph\":\"M\",\"name\":\"") + kMetadataEvent + "\",\"pid\":" + pid_ + ",\"tid\":0,\"args\":" +
         args_json + "}";
}

const std::string& ChromeJsonTrace::engine_name(uint32_t engine_id) {
  if (engine_id >= engine_names_.size()) engine_names_ = names_.engines();
  if (engine_id < engine_names_.size()) return engine_names_[engine_id];
  engine_fallback_ = "engine_" + std::to_string(engine_id);
  return engine_fallback_;
}

void ChromeJsonTrace::grow_body(size_t bytes) {
  // Never shrunk: resizing down and back up zero-filled the difference on every larger batch (megabytes
  // of memset per drain under a busy loop, tools/bench/bench_serving.py); the capacity was kept anyway.
  if (body_.size() < bytes) body_.resize(bytes);
}

void ChromeJsonTrace::refresh_engine_json(uint32_t top_engine_id) {
  if (engine_json_.size() < engine_names_.size() || top_engine_id >= engine_json_.size()) {
    engine_name(top_engine_id);  // refreshes the names
    engine_json_.clear();
    for (const auto& n : engine_names_) engine_json_.push_back(json_string(n));
    if (engine_json_.empty()) engine_json_.push_back("\"\"");
  }
}

void ChromeJsonTrace::track_events(uint64_t tid, const std::string& name, std::string* meta) {
  const std::string t = std::to_string(tid);
  std::string ev = "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + pid_ + ",\"tid\":" + t + ",\"args\":{\"name\":";
  append_json_string(ev, name);
  ev += "}},{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":" + pid_ + ",\"tid\":" + t +
        ",\"args\":{\"sort_index\":" + t + "}}";
  if (!meta->empty()) *meta += ",";
  *meta += ev;
}

void ChromeJsonTrace::write_calls(const Record* recs, size_t n) {
  book_.place(recs, n, &placed_);
  std::string meta;  // names of the tracks seen for the first time
  for (const Track& t : placed_.new_tracks) {
    const bool gpu = t.kind == TrackKind::kGpu;
    track_events(track_tid(t.engine_id, t.lane, gpu),
                 engine_name(t.engine_id) + (gpu ? " GPU" : "") + lane_suffix(t.lane), &meta);
  }
  if (!meta.empty()) track_meta_ += (track_meta_.empty() ? "" : ",") + meta;
  refresh_engine_json(top_engine(recs, n));
  size_t longest = 0;
  for (const auto& e : engine_json_) longest = std::max(longest, e.size());
  grow_body((kMaxEventBytes + longest + 2 * pid_.size()) * n);
  char* const begin = body_.data();
  JsonOut out{begin};
  for (size_t i = 0; i < n; ++i) {
    const Record& r = recs[i];
    if (r.phase > kLastPublicPhase) continue;
    const std::string& engine = r.engine_id < engine_json_.size() ? engine_json_[r.engine_id] : engine_json_[0];
    const bool gpu = is_gpu_span(r.phase);
    const uint64_t tid = track_tid(r.engine_id, placed_.lanes[i], gpu);
    if (out.p != begin) out.lit(",\n");
    append_slice_event(out, r, tid, pid_.data(), pid_.size(), engine.data(), engine.size());
    // The launch flow's ends (see ops/chrome_json_format.cpp for where they go and why).
    const bool gpu_slice = r.phase == static_cast<uint8_t>(Phase::kGpu);
    if (flows_ && (gpu_slice || launches_gpu(r))) {
      out.lit(",\n");
      append_flow_event(out, gpu_slice, r.call_id, flow_ts(r, gpu_slice), pid_.data(), pid_.size(), tid);
    }
  }
  file_->write(meta, begin, static_cast<size_t>(out.p - begin), static_cast<int64_t>(n), first_begin(recs, n));
}

void ChromeJsonTrace::refresh_layer_names(const LayerRecord* recs, size_t n) {
  uint32_t top = 0;
  for (size_t i = 0; i < n; ++i) top = std::max(top, recs[i].name_id);
  if (top < layer_names_.size()) return;
  layer_names_ = names_.layers();
  if (top >= layer_names_.size()) {
    const std::string why = "layer record with id " + std::to_string(top) + ", but only " +
                            std::to_string(layer_names_.size()) + " layer names are interned";
    throw WriteFailed(why, why);
  }
  for (size_t i = layer_json_.size(); i < layer_names_.size(); ++i) layer_json_.push_back(json_string(layer_names_[i]));
}

void ChromeJsonTrace::write_layers(const LayerRecord* recs, size_t n) {
  book_.place_layers(recs, n, &placed_);
  refresh_layer_names(recs, n);
  std::string meta;
  for (const Track& t : placed_.new_tracks) {
    track_events(layer_track_tid(t.engine_id, t.lane),
                 engine_name(t.engine_id) + " " + kLayersTrack + lane_suffix(t.lane), &meta);
  }
  if (!meta.empty()) track_meta_ += (track_meta_.empty() ? "" : ",") + meta;
  refresh_engine_json(top_engine(recs, n));
  size_t worst = 1;
  for (size_t i = 0; i < n; ++i) {
    const std::string& engine =
        recs[i].engine_id < engine_json_.size() ? engine_json_[recs[i].engine_id] : engine_json_[0];
    worst += kMaxLayerEventBytes + 2 * layer_json_[recs[i].name_id].size() + engine.size() + pid_.size();
  }
  grow_body(worst);
  char* const begin = body_.data();
  JsonOut out{begin};
  for (size_t i = 0; i < n; ++i) {
    const LayerRecord& r = recs[i];
    const std::string& engine = r.engine_id < engine_json_.size() ? engine_json_[r.engine_id] : engine_json_[0];
    if (out.p != begin) out.lit(",\n");
    append_layer_event(out, r, layer_track_tid(r.engine_id, placed_.lanes[i]), pid_.data(), pid_.size(), engine,
                       layer_json_[r.name_id]);
  }
  file_->write(meta, begin, static_cast<size_t>(out.p - begin), static_cast<int64_t>(n), first_begin(recs, n));
}

void ChromeJsonTrace::write_inferences(const InferenceRecord* recs, size_t n) {
  std::string meta;
  for (size_t i = 0; i < n; ++i) {
    auto [it, fresh] = inference_tids_.try_emplace(recs[i].thread_id, inference_track_tid(inference_tids_.size()));
    if (fresh) track_events(it->second, inference_track_name(recs[i].thread_id), &meta);
  }
  if (!meta.empty()) track_meta_ += (track_meta_.empty() ? "" : ",") + meta;
  grow_body((kMaxInferenceEventBytes + pid_.size()) * n);
  char* const begin = body_.data();
  JsonOut out{begin};
  for (size_t i = 0; i < n; ++i) {
    if (out.p != begin) out.lit(",\n");
    append_inference_event(out, recs[i], inference_tids_[recs[i].thread_id], pid_.data(), pid_.size());
  }
  file_->write(meta, begin, static_cast<size_t>(out.p - begin), static_cast<int64_t>(n), first_begin(recs, n));
}

}  // namespace session
}  // namespace trt_trace
