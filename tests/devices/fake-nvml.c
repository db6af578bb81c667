/* fake-nvml.c - a stand-in libnvidia-ml for the device-monitoring tests
 * (tests/devices/nvml.sh): the NVML entry points gpuprofd's NVML back end
 * uses, answering fixed values that the tests check exactly.
 *
 *   GPU 0 "Fake GPU A" GPU-fake-0000: util 37 %, memory util 12 %,
 *         2 GiB used of 80 GiB, 123456 mW, 45 C, SM 1980 MHz, memory
 *         2619 MHz, PCIe TX 1000 KB/s RX 2000 KB/s, ECC 3 corrected /
 *         1 uncorrected
 *   GPU 1 'Fake GPU B "sxm\5"' (quote and backslash: label escaping) GPU-fake-0001: util 80 %, memory util 40 %,
 *         10 GiB used of 80 GiB, 300000 mW, 60 C, SM 1755 MHz, memory
 *         2619 MHz, PCIe 0/0, ECC 0/0; one XID 79 event
 * Processes: the file named by $FAKE_NVML_PROCS, re-read at every call,
 * one "GPU PID MEM_BYTES SM_PERCENT MEM_PERCENT" line per process.
 * Layouts follow the public nvml.h (see daemon/devices-nvml.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gi, ci; } nvmlProcessInfo_t;
typedef struct { unsigned pid; unsigned long long timeStamp; unsigned smUtil, memUtil, encUtil, decUtil; } nvmlProcessUtilizationSample_t;
typedef struct { nvmlDevice_t device; unsigned long long eventType, eventData; unsigned gi, ci; } nvmlEventData_t;

enum { OK = 0, E_INVALID = 2, E_NOT_SUPPORTED = 3, E_INSUFFICIENT = 7, E_TIMEOUT = 10 };
#define GIB (1024ull * 1024 * 1024)

static struct fake_gpu {
  const char *name, *uuid;
  unsigned util, mutil;
  unsigned long long used, total;
  unsigned mw, temp, sm, mem, tx, rx;
  unsigned long long ecc_c, ecc_u;
} gpus[2] = {
    {"Fake GPU A", "GPU-fake-0000", 37, 12, 2 * GIB, 80 * GIB, 123456, 45, 1980, 2619, 1000, 2000, 3, 1},
    {"Fake GPU B \"sxm\\5\"", "GPU-fake-0001", 80, 40, 10 * GIB, 80 * GIB, 300000, 60, 1755, 2619, 0, 0, 0, 0},
};
static int inited, xid_pending = 1, evset_dummy;

static int idx(nvmlDevice_t d) {
  long i = (long)(d) - 1;
  return i >= 0 && i < 2 ? (int)i : -1;
}
#define DEV(d)                                                                                     \
  int i = idx(d);                                                                                  \
  if (!inited || i < 0) return E_INVALID;

nvmlReturn_t nvmlInit_v2(void) { inited = 1; return OK; }
nvmlReturn_t nvmlShutdown(void) { inited = 0; return OK; }
const char *nvmlErrorString(nvmlReturn_t r) { return r == OK ? "Success" : "Fake NVML error"; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *n) { *n = 2; return inited ? OK : E_INVALID; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t *d) {
  if (!inited || i >= 2) return E_INVALID;
  *d = (nvmlDevice_t)(long)(i + 1);
  return OK;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *b, unsigned n) { DEV(d); snprintf(b, n, "%s", gpus[i].name); return OK; }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *b, unsigned n) { DEV(d); snprintf(b, n, "%s", gpus[i].uuid); return OK; }
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
  DEV(d);
  u->gpu = gpus[i].util;
  u->memory = gpus[i].mutil;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
  DEV(d);
  m->total = gpus[i].total;
  m->used = gpus[i].used + 512ull * 1024 * 1024; /* v1 counts reserved memory too */
  m->free = m->total - m->used;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
  DEV(d);
  if (m->version != ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24))) return E_INVALID;
  m->total = gpus[i].total;
  m->reserved = 512ull * 1024 * 1024;
  m->used = gpus[i].used;
  m->free = m->total - m->reserved - m->used;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned *mw) { DEV(d); *mw = gpus[i].mw; return OK; }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int s, unsigned *t) {
  DEV(d);
  if (s != 0) return E_INVALID;
  *t = gpus[i].temp;
  return OK;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned *mhz) {
  DEV(d);
  if (type == 1) *mhz = gpus[i].sm;
  else if (type == 2) *mhz = gpus[i].mem;
  else return E_INVALID;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int c, unsigned *kbs) {
  DEV(d);
  *kbs = c == 0 ? gpus[i].tx : gpus[i].rx;
  return OK;
}
/* NVLink data counters (fields 138/139, KiB, cumulative, all links with
 * scopeId UINT_MAX): GPU A's grow by 1024 / 2048 KiB per call and its
 * driver timestamp by 1 s, i.e. exactly 1 MiB/s and 2 MiB/s; GPU B has no
 * NVLink (NOT_SUPPORTED). */
typedef struct {
  unsigned fieldId, scopeId;
  long long timestamp, latencyUsec;
  int valueType, nvmlReturn;
  union { double d; unsigned long long ull; } value;
} fake_field_t;
static unsigned long long nvl_calls;
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, fake_field_t *v) {
  DEV(d);
  if (i == 0) nvl_calls++;
  for (int k = 0; k < n; k++) {
    v[k].timestamp = (long long)nvl_calls * 1000000;
    v[k].latencyUsec = 0;
    v[k].valueType = 3; /* NVML_VALUE_TYPE_UNSIGNED_LONG_LONG */
    int known = v[k].fieldId == 138 || v[k].fieldId == 139;
    if (i != 0 || !known || v[k].scopeId != 0xffffffffu) {
      v[k].nvmlReturn = E_NOT_SUPPORTED;
      continue;
    }
    v[k].nvmlReturn = OK;
    v[k].value.ull = nvl_calls * (v[k].fieldId == 138 ? 1024ull : 2048ull);
  }
  return OK;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *n) {
  DEV(d);
  if (counter != 0) return E_INVALID;
  *n = type == 0 ? gpus[i].ecc_c : gpus[i].ecc_u;
  return OK;
}

/* the processes of GPU i from $FAKE_NVML_PROCS */
typedef struct { unsigned pid; unsigned long long mem; unsigned sm, mu; } fproc_t;
static unsigned procs_of(int i, fproc_t *out, unsigned max) {
  const char *path = getenv("FAKE_NVML_PROCS");
  FILE *f = path ? fopen(path, "r") : NULL;
  unsigned n = 0;
  int g;
  fproc_t p;
  if (!f) return 0;
  while (fscanf(f, "%d %u %llu %u %u", &g, &p.pid, &p.mem, &p.sm, &p.mu) == 5)
    if (g == i && n < max) out[n++] = p;
  fclose(f);
  return n;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *count, nvmlProcessInfo_t *info) {
  DEV(d);
  fproc_t p[64];
  unsigned n = procs_of(i, p, 64);
  if (n > *count) {
    *count = n;
    return E_INSUFFICIENT;
  }
  for (unsigned k = 0; k < n; k++) {
    memset(&info[k], 0, sizeof info[k]);
    info[k].pid = p[k].pid;
    info[k].usedGpuMemory = p[k].mem;
  }
  *count = n;
  return OK;
}
/* As the real driver (seen on an H100): a history of samples, HIST per
 * process (more than 64 in all for two processes), not in time order
 * across processes; utilization NULL or too small a buffer ->
 * INSUFFICIENT_SIZE with the count.  The newest sample of each pid has the
 * file's values, the older ones 99 %, so a reader that takes any but the
 * newest is caught. */
#define HIST 40u
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *s, unsigned *count,
                                             unsigned long long last_seen) {
  DEV(d);
  fproc_t p[64];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long now_us = (unsigned long long)ts.tv_sec * 1000000ull + (unsigned long long)ts.tv_nsec / 1000;
  unsigned n = procs_of(i, p, 64);
  if (now_us <= last_seen) n = 0;
  if (s == NULL || HIST * n > *count) {
    *count = HIST * n;
    return E_INSUFFICIENT;
  }
  for (unsigned h = 0; h < HIST; h++)
    for (unsigned k = 0; k < n; k++) {
      unsigned age = h == 0 ? 0 : h; /* h 0: the newest, written first */
      nvmlProcessUtilizationSample_t *x = &s[h * n + (h % 2 ? n - 1 - k : k)];
      memset(x, 0, sizeof *x);
      x->pid = p[k].pid;
      x->timeStamp = now_us - 100ull * age;
      x->smUtil = h == 0 ? p[k].sm : 99;
      x->memUtil = h == 0 ? p[k].mu : 99;
    }
  *count = HIST * n;
  return OK;
}
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *s) { *s = (nvmlEventSet_t)&evset_dummy; return OK; }
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t s) {
  DEV(d);
  (void)s;
  return types == 0x8ull ? OK : E_NOT_SUPPORTED;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t s, nvmlEventData_t *ev, unsigned timeout_ms) {
  (void)s, (void)timeout_ms;
  if (!xid_pending) return E_TIMEOUT;
  xid_pending = 0;
  memset(ev, 0, sizeof *ev);
  ev->device = (nvmlDevice_t)2L; /* GPU 1 */
  ev->eventType = 0x8ull;
  ev->eventData = 79;
  return OK;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t s) { (void)s; return OK; }
