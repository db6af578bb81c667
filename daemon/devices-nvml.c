/* devices-nvml.c - NVIDIA GPUs through NVML, loaded at run time.
 *
 * No build dependency: libnvidia-ml is opened with dlopen ("[devices]
 * nvml_library", default "libnvidia-ml.so.1", the name the driver
 * installs) and the few entry points used here are declared below from
 * NVIDIA's public NVML API reference (nvml.h of the CUDA toolkit, "NVML
 * API Reference Guide"): types, enum values and struct layouts exactly as
 * documented there.  A missing entry point only clears its field
 * (present bits); a missing library or a failing nvmlInit_v2 disables the
 * back end with the reason.  Sampler thread only (devices.c).
 */
#include <dlfcn.h>
#include <limits.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "devices.h"

/* ---- from nvml.h (public API) ---- */
typedef int nvmlReturn_t;
enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10,
};
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
  unsigned int gpu, memory; /* percent over the driver's last sample period */
} nvmlUtilization_t;
typedef struct {
  unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;
typedef struct {
  unsigned int version; /* nvmlMemory_v2 */
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2 ((unsigned)sizeof(nvmlMemory_v2_t) | (2u << 24)) /* NVML_STRUCT_VERSION */
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory; /* bytes; NVML_VALUE_NOT_AVAILABLE (~0) */
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t; /* nvmlProcessInfo_v2_t, the layout of ..._v3 */
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp; /* us */
  unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType, eventData; /* eventData: the XID */
  unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0 };
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull
#define NVML_VALUE_NOT_AVAILABLE (~0ull)
/* Field values (nvmlDeviceGetFieldValues).  NVLink data throughput: the
 * payload bytes sent / received, cumulative counters in KiB; scopeId names
 * the link, UINT_MAX asks for the sum over all links. */
enum { NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139 };
typedef struct {
  unsigned int fieldId, scopeId;
  long long timestamp;   /* us, when the driver read the value */
  long long latencyUsec; /* how old the value was then */
  int valueType;         /* nvmlValueType_t */
  nvmlReturn_t nvmlReturn;
  union {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    signed long long sllVal;
  } value;
} nvmlFieldValue_t;

/* PCIe throughput is averaged by the driver over 20 ms, spent inside the
 * call: read it at most this often whatever the sampling rate. */
#define PCIE_PERIOD_NS 1000000000ull
/* Most per-process utilization samples read per call. */
#define PUTIL_MAX 4096u

typedef struct {
  void *lib;
  nvmlReturn_t (*init)(void);
  nvmlReturn_t (*shutdown)(void);
  const char *(*error_string)(nvmlReturn_t);
  nvmlReturn_t (*count)(unsigned *);
  nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *);
  nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned);
  nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *);
  nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *);
  nvmlReturn_t (*mem2)(nvmlDevice_t, nvmlMemory_v2_t *);
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned *);
  nvmlReturn_t (*temp)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*pcie)(nvmlDevice_t, int, unsigned *);
  nvmlReturn_t (*fields)(nvmlDevice_t, int, nvmlFieldValue_t *);
  nvmlReturn_t (*ecc)(nvmlDevice_t, int, int, unsigned long long *);
  nvmlReturn_t (*procs)(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *);
  nvmlReturn_t (*putil)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *,
                        unsigned long long);
  nvmlReturn_t (*ev_create)(nvmlEventSet_t *);
  nvmlReturn_t (*ev_register)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*ev_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
  nvmlReturn_t (*ev_free)(nvmlEventSet_t);
  nvmlEventSet_t evset;
  uint32_t n;
  struct {
    nvmlDevice_t h;
    int xid_ok;
    uint64_t xids, last_xid;
    unsigned long long putil_seen; /* us: newest process sample taken */
    int putil_logged;
    uint64_t pcie_ns;              /* last PCIe read */
    uint64_t tx, rx;
    int pcie_ok;
    int nvl_ok;                    /* the NVLink fields answer */
    long long nvl_ts;              /* us: driver time of the last read, 0 none */
    unsigned long long nvl_tx, nvl_rx; /* KiB at nvl_ts */
    uint64_t nvl_txr, nvl_rxr;     /* bytes/s over the last two reads */
    int nvl_rate;                  /* nvl_txr/nvl_rxr hold a rate */
  } dev[GPD_DEV_MAX];
} nvml_t;

static void *sym(void *lib, const char *a, const char *b) {
  void *f = dlsym(lib, a);
  if (f == NULL && b)
    f = dlsym(lib, b);
  return f;
}

static const char *nvml_err(nvml_t *n, nvmlReturn_t r) {
  const char *s = n->error_string ? n->error_string(r) : NULL;
  return s ? s : "unknown NVML error";
}

static void nvml_close(void *st) {
  nvml_t *n = st;
  if (n == NULL)
    return;
  if (n->evset && n->ev_free)
    n->ev_free(n->evset);
  if (n->shutdown)
    n->shutdown();
  if (n->lib)
    dlclose(n->lib);
  free(n);
}

static int nvml_open(void **st, const char *path, char *why, size_t whylen) {
  int err;
  nvmlReturn_t r;
  unsigned count = 0;
  nvml_t *n = calloc(1, sizeof *n);
  if (n == NULL)
    return -ENOMEM;
  n->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (n->lib == NULL) {
    const char *e = dlerror();
    snprintf(why, whylen, "cannot load %s: %s", path, e ? e : "?");
    err = GPD_ENOVENDOR;
    goto fail;
  }
  n->init = sym(n->lib, "nvmlInit_v2", "nvmlInit");
  n->shutdown = sym(n->lib, "nvmlShutdown", NULL);
  n->error_string = sym(n->lib, "nvmlErrorString", NULL);
  n->count = sym(n->lib, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  n->handle = sym(n->lib, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  n->name = sym(n->lib, "nvmlDeviceGetName", NULL);
  n->uuid = sym(n->lib, "nvmlDeviceGetUUID", NULL);
  n->util = sym(n->lib, "nvmlDeviceGetUtilizationRates", NULL);
  n->mem = sym(n->lib, "nvmlDeviceGetMemoryInfo", NULL);
  n->mem2 = sym(n->lib, "nvmlDeviceGetMemoryInfo_v2", NULL);
  n->power = sym(n->lib, "nvmlDeviceGetPowerUsage", NULL);
  n->temp = sym(n->lib, "nvmlDeviceGetTemperature", NULL);
  n->clock = sym(n->lib, "nvmlDeviceGetClockInfo", NULL);
  n->pcie = sym(n->lib, "nvmlDeviceGetPcieThroughput", NULL);
  n->fields = sym(n->lib, "nvmlDeviceGetFieldValues", NULL);
  n->ecc = sym(n->lib, "nvmlDeviceGetTotalEccErrors", NULL);
  n->procs = sym(n->lib, "nvmlDeviceGetComputeRunningProcesses_v3",
                 "nvmlDeviceGetComputeRunningProcesses_v2");
  n->putil = sym(n->lib, "nvmlDeviceGetProcessUtilization", NULL);
  n->ev_create = sym(n->lib, "nvmlEventSetCreate", NULL);
  n->ev_register = sym(n->lib, "nvmlDeviceRegisterEvents", NULL);
  n->ev_wait = sym(n->lib, "nvmlEventSetWait_v2", NULL);
  n->ev_free = sym(n->lib, "nvmlEventSetFree", NULL);
  if (!n->init || !n->count || !n->handle) {
    snprintf(why, whylen, "%s lacks nvmlInit_v2/nvmlDeviceGetCount_v2/"
                          "nvmlDeviceGetHandleByIndex_v2", path);
    err = GPD_ENOVENDOR;
    goto fail;
  }
  if ((r = n->init()) != NVML_SUCCESS) {
    snprintf(why, whylen, "nvmlInit_v2 failed: %s (%d)", nvml_err(n, r), r);
    n->shutdown = NULL; /* not initialised: nothing to shut down */
    err = GPD_EVENDOR;
    goto fail;
  }
  if ((r = n->count(&count)) != NVML_SUCCESS) {
    snprintf(why, whylen, "nvmlDeviceGetCount_v2 failed: %s (%d)", nvml_err(n, r), r);
    err = GPD_EVENDOR;
    goto fail;
  }
  if (count > GPD_DEV_MAX) {
    GPD_WARN("devices: NVML reports %u GPUs, monitoring the first %u", count, GPD_DEV_MAX);
    count = GPD_DEV_MAX;
  }
  for (unsigned i = 0; i < count; i++) {
    if ((r = n->handle(i, &n->dev[n->n].h)) != NVML_SUCCESS) {
      GPD_WARN("devices: nvmlDeviceGetHandleByIndex_v2(%u): %s", i, nvml_err(n, r));
      continue;
    }
    n->dev[n->n].pcie_ok = n->pcie != NULL;
    n->dev[n->n].nvl_ok = n->fields != NULL;
    n->n++;
  }
  /* XID errors (nvmlEventTypeXidCriticalError): counted as they come */
  if (n->ev_create && n->ev_register && n->ev_wait && n->ev_create(&n->evset) == NVML_SUCCESS) {
    for (uint32_t i = 0; i < n->n; i++)
      n->dev[i].xid_ok =
          n->ev_register(n->dev[i].h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->evset) == NVML_SUCCESS;
  }
  *st = n;
  return 0;
fail:
  nvml_close(n);
  return err;
}

static uint32_t nvml_count(void *st) { return ((nvml_t *)st)->n; }

static int nvml_describe(void *st, uint32_t i, char *name, size_t nlen, char *uuid, size_t ulen) {
  nvml_t *n = st;
  char buf[128];
  if (i >= n->n)
    return -EINVAL;
  snprintf(name, nlen, "NVIDIA GPU %u", i);
  snprintf(uuid, ulen, "nvml-%u", i);
  if (n->name && n->name(n->dev[i].h, buf, sizeof buf) == NVML_SUCCESS) {
    buf[sizeof buf - 1] = 0;
    snprintf(name, nlen, "%s", buf);
  }
  if (n->uuid && n->uuid(n->dev[i].h, buf, sizeof buf) == NVML_SUCCESS) {
    buf[sizeof buf - 1] = 0;
    snprintf(uuid, ulen, "%s", buf);
  }
  return 0;
}

/* Drain the XID event set without waiting; count per device. */
static void drain_xids(nvml_t *n) {
  nvmlEventData_t ev;
  for (int k = 0; k < 256 && n->evset; k++) {
    memset(&ev, 0, sizeof ev);
    if (n->ev_wait(n->evset, &ev, 0) != NVML_SUCCESS)
      break;
    for (uint32_t i = 0; i < n->n; i++)
      if (n->dev[i].h == ev.device) {
        n->dev[i].xids++;
        n->dev[i].last_xid = ev.eventData;
      }
  }
}

static gpd_dev_proc_t *proc_slot(gpd_dev_sample_t *s, unsigned pid) {
  for (uint32_t k = 0; k < s->nprocs; k++)
    if (s->procs[k].pid == (int32_t)pid)
      return &s->procs[k];
  if (s->nprocs == GPD_DEV_MAX_PROCS) {
    s->nprocs_dropped++;
    return NULL;
  }
  gpd_dev_proc_t *p = &s->procs[s->nprocs++];
  memset(p, 0, sizeof *p);
  p->pid = (int32_t)pid;
  p->uid = (uid_t)-1;
  p->mem_bytes = UINT64_MAX;
  return p;
}


/* NVLink payload throughput of device i from two reads of the cumulative
 * counters, over the driver's own timestamps.  A device whose fields are
 * not supported (no NVLink, or an old driver) is not asked again: its
 * samples carry no NVLink value ("-", not 0). */
static void nvlink_read(nvml_t *n, uint32_t i, gpd_dev_sample_t *s) {
  nvmlFieldValue_t f[2] = {{.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scopeId = UINT_MAX},
                           {.fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, .scopeId = UINT_MAX}};
  nvmlReturn_t r = n->fields(n->dev[i].h, 2, f);
  if (r != NVML_SUCCESS || f[0].nvmlReturn != NVML_SUCCESS || f[1].nvmlReturn != NVML_SUCCESS) {
    if (r == NVML_ERROR_NOT_SUPPORTED || f[0].nvmlReturn == NVML_ERROR_NOT_SUPPORTED ||
        f[1].nvmlReturn == NVML_ERROR_NOT_SUPPORTED)
      n->dev[i].nvl_ok = 0;
    return;
  }
  unsigned long long tx = f[0].value.ullVal, rx = f[1].value.ullVal;
  long long ts = f[0].timestamp;
  if (n->dev[i].nvl_ts && ts > n->dev[i].nvl_ts && tx >= n->dev[i].nvl_tx && rx >= n->dev[i].nvl_rx) {
    double dt = (double)(ts - n->dev[i].nvl_ts) / 1e6;
    n->dev[i].nvl_txr = (uint64_t)((double)(tx - n->dev[i].nvl_tx) * 1024.0 / dt);
    n->dev[i].nvl_rxr = (uint64_t)((double)(rx - n->dev[i].nvl_rx) * 1024.0 / dt);
    n->dev[i].nvl_rate = 1;
  }
  if (ts != n->dev[i].nvl_ts) { /* the same driver reading again: keep the older base */
    n->dev[i].nvl_ts = ts;
    n->dev[i].nvl_tx = tx;
    n->dev[i].nvl_rx = rx;
  }
  if (n->dev[i].nvl_rate) {
    s->nvlink_tx_bps = n->dev[i].nvl_txr;
    s->nvlink_rx_bps = n->dev[i].nvl_rxr;
    s->present |= GPD_DF_NVLINK;
  }
}

static int nvml_sample(void *st, uint32_t i, gpd_dev_sample_t *s) {
  nvml_t *n = st;
  if (i >= n->n)
    return -EINVAL;
  nvmlDevice_t h = n->dev[i].h;
  unsigned v;
  unsigned long long c1, c2;
  int answered = 0;
  if (i == 0)
    drain_xids(n);
  nvmlUtilization_t u;
  if (n->util && n->util(h, &u) == NVML_SUCCESS) {
    s->util_gpu = u.gpu;
    s->util_mem = u.memory;
    s->present |= GPD_DF_UTIL_GPU | GPD_DF_UTIL_MEM;
  }
  /* _v2 is what nvidia-smi shows as memory.used (reserved memory apart) */
  nvmlMemory_v2_t m2 = {.version = NVML_MEMORY_V2};
  nvmlMemory_t m1;
  if (n->mem2 && n->mem2(h, &m2) == NVML_SUCCESS) {
    s->mem_used = m2.used;
    s->mem_total = m2.total;
    s->present |= GPD_DF_MEM;
  } else if (n->mem && n->mem(h, &m1) == NVML_SUCCESS) {
    s->mem_used = m1.used;
    s->mem_total = m1.total;
    s->present |= GPD_DF_MEM;
  }
  if (n->power && n->power(h, &v) == NVML_SUCCESS) {
    s->power_w = v / 1000.0; /* mW */
    s->present |= GPD_DF_POWER;
  }
  if (n->temp && n->temp(h, NVML_TEMPERATURE_GPU, &v) == NVML_SUCCESS) {
    s->temp_c = v;
    s->present |= GPD_DF_TEMP;
  }
  if (n->clock && n->clock(h, NVML_CLOCK_SM, &v) == NVML_SUCCESS) {
    s->clock_sm_mhz = v;
    s->present |= GPD_DF_CLOCK_SM;
  }
  if (n->clock && n->clock(h, NVML_CLOCK_MEM, &v) == NVML_SUCCESS) {
    s->clock_mem_mhz = v;
    s->present |= GPD_DF_CLOCK_MEM;
  }
  if (n->dev[i].pcie_ok && (n->dev[i].pcie_ns == 0 || s->t_ns - n->dev[i].pcie_ns >= PCIE_PERIOD_NS)) {
    unsigned tx, rx;
    nvmlReturn_t r = n->pcie(h, NVML_PCIE_UTIL_TX_BYTES, &tx);
    if (r == NVML_SUCCESS && n->pcie(h, NVML_PCIE_UTIL_RX_BYTES, &rx) == NVML_SUCCESS) {
      n->dev[i].tx = (uint64_t)tx * 1024; /* KB/s */
      n->dev[i].rx = (uint64_t)rx * 1024;
    } else if (r == NVML_ERROR_NOT_SUPPORTED) {
      n->dev[i].pcie_ok = 0;
    }
    n->dev[i].pcie_ns = s->t_ns;
  }
  if (n->dev[i].pcie_ok && n->dev[i].pcie_ns) {
    s->pcie_tx_bps = n->dev[i].tx;
    s->pcie_rx_bps = n->dev[i].rx;
    s->present |= GPD_DF_PCIE;
  }
  if (n->dev[i].nvl_ok)
    nvlink_read(n, i, s);
  if (n->ecc &&
      n->ecc(h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c1) == NVML_SUCCESS &&
      n->ecc(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &c2) == NVML_SUCCESS) {
    s->ecc_corrected = c1;
    s->ecc_uncorrected = c2;
    s->present |= GPD_DF_ECC;
  }
  if (n->dev[i].xid_ok) {
    s->xid_events = n->dev[i].xids;
    s->last_xid = n->dev[i].last_xid;
    s->present |= GPD_DF_XID;
  }
  answered = s->present != 0;
  /* which processes hold the GPU, and how much memory each */
  if (n->procs) {
    nvmlProcessInfo_t info[GPD_DEV_MAX_PROCS];
    unsigned cnt = GPD_DEV_MAX_PROCS;
    nvmlReturn_t r = n->procs(h, &cnt, info);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE) {
      s->nprocs_dropped = cnt; /* more than fit: NVML filled in none */
      cnt = 0;
    } else if (r != NVML_SUCCESS) {
      cnt = 0;
    } else {
      s->present |= GPD_DF_PROCS;
    }
    for (unsigned k = 0; k < cnt && k < GPD_DEV_MAX_PROCS; k++) {
      gpd_dev_proc_t *p = proc_slot(s, info[k].pid);
      if (p && info[k].usedGpuMemory != NVML_VALUE_NOT_AVAILABLE)
        p->mem_bytes = info[k].usedGpuMemory;
    }
  }
  /* Per-process SM/memory utilization since the last sample we took.
   * The driver keeps a history of samples (several per process), so the
   * count is asked for first (utilization NULL: INSUFFICIENT_SIZE and the
   * count), as the NVML reference says (a fixed guess can be too few on
   * the first call: docs/DEVICES.md). */
  if (n->putil) {
    unsigned cnt = 0;
    nvmlProcessUtilizationSample_t *us = NULL;
    nvmlReturn_t r = n->putil(h, NULL, &cnt, n->dev[i].putil_seen);
    if ((r == NVML_ERROR_INSUFFICIENT_SIZE || r == NVML_SUCCESS) && cnt > 0) {
      if (cnt > PUTIL_MAX)
        cnt = PUTIL_MAX;
      us = calloc(cnt, sizeof *us);
      r = us ? n->putil(h, us, &cnt, n->dev[i].putil_seen) : NVML_ERROR_INSUFFICIENT_SIZE;
    }
    if (r != NVML_SUCCESS && !n->dev[i].putil_logged) {
      n->dev[i].putil_logged = 1; /* once: e.g. not supported on this product */
      GPD_INFO("devices: nvmlDeviceGetProcessUtilization(GPU %u): %s (%d)", i, nvml_err(n, r), r);
    }
    if (r == NVML_SUCCESS && us) {
      unsigned long long newest = n->dev[i].putil_seen;
      for (unsigned k = 0; k < cnt; k++) {
        if (us[k].timeStamp > newest)
          newest = us[k].timeStamp;
        gpd_dev_proc_t *p = proc_slot(s, us[k].pid);
        /* the newest of the samples of one pid wins */
        if (p == NULL || (p->has_util && us[k].timeStamp < p->util_ts))
          continue;
        p->has_util = 1;
        p->util_ts = us[k].timeStamp;
        p->sm_util = us[k].smUtil;
        p->mem_util = us[k].memUtil;
      }
      n->dev[i].putil_seen = newest;
    }
    free(us);
  }
  return answered ? 0 : GPD_EVENDOR;
}

const gpd_gpu_backend_t gpd_devices_nvml = {
    .api = "nvml",
    .open = nvml_open,
    .count = nvml_count,
    .describe = nvml_describe,
    .sample = nvml_sample,
    .close = nvml_close,
};
