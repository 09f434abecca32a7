// Small stable ids for engine objects, with their names interned once.
//
// An engine is identified by its torchbind object (c10::ivalue::Object). The
// registry keeps a weak reference to each registered object: while it holds
// one, the object's memory cannot be reused, so an address seen again is the
// same engine. Dead entries are swept (the weak reference dropped, so the
// allocator may reuse the address) only after bumping a global epoch that
// invalidates every thread's lookup cache: a new engine at a reused address
// always misses the cache and gets a fresh id.
//
// The name is parsed from the engine's __str__ (second line "  Name: <name>")
// once per engine object, never per call.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/macros/Macros.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/leaked.h"

namespace trt_trace {

class EngineRegistry : public Leaked<EngineRegistry> {
 public:
  // A calling thread's cache of ids: direct-mapped, address -> id, valid for one
  // registry epoch. 1024 lines (16 KiB per thread): a model's engines, even
  // hundreds called in turn, mostly stay cached; a miss costs the registry's lock
  // and a hash look-up. The hook keeps it in its per-thread state
  // (hook/call_scope.h), so the call's one thread-local look-up finds it.
  struct CacheLine {
    const void* obj;
    uint32_t id;
  };
  static constexpr size_t kCacheLines = 1024;
  struct LookupCache {
    uint64_t epoch;
    std::array<CacheLine, kCacheLines> lines;
  };

  // Id (>= 1) for the engine object in `engine`; registers it on first sight.
  // Hot path, inline: a cache hit costs one atomic load and a compare. `cache`
  // belongs to the calling thread (zero-initialised before its first use).
  uint32_t id_for(const c10::IValue& engine, LookupCache& cache) {
    if (C10_UNLIKELY(!engine.isObject())) return 0;
    c10::ivalue::Object* obj = &engine.toObjectRef();
    const uint64_t epoch = epoch_.load(std::memory_order_acquire);
    CacheLine& line = cache.lines[cache_slot(obj)];
    if (C10_LIKELY(cache.epoch == epoch && line.obj == obj)) return line.id;
    return miss(obj, engine, cache, epoch);
  }

  // A new id for an engine known by its name only (a Python engine object, hook/python_calls.h): its
  // caller keeps the id for the object's life. Not on the hot path.
  uint32_t register_named(const std::string& name);

  // Names indexed by id; names()[0] is "" (ids start at 1).
  std::vector<std::string> names() const;
  std::string name(uint32_t id) const;

  // Drops weak references to engines that died. Cheap when none did.
  void sweep();
  // Drops every weak reference (tracing stopped: hold no memory of the user's).
  // An engine seen again at the same address with the same name keeps its id; what calls taught about
  // it (OutputShape below) is learnt again, as the object may be another one in the same memory.
  void release_all();

  size_t live_count() const;

  // A function called once, on the thread of the call that registers the first engine, after the
  // registry's lock is released: the metrics endpoint starts then (metrics/metrics_server.h). It
  // must not block (it runs inside that engine call) and must not throw.
  using FirstEngineListener = void (*)() noexcept;
  static void set_first_engine_listener(FirstEngineListener listener) noexcept;

  // What the live phase ranges (NVTX, torch.profiler scopes: hook/call_scope.h) need to open `enqueue` once
  // per call: how many outputs the engine allocates (from its __str__'s Outputs list; 0: unknown) and whether
  // a conversion follows each allocation (2.11's .to(dtype); kUnknown until a call showed it). Locked: asked
  // only by calls that open live ranges. The count is also learnt from a whole call (learn_outputs): 2.13 and
  // later list no outputs before the engine's first call (its execution context is made then), and 2.14
  // allocates no aliased output (it is bound to an input), so fewer than the list has.
  enum class Conversions : uint8_t { kUnknown, kNone, kAfterEach };
  struct OutputShape {
    uint16_t outputs = 0;
    Conversions conversions = Conversions::kUnknown;
  };
  OutputShape output_shape(uint32_t id) const;
  void learn_conversions(uint32_t id, Conversions seen);
  void learn_outputs(uint32_t id, uint16_t allocated);

 private:
  friend class Leaked<EngineRegistry>;
  static EngineRegistry* create();  // with its fork handlers
  static size_t cache_slot(const void* p) {
    // Objects are 16-byte aligned; fold in higher bits.
    const auto a = reinterpret_cast<uintptr_t>(p);
    return ((a >> 4) ^ (a >> 12)) % kCacheLines;
  }
  // A cache miss (or a stale cache): looks the object up, registering it on first sight.
  uint32_t miss(c10::ivalue::Object* obj, const c10::IValue& engine, LookupCache& cache, uint64_t epoch);
  uint32_t register_engine(c10::ivalue::Object* obj, const c10::IValue& engine);
  void sweep_locked();

  struct Entry {
    c10::weak_intrusive_ptr<c10::ivalue::Object> ref;
    uint32_t id;
  };
  mutable std::mutex mutex_;
  std::unordered_map<const void*, Entry> live_;        // by object address
  std::unordered_map<const void*, uint32_t> dormant_;  // address -> id after release_all()
  std::vector<std::string> names_{""};
  std::vector<OutputShape> shapes_{OutputShape{}};  // by id, as names_
  std::atomic<uint64_t> epoch_{1};
};

// "  Name: foo" -> "foo"; falls back to "unnamed_engine" when the text has no
// such line. Exposed for tests.
std::string parse_engine_name(const std::string& str_text);
// The number of entries ("    id: N") in the text's "  Outputs: [" list; 0 when it has none.
uint16_t parse_engine_outputs(const std::string& str_text);

}  // namespace trt_trace
