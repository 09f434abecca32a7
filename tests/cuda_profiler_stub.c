/* cudaProfilerStart / cudaProfilerStop for tests on a machine without CUDA: LD_PRELOADed into a traced process,
 * it is the cudaProfilerStart that the process's global symbols name (as libcudart's are in a CUDA build of
 * torch) and appends one line per call to the file named by CUDA_PROFILER_STUB_LOG:
 *   start <CLOCK_MONOTONIC ns>
 *   stop <CLOCK_MONOTONIC ns>
 * (the clock of the trace's timestamps). CUDA_PROFILER_STUB_ERROR=N makes both return cudaError_t N.
 * Built by tests/test_cuda_profiler_range.py with the C compiler. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int record(const char* what) {
  const char* path = getenv("CUDA_PROFILER_STUB_LOG");
  if (path != NULL) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    FILE* log = fopen(path, "a");
    if (log != NULL) {
      fprintf(log, "%s %lld\n", what, (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
      fclose(log);
    }
  }
  const char* error = getenv("CUDA_PROFILER_STUB_ERROR");
  return error != NULL ? atoi(error) : 0;
}

int cudaProfilerStart(void) { return record("start"); }
int cudaProfilerStop(void) { return record("stop"); }
