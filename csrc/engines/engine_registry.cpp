#include "engines/engine_registry.h"

#include <ATen/core/class_type.h>
#include <ATen/core/function.h>

#include <pthread.h>

#include <array>
#include <sstream>

namespace trt_trace {

namespace {

std::atomic<EngineRegistry::FirstEngineListener> g_first_engine_listener{nullptr};

std::string engine_str(const c10::IValue& engine) {
  try {
    const auto& obj = engine.toObjectRef();
    torch::jit::Function* fn = obj.type()->findMethod("__str__");
    if (fn == nullptr) return std::string();
    std::vector<c10::IValue> stack{engine};
    fn->run(stack);
    return stack.empty() || !stack.back().isString() ? std::string() : stack.back().toStringRef();
  } catch (const std::exception&) {
    return std::string();
  }
}

}  // namespace

std::string parse_engine_name(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  static const std::string kPrefix = "  Name: ";
  while (std::getline(lines, line)) {
    if (line.compare(0, kPrefix.size(), kPrefix) == 0) {
      std::string name = line.substr(kPrefix.size());
      if (!name.empty() && name.back() == '\r') name.pop_back();
      if (!name.empty()) return name;
    }
  }
  return "unnamed_engine";
}

uint16_t parse_engine_outputs(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  bool in_outputs = false;
  unsigned n = 0;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!in_outputs) {
      in_outputs = line == "  Outputs: [";
    } else if (line == "  ]") {
      break;
    } else if (line.compare(0, 8, "    id: ") == 0) {
      ++n;
    }
  }
  return static_cast<uint16_t>(n > 0xffff ? 0 : n);
}

EngineRegistry* EngineRegistry::create() {
  auto* r = new EngineRegistry();  // outlives worker threads at exit
  // A forked child must not inherit the lock held by a parent thread.
  pthread_atfork([] { EngineRegistry::instance().mutex_.lock(); },
                 [] { EngineRegistry::instance().mutex_.unlock(); },
                 [] { EngineRegistry::instance().mutex_.unlock(); });
  return r;
}

uint32_t EngineRegistry::miss(c10::ivalue::Object* obj, const c10::IValue& engine, LookupCache& cache,
                              uint64_t epoch) {
  if (cache.epoch != epoch) {
    cache.lines = {};
    cache.epoch = epoch;
  }
  CacheLine& line = cache.lines[cache_slot(obj)];
  if (line.obj == obj) return line.id;
  const uint32_t id = register_engine(obj, engine);
  line.obj = obj;
  line.id = id;
  return id;
}

uint32_t EngineRegistry::register_engine(c10::ivalue::Object* obj, const c10::IValue& engine) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(obj);
    if (it != live_.end()) return it->second.id;
  }
  // Outside the lock: __str__ runs the engine's own code.
  const std::string text = engine_str(engine);
  const std::string name = parse_engine_name(text);
  const uint16_t outputs = parse_engine_outputs(text);
  uint32_t id = 0;
  bool first_engine = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = live_.find(obj);
    if (it != live_.end()) return it->second.id;  // another thread won the race
    sweep_locked();  // engines that died since the last sweep free their memory now
    auto d = dormant_.find(obj);
    if (d != dormant_.end()) {
      if (names_[d->second] == name) {
        // The same name at the same address: the engine keeps its id. But with no reference held since
        // release_all() this may be another object in a dead engine's memory (a model loaded again,
        // perhaps under another runtime version): what calls taught about the old one (its output count,
        // its conversions) may not hold, and a wrong learnt "a conversion follows each output" keeps
        // `outputs` open over every later call's enqueue. It is learnt again, from this object.
        id = d->second;
        shapes_[id] = OutputShape{outputs, Conversions::kUnknown};
      }
      dormant_.erase(d);
    }
    if (id == 0) {
      id = static_cast<uint32_t>(names_.size());
      names_.push_back(name);
      shapes_.push_back(OutputShape{outputs, Conversions::kUnknown});
      first_engine = id == 1;
    }
    live_.emplace(obj, Entry{c10::weak_intrusive_ptr<c10::ivalue::Object>(engine.toObject()), id});
  }
  if (first_engine) {
    if (FirstEngineListener listener = g_first_engine_listener.load()) listener();
  }
  return id;
}

uint32_t EngineRegistry::register_named(const std::string& name) {
  uint32_t id = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    id = static_cast<uint32_t>(names_.size());
    names_.push_back(name);
    shapes_.push_back(OutputShape{});
  }
  if (id == 1) {
    if (FirstEngineListener listener = g_first_engine_listener.load()) listener();
  }
  return id;
}

void EngineRegistry::set_first_engine_listener(FirstEngineListener listener) noexcept {
  g_first_engine_listener.store(listener);
}

void EngineRegistry::sweep() {
  std::lock_guard<std::mutex> lock(mutex_);
  sweep_locked();
}

void EngineRegistry::sweep_locked() {
  std::vector<c10::weak_intrusive_ptr<c10::ivalue::Object>> dead;
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second.ref.expired()) {
      dead.push_back(std::move(it->second.ref));
      it = live_.erase(it);
    } else {
      ++it;
    }
  }
  if (dead.empty()) return;
  // Invalidate every thread's cache before the memory can be reused.
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  dead.clear();  // frees the objects' memory
}

void EngineRegistry::release_all() {
  std::vector<c10::weak_intrusive_ptr<c10::ivalue::Object>> refs;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [addr, entry] : live_) {
    if (!entry.ref.expired()) dormant_[addr] = entry.id;
    refs.push_back(std::move(entry.ref));
  }
  live_.clear();
  epoch_.fetch_add(1, std::memory_order_acq_rel);
  refs.clear();
}

std::vector<std::string> EngineRegistry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return names_;
}

std::string EngineRegistry::name(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id < names_.size() ? names_[id] : std::string();
}

EngineRegistry::OutputShape EngineRegistry::output_shape(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return id < shapes_.size() ? shapes_[id] : OutputShape{};
}

void EngineRegistry::learn_conversions(uint32_t id, Conversions seen) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id < shapes_.size()) shapes_[id].conversions = seen;
}

void EngineRegistry::learn_outputs(uint32_t id, uint16_t allocated) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (id < shapes_.size()) shapes_[id].outputs = allocated;
}

size_t EngineRegistry::live_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return live_.size();
}

}  // namespace trt_trace
