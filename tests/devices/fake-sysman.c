/* fake-sysman.c - a Level Zero driver for the Sysman tests
 * (tests/devices/sysman.sh), loaded by Debian's real loader through
 * ZE_ENABLE_ALT_DRIVERS.  One GPU, "Fake Xe GPU", UUID 00 01 .. 0f, whose
 * Sysman counters advance by fixed steps per read so that the rates
 * gpuprofd computes between two samples are exact:
 *   engine group ALL: activeTime += 37000 us per timestamp += 100000 us -> 37 %
 *   power (card domain): energy += 25000000 uJ per timestamp += 100000 us -> 250 W
 *   PCIe: tx += 409600 B, rx += 819200 B per timestamp += 100000 us
 *         -> 4096000 / 8192000 B/s
 *   memory: one module, 16 GiB, 12 GiB free -> 4 GiB used
 *   temperature (GPU sensor) 55.5 C; frequency GPU 1550 MHz, MEMORY 1200 MHz
 *   processes: from $FAKE_SYSMAN_PROCS ("PID MEM_BYTES" lines)
 * Every loader table getter is exported (loader 1.8 asks for all); the
 * ones not used are left empty.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>
#include <level_zero/zes_api.h>
#include <level_zero/zes_ddi.h>
#include <level_zero/zet_api.h>
#include <level_zero/zet_ddi.h>

#define EXPORT __attribute__((visibility("default")))
#define OK ZE_RESULT_SUCCESS

static int drv_obj, dev_obj, eng_obj, mem_obj, pwr_obj, temp_obj, fgpu_obj, fmem_obj;
static uint64_t eng_n, pwr_n, pci_n;

static ze_result_t f_init(ze_init_flags_t f) { (void)f; return OK; }
static ze_result_t f_driver_get(uint32_t *n, ze_driver_handle_t *d) {
  if (*n == 0 || d == NULL) { *n = 1; return OK; }
  d[0] = (ze_driver_handle_t)&drv_obj;
  *n = 1;
  return OK;
}
static ze_result_t f_driver_version(ze_driver_handle_t d, ze_api_version_t *v) { (void)d; *v = ZE_API_VERSION_1_4; return OK; }
static ze_result_t f_driver_props(ze_driver_handle_t d, ze_driver_properties_t *p) {
  (void)d;
  memset(&p->uuid, 0, sizeof p->uuid);
  p->driverVersion = 1;
  return OK;
}
static ze_result_t f_device_get(ze_driver_handle_t d, uint32_t *n, ze_device_handle_t *h) {
  (void)d;
  if (*n == 0 || h == NULL) { *n = 1; return OK; }
  h[0] = (ze_device_handle_t)&dev_obj;
  *n = 1;
  return OK;
}
static ze_result_t f_device_props(ze_device_handle_t d, ze_device_properties_t *p) {
  (void)d;
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  snprintf(p->name, sizeof p->name, "Fake Xe GPU");
  for (int i = 0; i < ZE_MAX_DEVICE_UUID_SIZE; i++) p->uuid.id[i] = (uint8_t)i;
  return OK;
}

/* one handle of a kind */
#define ONE(fn, htype, obj)                                                                        \
  static ze_result_t fn(zes_device_handle_t d, uint32_t *n, htype *h) {                            \
    (void)d;                                                                                       \
    if (*n == 0 || h == NULL) { *n = 1; return OK; }                                               \
    h[0] = (htype)&obj;                                                                            \
    *n = 1;                                                                                        \
    return OK;                                                                                     \
  }
ONE(f_engines, zes_engine_handle_t, eng_obj)
ONE(f_mems, zes_mem_handle_t, mem_obj)
ONE(f_powers, zes_pwr_handle_t, pwr_obj)
ONE(f_temps, zes_temp_handle_t, temp_obj)

static ze_result_t f_freqs(zes_device_handle_t d, uint32_t *n, zes_freq_handle_t *h) {
  (void)d;
  if (*n == 0 || h == NULL) { *n = 2; return OK; }
  h[0] = (zes_freq_handle_t)&fgpu_obj;
  if (*n > 1) h[1] = (zes_freq_handle_t)&fmem_obj;
  *n = *n > 1 ? 2 : 1;
  return OK;
}
static ze_result_t f_card_power(zes_device_handle_t d, zes_pwr_handle_t *h) { (void)d; *h = (zes_pwr_handle_t)&pwr_obj; return OK; }
static ze_result_t f_engine_props(zes_engine_handle_t h, zes_engine_properties_t *p) {
  (void)h;
  p->type = ZES_ENGINE_GROUP_ALL;
  p->onSubdevice = 0;
  return OK;
}
static ze_result_t f_engine_activity(zes_engine_handle_t h, zes_engine_stats_t *s) {
  (void)h;
  eng_n++;
  s->activeTime = eng_n * 37000;
  s->timestamp = eng_n * 100000;
  return OK;
}
static ze_result_t f_mem_state(zes_mem_handle_t h, zes_mem_state_t *s) {
  (void)h;
  s->health = ZES_MEM_HEALTH_OK;
  s->size = 16ull << 30;
  s->free = 12ull << 30;
  return OK;
}
static ze_result_t f_energy(zes_pwr_handle_t h, zes_power_energy_counter_t *e) {
  (void)h;
  pwr_n++;
  e->energy = pwr_n * 25000000;
  e->timestamp = pwr_n * 100000;
  return OK;
}
static ze_result_t f_temp_props(zes_temp_handle_t h, zes_temp_properties_t *p) { (void)h; p->type = ZES_TEMP_SENSORS_GPU; return OK; }
static ze_result_t f_temp_state(zes_temp_handle_t h, double *t) { (void)h; *t = 55.5; return OK; }
static ze_result_t f_freq_props(zes_freq_handle_t h, zes_freq_properties_t *p) {
  p->type = h == (zes_freq_handle_t)&fgpu_obj ? ZES_FREQ_DOMAIN_GPU : ZES_FREQ_DOMAIN_MEMORY;
  return OK;
}
static ze_result_t f_freq_state(zes_freq_handle_t h, zes_freq_state_t *s) {
  s->actual = h == (zes_freq_handle_t)&fgpu_obj ? 1550.0 : 1200.0;
  return OK;
}
static ze_result_t f_pci_stats(zes_device_handle_t d, zes_pci_stats_t *s) {
  (void)d;
  pci_n++;
  s->timestamp = pci_n * 100000;
  s->txCounter = pci_n * 409600;
  s->rxCounter = pci_n * 819200;
  return OK;
}
static ze_result_t f_procs(zes_device_handle_t d, uint32_t *n, zes_process_state_t *p) {
  (void)d;
  const char *path = getenv("FAKE_SYSMAN_PROCS");
  FILE *f = path ? fopen(path, "r") : NULL;
  uint32_t k = 0, pid;
  unsigned long long mem;
  while (f && fscanf(f, "%u %llu", &pid, &mem) == 2) {
    if (p && k < *n) {
      p[k].processId = pid;
      p[k].memSize = mem;
      p[k].sharedSize = 0;
      p[k].engines = ZES_ENGINE_TYPE_FLAG_COMPUTE;
    }
    k++;
  }
  if (f) fclose(f);
  if (p && k > *n) return ZE_RESULT_ERROR_INVALID_SIZE;
  *n = k;
  return OK;
}

/* ---- DDI tables ---- */
EXPORT ze_result_t ZE_APICALL zeGetGlobalProcAddrTable(ze_api_version_t v, ze_global_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnInit = f_init;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zeGetDriverProcAddrTable(ze_api_version_t v, ze_driver_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGet = f_driver_get;
  t->pfnGetApiVersion = f_driver_version;
  t->pfnGetProperties = f_driver_props;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zeGetDeviceProcAddrTable(ze_api_version_t v, ze_device_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGet = f_device_get;
  t->pfnGetProperties = f_device_props;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetDeviceProcAddrTable(ze_api_version_t v, zes_device_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnEnumEngineGroups = f_engines;
  t->pfnEnumMemoryModules = f_mems;
  t->pfnEnumPowerDomains = f_powers;
  t->pfnGetCardPowerDomain = f_card_power;
  t->pfnEnumTemperatureSensors = f_temps;
  t->pfnEnumFrequencyDomains = f_freqs;
  t->pfnPciGetStats = f_pci_stats;
  t->pfnProcessesGetState = f_procs;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetEngineProcAddrTable(ze_api_version_t v, zes_engine_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGetProperties = f_engine_props;
  t->pfnGetActivity = f_engine_activity;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetMemoryProcAddrTable(ze_api_version_t v, zes_memory_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGetState = f_mem_state;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetPowerProcAddrTable(ze_api_version_t v, zes_power_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGetEnergyCounter = f_energy;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetTemperatureProcAddrTable(ze_api_version_t v, zes_temperature_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGetProperties = f_temp_props;
  t->pfnGetState = f_temp_state;
  return OK;
}
EXPORT ze_result_t ZE_APICALL zesGetFrequencyProcAddrTable(ze_api_version_t v, zes_frequency_dditable_t *t) {
  (void)v;
  memset(t, 0, sizeof *t);
  t->pfnGetProperties = f_freq_props;
  t->pfnGetState = f_freq_state;
  return OK;
}

/* Tables the loader asks for and this driver leaves empty. */
#define EMPTY(getter, type)                                                                        \
  EXPORT ze_result_t ZE_APICALL getter(ze_api_version_t v, type *t) {                              \
    (void)v;                                                                                       \
    memset(t, 0, sizeof *t);                                                                       \
    return OK;                                                                                     \
  }
EMPTY(zeGetContextProcAddrTable, ze_context_dditable_t)
EMPTY(zeGetCommandQueueProcAddrTable, ze_command_queue_dditable_t)
EMPTY(zeGetCommandListProcAddrTable, ze_command_list_dditable_t)
EMPTY(zeGetEventPoolProcAddrTable, ze_event_pool_dditable_t)
EMPTY(zeGetEventProcAddrTable, ze_event_dditable_t)
EMPTY(zeGetModuleProcAddrTable, ze_module_dditable_t)
EMPTY(zeGetKernelProcAddrTable, ze_kernel_dditable_t)
EMPTY(zeGetMemProcAddrTable, ze_mem_dditable_t)
EMPTY(zeGetDeviceExpProcAddrTable, ze_device_exp_dditable_t)
EMPTY(zeGetImageProcAddrTable, ze_image_dditable_t)
EMPTY(zeGetImageExpProcAddrTable, ze_image_exp_dditable_t)
EMPTY(zeGetFenceProcAddrTable, ze_fence_dditable_t)
EMPTY(zeGetEventExpProcAddrTable, ze_event_exp_dditable_t)
EMPTY(zeGetModuleBuildLogProcAddrTable, ze_module_build_log_dditable_t)
EMPTY(zeGetKernelExpProcAddrTable, ze_kernel_exp_dditable_t)
EMPTY(zeGetSamplerProcAddrTable, ze_sampler_dditable_t)
EMPTY(zeGetPhysicalMemProcAddrTable, ze_physical_mem_dditable_t)
EMPTY(zeGetVirtualMemProcAddrTable, ze_virtual_mem_dditable_t)
EMPTY(zeGetFabricVertexExpProcAddrTable, ze_fabric_vertex_exp_dditable_t)
EMPTY(zeGetFabricEdgeExpProcAddrTable, ze_fabric_edge_exp_dditable_t)
EMPTY(zetGetDeviceProcAddrTable, zet_device_dditable_t)
EMPTY(zetGetContextProcAddrTable, zet_context_dditable_t)
EMPTY(zetGetCommandListProcAddrTable, zet_command_list_dditable_t)
EMPTY(zetGetModuleProcAddrTable, zet_module_dditable_t)
EMPTY(zetGetKernelProcAddrTable, zet_kernel_dditable_t)
EMPTY(zetGetMetricGroupProcAddrTable, zet_metric_group_dditable_t)
EMPTY(zetGetMetricGroupExpProcAddrTable, zet_metric_group_exp_dditable_t)
EMPTY(zetGetMetricProcAddrTable, zet_metric_dditable_t)
EMPTY(zetGetMetricStreamerProcAddrTable, zet_metric_streamer_dditable_t)
EMPTY(zetGetMetricQueryPoolProcAddrTable, zet_metric_query_pool_dditable_t)
EMPTY(zetGetMetricQueryProcAddrTable, zet_metric_query_dditable_t)
EMPTY(zetGetTracerExpProcAddrTable, zet_tracer_exp_dditable_t)
EMPTY(zetGetDebugProcAddrTable, zet_debug_dditable_t)
EMPTY(zesGetDriverProcAddrTable, zes_driver_dditable_t)
EMPTY(zesGetSchedulerProcAddrTable, zes_scheduler_dditable_t)
EMPTY(zesGetPerformanceFactorProcAddrTable, zes_performance_factor_dditable_t)
EMPTY(zesGetStandbyProcAddrTable, zes_standby_dditable_t)
EMPTY(zesGetFirmwareProcAddrTable, zes_firmware_dditable_t)
EMPTY(zesGetFabricPortProcAddrTable, zes_fabric_port_dditable_t)
EMPTY(zesGetPsuProcAddrTable, zes_psu_dditable_t)
EMPTY(zesGetFanProcAddrTable, zes_fan_dditable_t)
EMPTY(zesGetLedProcAddrTable, zes_led_dditable_t)
EMPTY(zesGetRasProcAddrTable, zes_ras_dditable_t)
EMPTY(zesGetDiagnosticsProcAddrTable, zes_diagnostics_dditable_t)
