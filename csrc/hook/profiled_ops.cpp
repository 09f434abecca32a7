// The torch.profiler side of the phase model: while a profiled call runs, the op callbacks around the
// profiler's own (integrations/profiler_scopes.h installs them) tell the call scope where each top-level op
// begins and ends, so that the phase scopes close before an op's event begins and open after it ends.
#include <cstring>
#include <memory>

#include "hook/call_scope.h"
#include "integrations/profiler_scopes.h"

namespace trt_trace {
namespace {

// What an op starting at the call's top level is, as the op observer will classify what it sees in it
// (op_observer.h): by the profiler's name for it, which is the schema's name without its overload.
// aten::to is the composite that 2.11's `.to(dtype)` of an output dispatches around its _to_copy.
OpKind profiled_op_kind(const at::RecordFunction& fn) noexcept {
  const char* name = fn.name();
  if (name == nullptr || std::strncmp(name, "aten::", 6) != 0) return OpKind::kOther;
  name += 6;
  if (std::strcmp(name, "view") == 0) return OpKind::kInputView;
  if (std::strcmp(name, "empty") == 0 || std::strcmp(name, "empty_strided") == 0) return OpKind::kAllocation;
  if (std::strcmp(name, "_to_copy") == 0 || std::strcmp(name, "to") == 0) return OpKind::kConversion;
  return OpKind::kOther;
}

// Runs before the profiler's start callback: the op's event has not begun yet.
}  // namespace

std::unique_ptr<at::ObserverContext> detail::before_profiled_op(const at::RecordFunction& fn) {
  if (CallScope* call = CallScope::current()) call->profiled_op_start(profiled_op_kind(fn));
  return nullptr;
}

// Runs after the profiler's end callback: the op's event has ended.
void detail::after_profiled_op(const at::RecordFunction&, at::ObserverContext*) {
  if (CallScope* call = CallScope::current()) call->profiled_op_end();
}

}  // namespace trt_trace
