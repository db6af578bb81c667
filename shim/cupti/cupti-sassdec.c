/* cupti-sassdec.c - the records cuptiSassMetricsFlushData returns turned
 * into PCSAMPLE records, with a count per stage (pure: no CUPTI or shim
 * call; the caller passes the intern and push hooks).
 *
 * Why a file of its own: in the GPU validation the SASS counts vanished
 * between CUPTI and the store (records flushed, none pushed;
 * docs/VALIDATION.md) and the reason was not visible.  Every way a record
 * can be skipped here is counted (gpd_sass_stats_t), GPUPROF_SASS_DEBUG=1
 * prints the counts (cupti-sass.c), and tests/cupti/test-cupti-sassdec.c
 * checks each stage without a GPU.
 *
 * Binary ids: CUPTI's SASS records name their module by a 32-bit
 * `cubinCrc`; the CUBIN records the shim pushes (cupti-pcsampling.c) carry
 * the 64-bit value of cuptiGetCubinCrc, which PC samples use.  Whether the
 * two agree is not documented, so a record's id is mapped to a module's:
 * equal, else the one module whose low 32 bits equal it, else kept as it
 * is (the report then says the binary is unknown).
 */
#include <stddef.h>
#include <string.h>

#include <cupti_sass_metrics.h>

#include "cupti-internal.h"

int gpd_cupti_sass_crc_map(uint32_t crc, const uint64_t *known, size_t n, uint64_t *out) {
  size_t low = 0;
  uint64_t cand = 0;
  if (out == NULL)
    return -1;
  *out = crc;
  for (size_t i = 0; known && i < n; i++) {
    if (known[i] == crc)
      return 0;
    if ((uint32_t)known[i] == crc && (low == 0 || known[i] != cand)) {
      cand = known[i];
      low++;
    }
  }
  if (low == 1) {
    *out = cand;
    return 1;
  }
  return -1;
}

void gpd_cupti_sass_decode(const gpd_sass_sink_t *s, const struct CUpti_SassMetrics_Data *d, size_t n,
                           size_t inst, gpd_sass_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (s == NULL || (n && d == NULL))
    return;
  st->records = n;
  for (size_t k = 0; k < n; k++) {
    const CUpti_SassMetrics_Data *r = &d[k];
    uint64_t v = 0;
    for (size_t q = 0; r->pInstanceValues && q < inst; q++) {
      const CUpti_SassMetrics_InstanceValue *iv = &r->pInstanceValues[q];
      if (s->metric && iv->metricId != s->metric)
        st->metric_other++; /* counted anyway: one metric is configured */
      v = v + iv->value < v ? UINT64_MAX : v + iv->value;
    }
    if (r->functionName == NULL || r->functionName[0] == '\0') {
      st->noname++;
      continue;
    }
    if (v == 0) {
      st->zero++;
      continue;
    }
    st->nonzero++;
    st->sum = st->sum + v < st->sum ? UINT64_MAX : st->sum + v;
    uint64_t cubin;
    int m = gpd_cupti_sass_crc_map(r->cubinCrc, s->crcs, s->ncrcs, &cubin);
    st->crc_exact += m == 0;
    st->crc_low32 += m == 1;
    st->crc_none += m < 0;
    uint32_t func = s->intern ? s->intern(s->ud, r->functionName, GPD_STR_KERNEL) : 0;
    if (func == 0 || s->stall == 0) {
      st->nofunc++;
      continue;
    }
    /* one record per 2^32-1 executions */
    int ok = 1;
    while (v) {
      gpd_rec_pcsample_t p;
      memset(&p, 0, sizeof p);
      p.h.type = GPD_REC_PCSAMPLE;
      p.h.version = GPD_REC_VERSION;
      p.h.nslots = GPD_REC_NSLOTS(p);
      p.func = func;
      p.stall = s->stall;
      p.cubin_id = cubin;
      p.pc = r->pcOffset;
      p.device = s->device;
      p.samples = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
      v -= p.samples;
      if (s->push == NULL || s->push(s->ud, &p) < 0)
        ok = 0;
      else
        st->recs_pushed++;
    }
    if (ok)
      st->pushed++;
    else
      st->pushfail++;
  }
}
