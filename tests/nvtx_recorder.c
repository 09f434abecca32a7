/* A minimal NVTX injection library for tests: NVTX loads it through NVTX_INJECTION64_PATH (as it
 * loads Nsight Systems) and it appends every domain creation, string registration, range push and
 * pop to the file named by NVTX_RECORDER_LOG, one line each:
 *   push <domain> <message> <payload type> <payload>
 *   pop <domain>
 * Built by tests/test_nvtx.py with the C compiler and the nvidia-nvtx headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>

#include <nvtx3/nvToolsExt.h>

static FILE* g_log;
static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;

struct named { char* name; };

static nvtxDomainHandle_t domain_create(const char* name) {
  struct named* d = malloc(sizeof *d);
  d->name = strdup(name);
  return (nvtxDomainHandle_t)d;
}

static nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const char* s) {
  (void)domain;
  struct named* h = malloc(sizeof *h);
  h->name = strdup(s);
  return (nvtxStringHandle_t)h;
}

static const char* domain_name(nvtxDomainHandle_t d) { return d ? ((struct named*)d)->name : "(default)"; }

static int range_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const char* msg = "?";
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) msg = ((struct named*)a->message.registered)->name;
  else if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) msg = a->message.ascii;
  pthread_mutex_lock(&g_mutex);
  fprintf(g_log, "push\t%s\t%s\t%d\t%llu\n", domain_name(domain), msg, (int)a->payloadType,
          (unsigned long long)a->payload.ullValue);
  fflush(g_log);
  pthread_mutex_unlock(&g_mutex);
  return 0;
}

static int range_pop(nvtxDomainHandle_t domain) {
  pthread_mutex_lock(&g_mutex);
  fprintf(g_log, "pop\t%s\n", domain_name(domain));
  fflush(g_log);
  pthread_mutex_unlock(&g_mutex);
  return 0;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const char* path = getenv("NVTX_RECORDER_LOG");
  g_log = fopen(path ? path : "/dev/null", "a");
  if (!g_log) return 0;
  const NvtxExportTableCallbacks* callbacks =
      (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = 0;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)domain_create;
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)register_string;
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)range_push;
  *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)range_pop;
  return 1;
}
