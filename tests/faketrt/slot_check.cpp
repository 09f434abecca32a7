// Build-time check of faketrt_abi.h's slot numbers (run by build.sh; exits 1 on a mismatch).
#include <cstdio>
#include <cstdlib>

#include "slot_check.h"

namespace faketrt {
void not_implemented(const char* interface, int slot) noexcept {
  std::fprintf(stderr, "faketrt: %s slot %d is not implemented\n", interface, slot);
  std::abort();
}
}  // namespace faketrt

int main() {
  const int bad = faketrt::check_slots(stderr);
  if (bad == 0) std::printf("faketrt: every vtable slot where TensorRT 10.15 has it\n");
  return bad == 0 ? 0 : 1;
}
