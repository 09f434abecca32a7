// The byte buffer a bulk formatter writes into: the caller's own, reused from batch to batch, or,
// where the caller passes none or one too small, a new one (at least twice the old size) that the
// caller keeps for the next batch. Formatters return (buffer, bytes written).
//
// The writers keep one buffer per trace: a long run then formats without batch-sized
// allocations, which would fragment the C heap (RSS growing with run length). The buffer is
// replaced rather than resized because a tensor whose memory numpy has seen cannot be resized.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <cstddef>
#include <optional>

namespace trt_trace {

inline at::Tensor output_buffer(const std::optional<at::Tensor>& out, size_t bytes, const char* op) {
  size_t old = 0;
  if (out.has_value() && out->defined()) {
    TORCH_CHECK(out->device().is_cpu() && out->dtype() == at::kByte && out->dim() == 1 && out->is_contiguous(),
                op, ": out must be a one-dimensional contiguous CPU uint8 tensor");
    old = static_cast<size_t>(out->numel());
    if (old >= bytes) return *out;
  }
  return at::empty({static_cast<int64_t>(std::max(bytes, 2 * old))}, at::kByte);
}

}  // namespace trt_trace
