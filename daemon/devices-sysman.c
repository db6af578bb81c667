/* devices-sysman.c - Intel GPUs through Level Zero Sysman.
 *
 * The Level Zero loader is opened with dlopen ("[devices]
 * sysman_library", default "libze_loader.so.1"); types come from the
 * Level Zero headers (zes_api.h, built only when CMake found them).
 * Debian's loader 1.8 implements API 1.4, which has no zesInit: Sysman is
 * reached the documented older way, ZES_ENABLE_SYSMAN=1 in the
 * environment before zeInit, and core device handles used as Sysman
 * handles.  (The environment variable is set by gpd_devices_start on the
 * main thread, before the sampler starts.)  When zeInit fails nothing
 * else of the loader is called: with Intel's driver installed and no GPU,
 * zeDriverGet after a failed zeInit crashes inside loader 1.8.
 *
 * Values (Level Zero Sysman specification, "Sysman programming guide"):
 *   utilization   engine group ZES_ENGINE_GROUP_ALL (else COMPUTE_ALL):
 *                 delta activeTime / delta timestamp between two samples
 *   memory        sum over memory modules of size - free, and of size
 *   power         card power domain (else the first): delta energy (uJ)
 *                 / delta timestamp (us) between two samples
 *   temperature   the GPU sensor (else GLOBAL, else the first)
 *   clocks        actual frequency of the GPU and MEMORY domains (MHz)
 *   PCIe          delta tx/rx counters / delta timestamp (zesDevicePciGetStats)
 *   processes     zesDeviceProcessesGetState: pid, memSize
 * Rates need two samples: the first sample of a device has none.
 * Sampler thread only (devices.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include "gpuprof/error.h"
#include "gpuprof/log.h"

#include "devices.h"

#define MAXH 16 /* handles of one kind per device we look at */

typedef struct {
  void *lib;
  ze_result_t (*init)(ze_init_flags_t);
  ze_result_t (*driver_get)(uint32_t *, ze_driver_handle_t *);
  ze_result_t (*device_get)(ze_driver_handle_t, uint32_t *, ze_device_handle_t *);
  ze_result_t (*device_props)(ze_device_handle_t, ze_device_properties_t *);
  ze_result_t (*engines)(zes_device_handle_t, uint32_t *, zes_engine_handle_t *);
  ze_result_t (*engine_props)(zes_engine_handle_t, zes_engine_properties_t *);
  ze_result_t (*engine_activity)(zes_engine_handle_t, zes_engine_stats_t *);
  ze_result_t (*mems)(zes_device_handle_t, uint32_t *, zes_mem_handle_t *);
  ze_result_t (*mem_state)(zes_mem_handle_t, zes_mem_state_t *);
  ze_result_t (*card_power)(zes_device_handle_t, zes_pwr_handle_t *);
  ze_result_t (*powers)(zes_device_handle_t, uint32_t *, zes_pwr_handle_t *);
  ze_result_t (*energy)(zes_pwr_handle_t, zes_power_energy_counter_t *);
  ze_result_t (*temps)(zes_device_handle_t, uint32_t *, zes_temp_handle_t *);
  ze_result_t (*temp_props)(zes_temp_handle_t, zes_temp_properties_t *);
  ze_result_t (*temp_state)(zes_temp_handle_t, double *);
  ze_result_t (*freqs)(zes_device_handle_t, uint32_t *, zes_freq_handle_t *);
  ze_result_t (*freq_props)(zes_freq_handle_t, zes_freq_properties_t *);
  ze_result_t (*freq_state)(zes_freq_handle_t, zes_freq_state_t *);
  ze_result_t (*pci_stats)(zes_device_handle_t, zes_pci_stats_t *);
  ze_result_t (*procs)(zes_device_handle_t, uint32_t *, zes_process_state_t *);
  uint32_t n;
  struct {
    zes_device_handle_t h;
    zes_engine_handle_t engine; /* NULL: none */
    zes_mem_handle_t mem[MAXH];
    uint32_t nmem;
    zes_pwr_handle_t power;
    zes_temp_handle_t temp;
    zes_freq_handle_t freq_gpu, freq_mem;
    int have_engine, have_energy, have_pci;
    zes_engine_stats_t e0;
    zes_power_energy_counter_t p0;
    zes_pci_stats_t pci0;
  } dev[GPD_DEV_MAX];
} sysman_t;

static void sysman_close(void *st) {
  sysman_t *s = st;
  if (s == NULL)
    return;
  /* Level Zero has no "shut down": the loader stays mapped until exit */
  free(s);
}

#define SYM(field, name) (s->field = (__typeof__(s->field))dlsym(s->lib, name))

/* The handles of device k worth sampling. */
static void pick_handles(sysman_t *s, uint32_t k) {
  zes_device_handle_t h = s->dev[k].h;
  uint32_t n;
  zes_engine_handle_t eh[MAXH];
  n = MAXH;
  if (s->engines && s->engine_props && s->engines(h, &n, eh) == ZE_RESULT_SUCCESS) {
    int best = 99;
    for (uint32_t i = 0; i < n && i < MAXH; i++) {
      zes_engine_properties_t p = {.stype = ZES_STRUCTURE_TYPE_ENGINE_PROPERTIES};
      if (s->engine_props(eh[i], &p) != ZE_RESULT_SUCCESS)
        continue;
      int rank = p.type == ZES_ENGINE_GROUP_ALL ? 0 : p.type == ZES_ENGINE_GROUP_COMPUTE_ALL ? 1 : 99;
      if (rank < best) {
        best = rank;
        s->dev[k].engine = eh[i];
      }
    }
  }
  n = MAXH;
  if (s->mems && s->mems(h, &n, s->dev[k].mem) == ZE_RESULT_SUCCESS)
    s->dev[k].nmem = n < MAXH ? n : MAXH;
  if (s->card_power == NULL || s->card_power(h, &s->dev[k].power) != ZE_RESULT_SUCCESS) {
    zes_pwr_handle_t ph[MAXH];
    n = MAXH;
    s->dev[k].power = NULL;
    if (s->powers && s->powers(h, &n, ph) == ZE_RESULT_SUCCESS && n > 0)
      s->dev[k].power = ph[0];
  }
  zes_temp_handle_t th[MAXH];
  n = MAXH;
  if (s->temps && s->temps(h, &n, th) == ZE_RESULT_SUCCESS && n > 0) {
    int best = 99;
    s->dev[k].temp = th[0];
    for (uint32_t i = 0; i < n && i < MAXH && s->temp_props; i++) {
      zes_temp_properties_t p = {.stype = ZES_STRUCTURE_TYPE_TEMP_PROPERTIES};
      if (s->temp_props(th[i], &p) != ZE_RESULT_SUCCESS)
        continue;
      int rank = p.type == ZES_TEMP_SENSORS_GPU ? 0 : p.type == ZES_TEMP_SENSORS_GLOBAL ? 1 : 99;
      if (rank < best) {
        best = rank;
        s->dev[k].temp = th[i];
      }
    }
  }
  zes_freq_handle_t fh[MAXH];
  n = MAXH;
  if (s->freqs && s->freq_props && s->freqs(h, &n, fh) == ZE_RESULT_SUCCESS) {
    for (uint32_t i = 0; i < n && i < MAXH; i++) {
      zes_freq_properties_t p = {.stype = ZES_STRUCTURE_TYPE_FREQ_PROPERTIES};
      if (s->freq_props(fh[i], &p) != ZE_RESULT_SUCCESS)
        continue;
      if (p.type == ZES_FREQ_DOMAIN_GPU && !s->dev[k].freq_gpu)
        s->dev[k].freq_gpu = fh[i];
      else if (p.type == ZES_FREQ_DOMAIN_MEMORY && !s->dev[k].freq_mem)
        s->dev[k].freq_mem = fh[i];
    }
  }
}

static int sysman_open(void **st, const char *path, char *why, size_t whylen) {
  int err;
  ze_result_t r;
  sysman_t *s = calloc(1, sizeof *s);
  if (s == NULL)
    return -ENOMEM;
  s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (s->lib == NULL) {
    const char *e = dlerror();
    snprintf(why, whylen, "cannot load %s: %s", path, e ? e : "?");
    err = GPD_ENOVENDOR;
    goto fail;
  }
  SYM(init, "zeInit");
  SYM(driver_get, "zeDriverGet");
  SYM(device_get, "zeDeviceGet");
  SYM(device_props, "zeDeviceGetProperties");
  SYM(engines, "zesDeviceEnumEngineGroups");
  SYM(engine_props, "zesEngineGetProperties");
  SYM(engine_activity, "zesEngineGetActivity");
  SYM(mems, "zesDeviceEnumMemoryModules");
  SYM(mem_state, "zesMemoryGetState");
  SYM(card_power, "zesDeviceGetCardPowerDomain");
  SYM(powers, "zesDeviceEnumPowerDomains");
  SYM(energy, "zesPowerGetEnergyCounter");
  SYM(temps, "zesDeviceEnumTemperatureSensors");
  SYM(temp_props, "zesTemperatureGetProperties");
  SYM(temp_state, "zesTemperatureGetState");
  SYM(freqs, "zesDeviceEnumFrequencyDomains");
  SYM(freq_props, "zesFrequencyGetProperties");
  SYM(freq_state, "zesFrequencyGetState");
  SYM(pci_stats, "zesDevicePciGetStats");
  SYM(procs, "zesDeviceProcessesGetState");
  if (!s->init || !s->driver_get || !s->device_get) {
    snprintf(why, whylen, "%s lacks zeInit/zeDriverGet/zeDeviceGet", path);
    err = GPD_ENOVENDOR;
    goto fail;
  }
  if ((r = s->init(ZE_INIT_FLAG_GPU_ONLY)) != ZE_RESULT_SUCCESS) {
    snprintf(why, whylen, "zeInit failed: 0x%x (no Level Zero GPU driver)", (unsigned)r);
    err = GPD_EVENDOR;
    goto fail;
  }
  ze_driver_handle_t drv[8];
  uint32_t nd = 8;
  if ((r = s->driver_get(&nd, drv)) != ZE_RESULT_SUCCESS) {
    snprintf(why, whylen, "zeDriverGet failed: 0x%x", (unsigned)r);
    err = GPD_EVENDOR;
    goto fail;
  }
  for (uint32_t d = 0; d < nd && d < 8; d++) {
    ze_device_handle_t dh[GPD_DEV_MAX];
    uint32_t n = GPD_DEV_MAX;
    if (s->device_get(drv[d], &n, dh) != ZE_RESULT_SUCCESS)
      continue;
    for (uint32_t i = 0; i < n && i < GPD_DEV_MAX && s->n < GPD_DEV_MAX; i++) {
      s->dev[s->n].h = (zes_device_handle_t)dh[i];
      pick_handles(s, s->n);
      s->n++;
    }
  }
  *st = s;
  return 0;
fail:
  sysman_close(s);
  return err;
}

static uint32_t sysman_count(void *st) { return ((sysman_t *)st)->n; }

static int sysman_describe(void *st, uint32_t i, char *name, size_t nlen, char *uuid, size_t ulen) {
  sysman_t *s = st;
  if (i >= s->n)
    return -EINVAL;
  snprintf(name, nlen, "Level Zero GPU %u", i);
  snprintf(uuid, ulen, "sysman-%u", i);
  ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  if (s->device_props && s->device_props((ze_device_handle_t)s->dev[i].h, &p) == ZE_RESULT_SUCCESS) {
    p.name[sizeof p.name - 1] = 0;
    snprintf(name, nlen, "%s", p.name);
    size_t k = 0;
    for (unsigned b = 0; b < ZE_MAX_DEVICE_UUID_SIZE && k + 3 <= ulen; b++)
      k += (size_t)snprintf(uuid + k, ulen - k, "%02x", p.uuid.id[b]);
  }
  return 0;
}

static int sysman_sample(void *st, uint32_t i, gpd_dev_sample_t *x) {
  sysman_t *s = st;
  if (i >= s->n)
    return -EINVAL;
  typeof(s->dev[0]) *d = &s->dev[i];
  zes_engine_stats_t e;
  if (d->engine && s->engine_activity && s->engine_activity(d->engine, &e) == ZE_RESULT_SUCCESS) {
    if (d->have_engine && e.timestamp > d->e0.timestamp && e.activeTime >= d->e0.activeTime) {
      x->util_gpu = 100.0 * (double)(e.activeTime - d->e0.activeTime) /
                    (double)(e.timestamp - d->e0.timestamp);
      x->present |= GPD_DF_UTIL_GPU;
    }
    d->e0 = e;
    d->have_engine = 1;
  }
  if (d->nmem && s->mem_state) {
    uint64_t size = 0, free_ = 0;
    uint32_t ok = 0;
    for (uint32_t k = 0; k < d->nmem; k++) {
      zes_mem_state_t m = {.stype = ZES_STRUCTURE_TYPE_MEM_STATE};
      if (s->mem_state(d->mem[k], &m) != ZE_RESULT_SUCCESS)
        continue;
      size += m.size;
      free_ += m.free;
      ok++;
    }
    if (ok) {
      x->mem_total = size;
      x->mem_used = size >= free_ ? size - free_ : 0;
      x->present |= GPD_DF_MEM;
    }
  }
  zes_power_energy_counter_t p;
  if (d->power && s->energy && s->energy(d->power, &p) == ZE_RESULT_SUCCESS) {
    if (d->have_energy && p.timestamp > d->p0.timestamp && p.energy >= d->p0.energy) {
      x->power_w = (double)(p.energy - d->p0.energy) / (double)(p.timestamp - d->p0.timestamp);
      x->present |= GPD_DF_POWER; /* uJ / us = W */
    }
    d->p0 = p;
    d->have_energy = 1;
  }
  double t;
  if (d->temp && s->temp_state && s->temp_state(d->temp, &t) == ZE_RESULT_SUCCESS) {
    x->temp_c = t;
    x->present |= GPD_DF_TEMP;
  }
  zes_freq_state_t f = {.stype = ZES_STRUCTURE_TYPE_FREQ_STATE};
  if (d->freq_gpu && s->freq_state && s->freq_state(d->freq_gpu, &f) == ZE_RESULT_SUCCESS &&
      f.actual >= 0) {
    x->clock_sm_mhz = (uint32_t)(f.actual + 0.5);
    x->present |= GPD_DF_CLOCK_SM;
  }
  zes_freq_state_t fm = {.stype = ZES_STRUCTURE_TYPE_FREQ_STATE};
  if (d->freq_mem && s->freq_state && s->freq_state(d->freq_mem, &fm) == ZE_RESULT_SUCCESS &&
      fm.actual >= 0) {
    x->clock_mem_mhz = (uint32_t)(fm.actual + 0.5);
    x->present |= GPD_DF_CLOCK_MEM;
  }
  zes_pci_stats_t c;
  if (s->pci_stats && s->pci_stats(d->h, &c) == ZE_RESULT_SUCCESS) {
    if (d->have_pci && c.timestamp > d->pci0.timestamp && c.txCounter >= d->pci0.txCounter &&
        c.rxCounter >= d->pci0.rxCounter) {
      double dt = (double)(c.timestamp - d->pci0.timestamp) / 1e6; /* us */
      x->pcie_tx_bps = (uint64_t)((double)(c.txCounter - d->pci0.txCounter) / dt);
      x->pcie_rx_bps = (uint64_t)((double)(c.rxCounter - d->pci0.rxCounter) / dt);
      x->present |= GPD_DF_PCIE;
    }
    d->pci0 = c;
    d->have_pci = 1;
  }
  int answered = x->present != 0 || d->have_engine || d->have_energy;
  if (s->procs) {
    zes_process_state_t ps[GPD_DEV_MAX_PROCS];
    uint32_t n = GPD_DEV_MAX_PROCS;
    for (uint32_t k = 0; k < n; k++)
      memset(&ps[k], 0, sizeof ps[k]), ps[k].stype = ZES_STRUCTURE_TYPE_PROCESS_STATE;
    ze_result_t r = s->procs(d->h, &n, ps);
    if (r == ZE_RESULT_SUCCESS) {
      x->present |= GPD_DF_PROCS;
      for (uint32_t k = 0; k < n && k < GPD_DEV_MAX_PROCS; k++) {
        gpd_dev_proc_t *q = &x->procs[x->nprocs++];
        memset(q, 0, sizeof *q);
        q->pid = (int32_t)ps[k].processId;
        q->uid = (uid_t)-1;
        q->mem_bytes = ps[k].memSize;
      }
    } else if (r == ZE_RESULT_ERROR_INVALID_SIZE) {
      x->nprocs_dropped = n;
    }
  }
  return answered ? 0 : GPD_EVENDOR;
}

const gpd_gpu_backend_t gpd_devices_sysman = {
    .api = "sysman",
    .open = sysman_open,
    .count = sysman_count,
    .describe = sysman_describe,
    .sample = sysman_sample,
    .close = sysman_close,
};
