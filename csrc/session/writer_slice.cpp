#include "session/writer_slice.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace trt_trace::session {
namespace {

// The kernel's struct sched_attr, first version (48 bytes); glibc declares neither it nor the calls before 2.41.
struct SchedAttr {
  uint32_t size;
  uint32_t sched_policy;
  uint64_t sched_flags;
  int32_t sched_nice;
  uint32_t sched_priority;
  uint64_t sched_runtime;  // for SCHED_OTHER and SCHED_BATCH: the slice asked for (6.12+)
  uint64_t sched_deadline;
  uint64_t sched_period;
};
static_assert(sizeof(SchedAttr) == 48, "sched_attr's first version is 48 bytes");

}  // namespace

bool ask_for_writer_slice() {
#if defined(SYS_sched_getattr) && defined(SYS_sched_setattr)
  SchedAttr attr;
  std::memset(&attr, 0, sizeof attr);
  // The thread's own policy and nice value (inherited from the thread that started the session) are kept: read first.
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof attr, 0) != 0) return false;
  if (attr.sched_policy != SCHED_OTHER && attr.sched_policy != SCHED_BATCH) return false;  // real-time or idle: as is
  attr.size = sizeof attr;
  attr.sched_flags = 0;
  attr.sched_runtime = static_cast<uint64_t>(kWriterSliceNs);
  return syscall(SYS_sched_setattr, 0, &attr, 0) == 0;
#else
  return false;
#endif
}

}  // namespace trt_trace::session
