/* live-devices.c - `gpuprof devices`: the daemon's device monitoring, live
 * (docs/DEVICES.md, docs/CLI.md).
 *
 *   gpuprof devices [--job J] [--prometheus] [--socket PATH]
 *
 * Text: one row per GPU (like nvidia-smi), then per GPU and job, per
 * process, and the PAPI counters of the profiled processes; what is not
 * monitored says why.  --prometheus: the same in the Prometheus text
 * exposition format (version 0.0.4), for a node_exporter textfile
 * collector or a scrape; metric names are documented in docs/DEVICES.md
 * next to their DCGM exporter counterparts.  Also the one-line device
 * header of `gpuprof top` (gpd_live_devices_header).
 */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* present bits, daemon/devices.h GPD_DF_* (the CLI does not link the daemon) */
enum {
  DF_UTIL_GPU = 1u << 0,
  DF_UTIL_MEM = 1u << 1,
  DF_MEM = 1u << 2,
  DF_POWER = 1u << 3,
  DF_TEMP = 1u << 4,
  DF_CLOCK_SM = 1u << 5,
  DF_CLOCK_MEM = 1u << 6,
  DF_PCIE = 1u << 7,
  DF_ECC = 1u << 8,
  DF_XID = 1u << 9,
  DF_NVLINK = 1u << 11,
};

static gpd_cli_cmd_t devices_cmd = {
    .head = "usage: gpuprof devices [--job J] [--prometheus] [--socket PATH]\n"
            "  GPUs the daemon monitors (NVML, Level Zero Sysman), their processes and\n"
            "  jobs, and PAPI counters of the profiled processes (yours, or all for\n"
            "  admins).  --prometheus: Prometheus text exposition format.\n",
    .opts = (const gpd_cli_opt_t[]){{"socket", required_argument, 's', NULL, NULL},
                                    {"job", required_argument, 'j', NULL, NULL},
                                    {"prometheus", no_argument, 'P', NULL, NULL},
                                    {0}},
    .shorts = "sj"};

static int devices_call(const char *sock, const char *job, Gpuprof__Msg **rep) {
  Gpuprof__Msg req = GPUPROF__MSG__INIT;
  Gpuprof__DevicesRequest dr = GPUPROF__DEVICES_REQUEST__INIT;
  if (job) dr.job_id = (char *)job;
  req.body_case = GPUPROF__MSG__BODY_DEVICES_REQ;
  req.devices_req = &dr;
  int r = gpd_live_call(sock, &req, rep);
  if (r) return r;
  if ((*rep)->body_case != GPUPROF__MSG__BODY_DEVICES) {
    fprintf(stderr, "gpuprof: gpuprofd answered with an unexpected message (case %d)\n", (int)(*rep)->body_case);
    gpuprof__msg__free_unpacked(*rep, NULL);
    *rep = NULL;
    return GPD_EXIT_FAIL;
  }
  return 0;
}

static void num(char *b, size_t n, int have, const char *fmt, double v) {
  if (have)
    snprintf(b, n, fmt, v);
  else
    snprintf(b, n, "-");
}

static void bytes_or_dash(char *b, size_t n, int have, double v) {
  if (have)
    gpd_render_bytes(b, n, v);
  else
    snprintf(b, n, "-");
}

/* "TX / RX" of a pair of rates in bytes/s, or "-" when not reported */
static void rates_or_dash(char *b, size_t n, int have, uint64_t tx, uint64_t rx) {
  char t[32], r[32];
  if (!have) {
    snprintf(b, n, "-");
    return;
  }
  gpd_render_bytes(t, sizeof t, (double)tx);
  gpd_render_bytes(r, sizeof r, (double)rx);
  snprintf(b, n, "%s / %s", t, r);
}

/* "nvml: reason; sysman: reason" of the back ends that are off */
static void missing(char *b, size_t n, const Gpuprof__DevicesReply *r, int gpu_only) {
  size_t len = 0;
  b[0] = 0;
  for (size_t i = 0; i < r->n_backends; i++) {
    const Gpuprof__Backend *k = r->backends[i];
    if (k->enabled || (gpu_only && !strcmp(k->api, "papi"))) continue;
    int w = snprintf(b + len, n - len, "%s%s: %s", len ? "; " : "", k->api, k->reason);
    if (w < 0 || (size_t)w >= n - len) break;
    len += (size_t)w;
  }
}

/* Per (device, job) sums of the visible processes. */
typedef struct {
  const char *job;
  uint32_t procs;
  double mem, sm, memu;
  int has_mem, has_util;
} jobrow_t;

/* The job rows of d (malloc'd, *np of them), NULL when out of memory. */
static jobrow_t *job_rows(const Gpuprof__Device *d, size_t *np) {
  size_t n = 0;
  jobrow_t *out = calloc(d->n_procs ? d->n_procs : 1, sizeof *out);
  *np = 0;
  if (!out) return NULL;
  for (size_t j = 0; j < d->n_procs; j++) {
    const Gpuprof__DeviceProcess *p = d->procs[j];
    const char *job = p->job_id[0] ? p->job_id : (p->profile_id ? "(no job)" : "(not profiled)");
    size_t k;
    for (k = 0; k < n; k++)
      if (!strcmp(out[k].job, job)) break;
    if (k == n) {
      memset(&out[n], 0, sizeof out[n]);
      out[n++].job = job;
    }
    out[k].procs++;
    if (p->has_mem) out[k].mem += (double)p->mem_used, out[k].has_mem = 1;
    if (p->has_util) out[k].sm += p->sm_util, out[k].memu += p->mem_util, out[k].has_util = 1;
  }
  *np = n;
  return out;
}

/* A job only claimed by its process shows as "J(claimed)" in every row
 * and label, and is summed apart from the verified job J. */
static void devices_mark_claimed(Gpuprof__DevicesReply *r) {
  char buf[300];
  for (size_t i = 0; i < r->n_devices; i++)
    for (size_t j = 0; j < r->devices[i]->n_procs; j++) {
      Gpuprof__DeviceProcess *p = r->devices[i]->procs[j];
      if (p->job_claimed && p->job_id[0]) {
        char *m = gpd_cli_strdup(gpd_cli_job(buf, sizeof buf, p->job_id, 1));
        free(p->job_id); /* protobuf-c's default allocator is malloc */
        p->job_id = m;
      }
    }
  for (size_t i = 0; i < r->n_cpu; i++) {
    Gpuprof__CpuCounters *c = r->cpu[i];
    if (c->job_claimed && c->job_id[0]) {
      char *m = gpd_cli_strdup(gpd_cli_job(buf, sizeof buf, c->job_id, 1));
      free(c->job_id);
      c->job_id = m;
    }
  }
}

static void render_text(FILE *f, const Gpuprof__DevicesReply *r) {
  char a[32], b[32], c[32], d2[32], e[32], g[32], h[32], k[32], l[32], buf[1024];
  fprintf(f, "gpuprofd device monitoring: %s, %llu samples\n",
          r->interval_ms ? "on" : "off", (unsigned long long)r->samples);
  if (r->interval_ms) fprintf(f, "interval: %u ms\n", r->interval_ms);
  for (size_t i = 0; i < r->n_backends; i++)
    fprintf(f, "  %-7s %-4s %s\n", r->backends[i]->api, r->backends[i]->enabled ? "on" : "off",
            r->backends[i]->reason);
  if (r->n_devices == 0) {
    missing(buf, sizeof buf, r, 1);
    fprintf(f, "no GPU is monitored%s%s\n", buf[0] ? ": " : "", buf);
  } else {
    fprintf(f, "\n%-4s %-7s %-28s %5s %5s %21s %8s %5s %6s %6s %19s %19s %9s %4s\n", "GPU", "API", "NAME", "UTIL",
            "MEM%", "MEMORY USED/TOTAL", "POWER", "TEMP", "SM", "MEMCLK", "PCIE TX/RX (/s)", "NVLINK TX/RX (/s)",
            "ECC C/U", "XID");
    for (size_t i = 0; i < r->n_devices; i++) {
      const Gpuprof__Device *d = r->devices[i];
      char mem[72], pcie[72], nvl[72], ecc[48];
      num(a, sizeof a, d->present & DF_UTIL_GPU, "%.0f%%", d->util_gpu);
      num(b, sizeof b, d->present & DF_UTIL_MEM, "%.0f%%", d->util_mem);
      bytes_or_dash(c, sizeof c, d->present & DF_MEM, (double)d->mem_used);
      bytes_or_dash(d2, sizeof d2, d->present & DF_MEM, (double)d->mem_total);
      snprintf(mem, sizeof mem, "%s / %s", c, d2);
      num(e, sizeof e, d->present & DF_POWER, "%.1f W", d->power_w);
      num(g, sizeof g, d->present & DF_TEMP, "%.0f C", d->temp_c);
      num(h, sizeof h, d->present & DF_CLOCK_SM, "%.0f", d->clock_sm_mhz);
      num(k, sizeof k, d->present & DF_CLOCK_MEM, "%.0f", d->clock_mem_mhz);
      rates_or_dash(pcie, sizeof pcie, d->present & DF_PCIE, d->pcie_tx_bps, d->pcie_rx_bps);
      rates_or_dash(nvl, sizeof nvl, d->present & DF_NVLINK, d->nvlink_tx_bps, d->nvlink_rx_bps);
      if (d->present & DF_ECC)
        snprintf(ecc, sizeof ecc, "%llu/%llu", (unsigned long long)d->ecc_corrected,
                 (unsigned long long)d->ecc_uncorrected);
      else
        snprintf(ecc, sizeof ecc, "-");
      num(l, sizeof l, d->present & DF_XID, "%.0f", (double)d->xid_events);
      fprintf(f, "%-4u %-7s %-28.28s %5s %5s %21s %8s %5s %6s %6s %19s %19s %9s %4s\n", d->index, d->api, d->name,
              a, b, mem, e, g, h, k, pcie, nvl, ecc, l);
    }
    fprintf(f, "\nPER JOB\n%-4s %-7s %-24s %5s %12s %6s %6s\n", "GPU", "API", "JOB", "PROCS", "MEMORY", "SM%",
            "MEM%");
    size_t shown = 0, hidden = 0;
    for (size_t i = 0; i < r->n_devices; i++) {
      const Gpuprof__Device *d = r->devices[i];
      size_t n;
      jobrow_t *jr = job_rows(d, &n);
      if (!jr) continue;
      for (size_t j = 0; j < n; j++) {
        bytes_or_dash(c, sizeof c, jr[j].has_mem, jr[j].mem);
        num(a, sizeof a, jr[j].has_util, "%.0f", jr[j].sm);
        num(b, sizeof b, jr[j].has_util, "%.0f", jr[j].memu);
        char job[300];
        fprintf(f, "%-4u %-7s %-24.24s %5u %12s %6s %6s\n", d->index, d->api, gpd_text_line(job, sizeof job, jr[j].job),
                jr[j].procs, c, a, b);
        shown++;
      }
      free(jr);
      hidden += d->hidden_procs;
    }
    if (!shown) fprintf(f, "(no processes of yours on the GPUs)\n");
    fprintf(f, "\nPER PROCESS\n%-4s %-7s %8s %6s %-24s %8s %-16s %12s %6s %6s\n", "GPU", "API", "PID", "UID", "JOB",
            "PROFILE", "EXE", "MEMORY", "SM%", "MEM%");
    for (size_t i = 0; i < r->n_devices; i++) {
      const Gpuprof__Device *d = r->devices[i];
      for (size_t j = 0; j < d->n_procs; j++) {
        const Gpuprof__DeviceProcess *p = d->procs[j];
        bytes_or_dash(c, sizeof c, p->has_mem, (double)p->mem_used);
        num(a, sizeof a, p->has_util, "%.0f", p->sm_util);
        num(b, sizeof b, p->has_util, "%.0f", p->mem_util);
        num(e, sizeof e, p->profile_id != 0, "%.0f", (double)p->profile_id);
        num(g, sizeof g, p->uid != UINT32_MAX, "%.0f", (double)p->uid);
        char job[300], exe[300];
        fprintf(f, "%-4u %-7s %8d %6s %-24.24s %8s %-16.16s %12s %6s %6s\n", d->index, d->api, p->pid, g,
                gpd_cli_job(job, sizeof job, p->job_id, 0), e, p->exe[0] ? gpd_text_line(exe, sizeof exe, p->exe) : "-",
                c, a, b);
      }
    }
    if (hidden) fprintf(f, "(%zu process rows of other users not shown)\n", hidden);
  }
  if (r->n_cpu) {
    fprintf(f, "\nCPU counters (per profiled process; total and per second; back end: the papi line)\n%8s %-16s %8s", "PID", "JOB", "PROFILE");
    const Gpuprof__CpuCounters *c0 = r->cpu[0];
    for (size_t e2 = 0; e2 < c0->n_events; e2++) fprintf(f, "  %28s", c0->events[e2]);
    fputc('\n', f);
    for (size_t i = 0; i < r->n_cpu; i++) {
      const Gpuprof__CpuCounters *c1 = r->cpu[i];
      char job[300];
      fprintf(f, "%8d %-16.16s %8llu", c1->pid, gpd_cli_job(job, sizeof job, c1->job_id, 0),
              (unsigned long long)c1->profile_id);
      for (size_t e2 = 0; e2 < c1->n_values; e2++) {
        char cell[64];
        snprintf(cell, sizeof cell, "%lld (%.4g/s)", (long long)c1->values[e2],
                 e2 < c1->n_rates ? c1->rates[e2] : 0.0);
        fprintf(f, "  %28s", cell);
      }
      fputc('\n', f);
    }
  }
}

/* ---- Prometheus text exposition format 0.0.4 ---- */

/* A label value: valid UTF-8 without controls (gpd_text_sanitize: an
 * invalid byte becomes the text \xNN), then backslash, double quote and
 * newline escaped as the format says. */
static void prom_str(FILE *f, const char *raw) {
  char *t = gpd_text_dup(raw);
  for (const char *s = t; *s; s++) {
    if (*s == '\\') fputs("\\\\", f);
    else if (*s == '"') fputs("\\\"", f);
    else if (*s == '\n') fputs("\\n", f);
    else fputc(*s, f);
  }
  free(t);
}

static void prom_val(FILE *f, double v) {
  if (isnan(v)) fputs("NaN", f);
  else if (isinf(v)) fputs(v > 0 ? "+Inf" : "-Inf", f);
  else fprintf(f, "%.17g", v);
  fputc('\n', f);
}

static void prom_head(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void prom_dev_labels(FILE *f, const Gpuprof__Device *d) {
  fprintf(f, "{api=\"");
  prom_str(f, d->api);
  fprintf(f, "\",gpu=\"%u\",uuid=\"", d->index);
  prom_str(f, d->uuid);
  fprintf(f, "\",name=\"");
  prom_str(f, d->name);
  fputc('"', f);
}

typedef struct {
  const char *name, *type, *help;
  uint32_t bit;
  double (*get)(const Gpuprof__Device *d);
} prom_gauge_t;

static double g_util(const Gpuprof__Device *d) { return d->util_gpu; }
static double g_mutil(const Gpuprof__Device *d) { return d->util_mem; }
static double g_used(const Gpuprof__Device *d) { return (double)d->mem_used; }
static double g_total(const Gpuprof__Device *d) { return (double)d->mem_total; }
static double g_power(const Gpuprof__Device *d) { return d->power_w; }
static double g_temp(const Gpuprof__Device *d) { return d->temp_c; }
static double g_sm(const Gpuprof__Device *d) { return d->clock_sm_mhz * 1e6; }
static double g_mclk(const Gpuprof__Device *d) { return d->clock_mem_mhz * 1e6; }
static double g_tx(const Gpuprof__Device *d) { return (double)d->pcie_tx_bps; }
static double g_rx(const Gpuprof__Device *d) { return (double)d->pcie_rx_bps; }
static double g_ntx(const Gpuprof__Device *d) { return (double)d->nvlink_tx_bps; }
static double g_nrx(const Gpuprof__Device *d) { return (double)d->nvlink_rx_bps; }
static double g_xid(const Gpuprof__Device *d) { return (double)d->xid_events; }

static const prom_gauge_t gauges[] = {
    {"gpuprof_gpu_utilization_percent", "gauge", "GPU busy time percent (NVML gpu, Sysman compute engines)",
     DF_UTIL_GPU, g_util},
    {"gpuprof_gpu_memory_utilization_percent", "gauge", "memory controller busy percent", DF_UTIL_MEM, g_mutil},
    {"gpuprof_gpu_memory_used_bytes", "gauge", "device memory in use", DF_MEM, g_used},
    {"gpuprof_gpu_memory_total_bytes", "gauge", "device memory size", DF_MEM, g_total},
    {"gpuprof_gpu_power_watts", "gauge", "board power draw", DF_POWER, g_power},
    {"gpuprof_gpu_temperature_celsius", "gauge", "GPU temperature", DF_TEMP, g_temp},
    {"gpuprof_gpu_sm_clock_hertz", "gauge", "SM clock", DF_CLOCK_SM, g_sm},
    {"gpuprof_gpu_memory_clock_hertz", "gauge", "memory clock", DF_CLOCK_MEM, g_mclk},
    {"gpuprof_gpu_pcie_tx_bytes_per_second", "gauge", "PCIe transmit throughput", DF_PCIE, g_tx},
    {"gpuprof_gpu_pcie_rx_bytes_per_second", "gauge", "PCIe receive throughput", DF_PCIE, g_rx},
    {"gpuprof_gpu_nvlink_tx_bytes_per_second", "gauge", "NVLink transmit data throughput, all links", DF_NVLINK,
     g_ntx},
    {"gpuprof_gpu_nvlink_rx_bytes_per_second", "gauge", "NVLink receive data throughput, all links", DF_NVLINK,
     g_nrx},
    {"gpuprof_gpu_xid_errors_total", "counter", "XID critical errors since gpuprofd started", DF_XID, g_xid},
};

static void proc_labels(FILE *f, const Gpuprof__Device *d, const Gpuprof__DeviceProcess *p) {
  prom_dev_labels(f, d);
  fprintf(f, ",pid=\"%d\",uid=\"", p->pid);
  if (p->uid != UINT32_MAX) fprintf(f, "%u", p->uid);
  fprintf(f, "\",job=\"");
  prom_str(f, p->job_id);
  fprintf(f, "\",exe=\"");
  prom_str(f, p->exe);
  fputs("\"}", f);
}

static void render_prometheus(FILE *f, const Gpuprof__DevicesReply *r) {
  prom_head(f, "gpuprof_devices_backend_up", "gauge", "1 when the monitoring back end works; reason says why not");
  for (size_t i = 0; i < r->n_backends; i++) {
    fprintf(f, "gpuprof_devices_backend_up{api=\"");
    prom_str(f, r->backends[i]->api);
    fprintf(f, "\",reason=\"");
    prom_str(f, r->backends[i]->reason);
    fprintf(f, "\"} %d\n", r->backends[i]->enabled ? 1 : 0);
  }
  prom_head(f, "gpuprof_devices_samples_total", "counter", "sampling rounds of gpuprofd's device monitor");
  fprintf(f, "gpuprof_devices_samples_total %llu\n", (unsigned long long)r->samples);
  for (size_t g = 0; g < sizeof gauges / sizeof gauges[0]; g++) {
    int any = 0;
    for (size_t i = 0; i < r->n_devices; i++) {
      const Gpuprof__Device *d = r->devices[i];
      if (!(d->present & gauges[g].bit)) continue;
      if (!any++) prom_head(f, gauges[g].name, gauges[g].type, gauges[g].help);
      fputs(gauges[g].name, f);
      prom_dev_labels(f, d);
      fputs("} ", f);
      prom_val(f, gauges[g].get(d));
    }
  }
  int any = 0;
  for (size_t i = 0; i < r->n_devices; i++) {
    const Gpuprof__Device *d = r->devices[i];
    if (!(d->present & DF_ECC)) continue;
    if (!any++) prom_head(f, "gpuprof_gpu_ecc_errors_total", "counter", "volatile ECC errors by type");
    for (int t = 0; t < 2; t++) {
      fputs("gpuprof_gpu_ecc_errors_total", f);
      prom_dev_labels(f, d);
      fprintf(f, ",type=\"%s\"} ", t ? "uncorrected" : "corrected");
      prom_val(f, (double)(t ? d->ecc_uncorrected : d->ecc_corrected));
    }
  }
  /* per process, then per job */
  static const char *pnames[3] = {"gpuprof_gpu_process_memory_used_bytes", "gpuprof_gpu_process_sm_utilization_percent",
                                  "gpuprof_gpu_process_memory_utilization_percent"};
  static const char *phelp[3] = {"device memory a process holds", "percent of the GPU's SMs a process kept busy",
                                 "percent of memory bandwidth a process used"};
  for (int m = 0; m < 3; m++) {
    any = 0;
    for (size_t i = 0; i < r->n_devices; i++)
      for (size_t j = 0; j < r->devices[i]->n_procs; j++) {
        const Gpuprof__DeviceProcess *p = r->devices[i]->procs[j];
        if (m == 0 ? !p->has_mem : !p->has_util) continue;
        if (!any++) prom_head(f, pnames[m], "gauge", phelp[m]);
        fputs(pnames[m], f);
        proc_labels(f, r->devices[i], p);
        fputc(' ', f);
        prom_val(f, m == 0 ? (double)p->mem_used : m == 1 ? p->sm_util : p->mem_util);
      }
  }
  static const char *jnames[3] = {"gpuprof_gpu_job_memory_used_bytes", "gpuprof_gpu_job_sm_utilization_percent",
                                  "gpuprof_gpu_job_processes"};
  static const char *jhelp[3] = {"device memory the job's processes hold", "sum of the job's processes' SM utilization",
                                 "processes of the job on the GPU"};
  for (int m = 0; m < 3; m++) {
    any = 0;
    for (size_t i = 0; i < r->n_devices; i++) {
      const Gpuprof__Device *d = r->devices[i];
      size_t n;
      jobrow_t *jr = job_rows(d, &n);
      if (!jr) continue;
      for (size_t j = 0; j < n; j++) {
        if ((m == 0 && !jr[j].has_mem) || (m == 1 && !jr[j].has_util)) continue;
        if (!any++) prom_head(f, jnames[m], "gauge", jhelp[m]);
        fputs(jnames[m], f);
        prom_dev_labels(f, d);
        fprintf(f, ",job=\"");
        prom_str(f, jr[j].job);
        fputs("\"} ", f);
        prom_val(f, m == 0 ? jr[j].mem : m == 1 ? jr[j].sm : jr[j].procs);
      }
      free(jr);
    }
  }
  any = 0;
  for (size_t i = 0; i < r->n_cpu; i++) {
    const Gpuprof__CpuCounters *c = r->cpu[i];
    for (size_t e = 0; e < c->n_events && e < c->n_values; e++) {
      if (!any++)
        prom_head(f, "gpuprof_process_papi_events_total", "counter",
                  "PAPI event count of a profiled process since gpuprofd attached (event as PAPI names it)");
      fprintf(f, "gpuprof_process_papi_events_total{pid=\"%d\",uid=\"%u\",job=\"", c->pid, c->uid);
      prom_str(f, c->job_id);
      fprintf(f, "\",profile=\"%llu\",event=\"", (unsigned long long)c->profile_id);
      prom_str(f, c->events[e]);
      fputs("\"} ", f);
      prom_val(f, (double)c->values[e]);
    }
  }
}

int gpd_cmd_devices(int argc, char **argv) {
  const char *devices_usage = gpd_cli_help(&devices_cmd);
  const char *sock = NULL, *job = NULL;
  int prom = 0, c, r, rc;
  Gpuprof__Msg *rep;
  optind = 1;
  while ((c = gpd_cli_opt_next(argc, argv, &devices_cmd, &rc)) > 0) {
    switch (c) {
    case 's': sock = optarg; break;
    case 'j': job = optarg; break;
    case 'P': prom = 1; break;
    }
  }
  if (c < 0) return rc;
  if (optind < argc) return gpd_cli_usage(devices_usage, "unexpected argument '%s'", argv[optind]);
  if ((r = devices_call(gpd_live_socket(sock), job, &rep))) return r;
  devices_mark_claimed(rep->devices);
  if (prom)
    render_prometheus(stdout, rep->devices);
  else
    render_text(stdout, rep->devices);
  gpuprof__msg__free_unpacked(rep, NULL);
  return GPD_EXIT_OK;
}

void gpd_live_devices_header(FILE *f, const char *sock) {
  Gpuprof__Msg *rep;
  char buf[512], u[32], m[32], t[32];
  gpd_live_quiet = 1; /* a daemon without device monitoring: no header */
  int r = devices_call(sock, NULL, &rep);
  gpd_live_quiet = 0;
  if (r) return;
  const Gpuprof__DevicesReply *dr = rep->devices;
  if (dr->n_devices == 0) {
    missing(buf, sizeof buf, dr, 1);
    if (buf[0])
      fprintf(f, "GPUs: none monitored (%s)\n", buf);
    else
      fprintf(f, "GPUs: none monitored\n");
  }
  for (size_t i = 0; i < dr->n_devices; i++) {
    const Gpuprof__Device *d = dr->devices[i];
    num(u, sizeof u, d->present & DF_UTIL_GPU, "%.0f%%", d->util_gpu);
    bytes_or_dash(m, sizeof m, d->present & DF_MEM, (double)d->mem_used);
    bytes_or_dash(t, sizeof t, d->present & DF_MEM, (double)d->mem_total);
    fprintf(f, "GPU %u %s (%s): util %s, memory %s / %s", d->index, d->name, d->api, u, m, t);
    if (d->present & DF_POWER) fprintf(f, ", %.0f W", d->power_w);
    if (d->present & DF_TEMP) fprintf(f, ", %.0f C", d->temp_c);
    fprintf(f, ", %zu process%s\n", d->n_procs + d->hidden_procs, d->n_procs + d->hidden_procs == 1 ? "" : "es");
  }
  gpuprof__msg__free_unpacked(rep, NULL);
}
